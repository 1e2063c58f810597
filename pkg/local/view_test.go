package local

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/metrics"
)

// metricsView is a view that writes to out, and a metrics recorder whose
// EMF lines it reads, as slotq local's functions' lines.
func metricsView(asJSON bool) (out *bytes.Buffer, v *view, rec *metrics.Recorder) {
	out = new(bytes.Buffer)
	v = newView(out, asJSON)
	return out, v, metrics.New(metrics.Options{Logger: slog.New(&tap{next: slog.DiscardHandler, view: v})})
}

// The view's summary adds up the functions' EMF lines: the same figures
// the stack publishes to CloudWatch, per queue.
func TestViewSummaryFromMetrics(t *testing.T) {
	ctx := context.Background()
	for _, asJSON := range []bool{true, false} {
		out, v, rec := metricsView(asJSON)
		for i := range 150 { // more than one line's worth of values
			rec.Observe(ctx, engine.Event{Kind: engine.EventStarted, Queue: "q", Lateness: time.Duration(i) * time.Millisecond,
				Gap: time.Second, HasGap: true})
		}
		for _, k := range []engine.EventKind{engine.EventSucceeded, engine.EventSucceeded, engine.EventAttemptFailed, engine.EventRetried,
			engine.EventFailed, engine.EventReticketed, engine.EventHandedBack} {
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

// A queue with lanes (docs/guarantees.md §12): the live figures line and the
// summary show the attempts running under max_running and the keys waited
// for, as resume's last lane figures give them; figures are not added up.
func TestViewLaneFigures(t *testing.T) {
	ctx := context.Background()
	figures := []engine.Figures{
		{Waiting: 9, Parked: 5, Lanes: engine.LaneFigures{Running: 2, KeysHeld: 3, KeysWaiting: 2, WaitingOnKeys: 4, WaitingForPlace: 1}},
		{Waiting: 6, Parked: 3, Lanes: engine.LaneFigures{Running: 1, KeysHeld: 3, KeysWaiting: 2, WaitingOnKeys: 3}},
	}
	for _, asJSON := range []bool{false, true} {
		out, v, rec := metricsView(asJSON)
		for _, f := range figures {
			rec.Observe(ctx, engine.Event{Kind: engine.EventFigures, Queue: "capped", Figures: &f})
			rec.Flush(ctx)
		}
		rec.Observe(ctx, engine.Event{Kind: engine.EventFigures, Queue: "keyed",
			Figures: &engine.Figures{Waiting: 2, Lanes: engine.LaneFigures{Running: -1, KeysHeld: 1, KeysWaiting: 1, WaitingOnKeys: 2}}})
		rec.Observe(ctx, engine.Event{Kind: engine.EventFigures, Queue: "plain", Figures: &engine.Figures{Waiting: 1, Lanes: engine.LaneFigures{Running: -1}}})
		rec.Flush(ctx)
		live := out.String()
		out.Reset()
		v.summary()
		if !asJSON {
			for _, want := range []string{
				"waiting 9, parked 5, lag 0ms, running 2, keys held 3, keys waiting 2 (4 jobs), waiting for a place 1\n",
				"waiting 6, parked 3, lag 0ms, running 1, keys held 3, keys waiting 2 (3 jobs), waiting for a place 0\n",
				"keyed          waiting 2, parked 0, lag 0ms, keys held 1, keys waiting 1 (2 jobs)\n",
				"plain          waiting 1, parked 0, lag 0ms\n",
			} {
				if !strings.Contains(live, want) {
					t.Errorf("live view lacks %q:\n%s", want, live)
				}
			}
			lines := map[string]string{}
			for _, l := range strings.Split(out.String(), "\n") {
				if f := strings.Fields(l); len(f) > 2 {
					lines[f[0]] = strings.Join(f[len(f)-3:], " ")
				}
			}
			// The last columns: lag, running, keys waiting.
			for q, want := range map[string]string{"queue": "running keys waiting", "capped": "0ms 1 2", "keyed": "0ms - 1", "plain": "0ms - 0"} {
				if lines[q] != want {
					t.Errorf("summary of %s ends %q, want %q:\n%s", q, lines[q], want, out.String())
				}
			}
			continue
		}
		var figs []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(live), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%v: %s", err, l)
			}
			if m["event"] == "figures" && m["queue"] == "capped" {
				figs = append(figs, m)
			}
		}
		if len(figs) != 2 || figs[1]["running"] != 1.0 || figs[1]["waiting_on_keys"] != 3.0 || figs[0]["waiting_for_place"] != 1.0 {
			t.Errorf("figures lines %v", figs)
		}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var s map[string]any
			if err := json.Unmarshal([]byte(l), &s); err != nil {
				t.Fatalf("%v: %s", err, l)
			}
			want := map[string]map[string]float64{
				"capped": {"running": 1, "keys_held": 3, "keys_waiting": 2, "waiting_on_keys": 3, "waiting_for_place": 0},
				"keyed":  {"running": -1, "keys_held": 1, "keys_waiting": 1, "waiting_on_keys": 2, "waiting_for_place": 0},
				"plain":  {"running": -1, "keys_held": 0, "keys_waiting": 0, "waiting_on_keys": 0, "waiting_for_place": 0},
			}[s["queue"].(string)]
			for k, w := range want {
				if s[k] != w {
					t.Errorf("summary of %s: %s = %v, want %v", s["queue"], k, s[k], w)
				}
			}
		}
	}
}

// TestSummaryLateness: the summary prints a start's lateness as the
// tables do (4.5ms, not 4ms or 5ms), and its JSON the exact figure.
func TestSummaryLateness(t *testing.T) {
	ctx := context.Background()
	for _, asJSON := range []bool{false, true} {
		out, v, rec := metricsView(asJSON)
		rec.Observe(ctx, engine.Event{Kind: engine.EventStarted, Queue: "q", Lateness: 4500 * time.Microsecond})
		rec.Flush(ctx)
		out.Reset()
		v.summary()
		if want := "4.5ms"; !asJSON && !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
		if want := `"lateness_p50_ms":4.5`; asJSON && !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %s:\n%s", want, out.String())
		}
	}
}
