package local

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/engine"
	"github.com/slotq/slotq/pkg/metrics"
)

// The view's summary adds up the functions' EMF lines: the same figures
// the stack publishes to CloudWatch, per queue.
func TestViewSummaryFromMetrics(t *testing.T) {
	ctx := context.Background()
	for _, asJSON := range []bool{true, false} {
		var out bytes.Buffer
		v := newView(&out, asJSON)
		log := slog.New(&tap{next: slog.DiscardHandler, view: v})
		rec := metrics.New(metrics.Options{Logger: log})
		for i := range 150 { // more than one line's worth of values
			rec.Observe(ctx, engine.Event{Kind: engine.EventStart, Queue: "q", Lateness: time.Duration(i) * time.Millisecond,
				Gap: time.Second, HasGap: true})
		}
		for _, k := range []engine.EventKind{engine.EventSucceeded, engine.EventSucceeded, engine.EventAttemptFailed, engine.EventRetry,
			engine.EventDeadLetter, engine.EventReticket, engine.EventHandBack} {
			rec.Observe(ctx, engine.Event{Kind: k, Queue: "q"})
		}
		rec.Flush(ctx)
		rec.Observe(ctx, engine.Event{Kind: engine.EventFigures, Queue: "q", Figures: &engine.Figures{Waiting: 7, Parked: 2, Lag: 1500 * time.Millisecond}})
		rec.Refused("invalid_interval")
		rec.Flush(ctx)
		out.Reset()
		v.summary()
		if !asJSON {
			for _, want := range []string{"lateness p50", "gap p50", "waiting", "lag", "1500ms"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("summary lacks %q:\n%s", want, out.String())
				}
			}
			continue
		}
		var s map[string]any
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		for k, want := range map[string]float64{
			"starts": 150, "succeeded": 2, "failed": 1, "attempt_failures": 1, "retries": 1, "reticketed": 1, "handed_back": 1,
			"lateness_p50_ms": 75, "lateness_p99_ms": 148, "lateness_max_ms": 149, "gap_p50_ms": 1000, "waiting": 7, "lag_ms": 1500,
		} {
			if s[k] != want {
				t.Errorf("summary %s = %v, want %v (%s)", k, s[k], want, out.String())
			}
		}
	}
}
