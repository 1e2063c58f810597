package lambdafn

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/metrics"
)

// SLOTQ_LOG_LEVEL drops the functions' records below it, but not the
// metrics' lines: with LogLevel WARN the dashboard and alarms still get
// their figures.
func TestLogLevelKeepsMetrics(t *testing.T) {
	lvl, err := logLevel("WARN")
	if err != nil || lvl == nil {
		t.Fatalf("logLevel(WARN) = %v, %v", lvl, err)
	}
	var buf bytes.Buffer
	log := slog.New(minLevel{Handler: slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), level: *lvl}).With("function", "worker")
	log.Info("started job")
	log.Warn("handed back")
	rec := metrics.New(metrics.Options{Logger: log})
	rec.Accepted("q", 1)
	rec.Flush(context.Background())

	out := buf.String()
	if strings.Contains(out, "started job") {
		t.Errorf("an INFO record passed SLOTQ_LOG_LEVEL=WARN:\n%s", out)
	}
	if !strings.Contains(out, "handed back") {
		t.Errorf("the WARN record was dropped:\n%s", out)
	}
	if !strings.Contains(out, `"msg":"metrics"`) || !strings.Contains(out, `"function":"worker"`) {
		t.Errorf("no metrics line (with the logger's attributes):\n%s", out)
	}
}

func TestLogLevelValues(t *testing.T) {
	for _, s := range []string{"DEBUG", "INFO", "WARN", "ERROR", ""} {
		if _, err := Load(Spec{Function: "x", Vars: []string{EnvLogLevel}}, func(string) string { return s }); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	_, err := Load(Spec{Function: "x", Vars: []string{EnvLogLevel}}, func(string) string { return "warn" })
	if err == nil || !strings.Contains(err.Error(), EnvLogLevel) {
		t.Errorf("lower-case warn: %v, want an error naming %s", err, EnvLogLevel)
	}
}
