package enqueue

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/slotq/slotq/internal/metrics"
)

// Each call writes its EMF line: new jobs accepted by queue (a repeated
// id is not new), a refused request by its code.
func TestHandleWritesMetrics(t *testing.T) {
	h, _ := newHandler()
	var logs bytes.Buffer
	h.Metrics = metrics.New(metrics.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	ctx := context.Background()
	for _, name := range []string{"enqueue.json", "enqueue.json", "enqueue-bad.json"} {
		if _, err := h.Handle(ctx, event(t, name)); err != nil {
			t.Fatal(err)
		}
	}
	var accepted, refused float64
	for _, l := range bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		if m["_aws"] == nil {
			t.Errorf("not an EMF line: %s", l)
		}
		if n, ok := m[metrics.JobsAccepted].(float64); ok {
			accepted += n
		}
		if n, ok := m[metrics.JobsRefused].(float64); ok && m[metrics.CodeDimension] == "invalid_interval" {
			refused += n
		}
	}
	if accepted != 1 || refused != 1 {
		t.Errorf("accepted %v, refused %v; want 1 (the job once) and 1:\n%s", accepted, refused, logs.String())
	}
}
