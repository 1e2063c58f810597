package metrics_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/metrics"
)

// A function that logs only warnings or errors still writes its metrics:
// the lines do not depend on the logger's level.
func TestFlushWhateverTheLevel(t *testing.T) {
	for _, lvl := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		t.Run(lvl.String(), func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: lvl}))
			rec := metrics.New(metrics.Options{Namespace: "slotq/test", Logger: log, Dimension: metrics.DefaultDimension})
			rec.Accepted("q", 2)
			rec.Flush(context.Background())
			if !strings.Contains(buf.String(), `"msg":"metrics"`) || !strings.Contains(buf.String(), `"level":"INFO"`) {
				t.Fatalf("no INFO metrics line at logger level %s:\n%s", lvl, buf.String())
			}
			lines := decode(t, buf.Bytes())
			if got := values(lines, metrics.DefaultDimension, "q", metrics.JobsAccepted); len(got) != 1 || got[0] != 2 {
				t.Errorf("JobsAccepted %v, want [2]", got)
			}
		})
	}
}
