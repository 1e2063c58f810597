package workload

import (
	"bytes"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/cli/clikit"
)

// The lanes workload, small: every job runs once and succeeds, per key
// the runs neither overlap nor leave ticket order, and max_running holds.
func TestRunLanes(t *testing.T) {
	for _, maxRunning := range []int{0, 2} {
		cfg := LanesConfig{Queue: "lanes-test", Keys: 4, Jobs: 5, MinRun: 1, MaxRun: 3, Batch: 7, Workers: 8,
			Interval: 5 * time.Millisecond, MaxRunning: maxRunning, Seed: 3}
		res, err := runLanes(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := newLanesReport(cfg, res)
		var stderr bytes.Buffer
		if code := r.verdict(&stderr, "run"); code != clikit.ExitOK {
			t.Errorf("max_running %d: exit %d: %s", maxRunning, code, stderr.String())
		}
		if len(res.Runs) != 20 || res.Enqueued != 20 || res.Succeeded != 20 || r.PerKey != 1 {
			t.Errorf("max_running %d: %d runs of %d jobs, %d succeeded, %d of a key at once; want 20, 20, 20, 1",
				maxRunning, len(res.Runs), res.Enqueued, res.Succeeded, r.PerKey)
		}
		if maxRunning > 0 && r.Concurrent > maxRunning {
			t.Errorf("%d runs at once under max_running %d", r.Concurrent, maxRunning)
		}
		if r.Ideal < 19*cfg.Interval || r.Makespan < r.Ideal {
			t.Errorf("makespan %v, ideal %v", r.Makespan, r.Ideal)
		}
	}
}

// The report finds what it must: runs of a key that overlap, that leave
// ticket order or acceptance order, and the most at once.
func TestLanesReport(t *testing.T) {
	base := time.Date(2025, 6, 1, 14, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	run := func(key string, ticket int64, accepted, begin, end int) laneRun {
		return laneRun{Key: key, Ticket: ticket, Accepted: accepted, SlotAt: at(begin), Gate: at(begin), Begin: at(begin), End: at(end)}
	}
	tests := []struct {
		name                                  string
		runs                                  []laneRun
		overlaps, order, reordered, perKey, n int
	}{
		{"one after another", []laneRun{run("a", 1, 0, 0, 10), run("a", 2, 1, 10, 20), run("b", 3, 2, 20, 30)}, 0, 0, 0, 1, 1},
		{"keys at once", []laneRun{run("a", 1, 0, 0, 30), run("b", 2, 1, 10, 40), run("a", 3, 2, 30, 50)}, 0, 0, 0, 1, 2},
		{"overlap", []laneRun{run("a", 1, 0, 0, 30), run("a", 2, 1, 20, 40)}, 1, 0, 0, 2, 2},
		{"ticket order", []laneRun{run("a", 2, 1, 0, 10), run("a", 1, 0, 20, 30)}, 0, 1, 1, 1, 1},
		{"re-ticketed", []laneRun{run("a", 1, 0, 0, 10), run("a", 3, 2, 20, 30), run("a", 9, 1, 40, 50)}, 0, 0, 1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLanesReport(LanesConfig{Interval: 10 * time.Millisecond}, lanesResult{Runs: tt.runs, Enqueued: len(tt.runs)})
			if r.Overlaps != tt.overlaps || r.OrderViolations != tt.order || r.Reordered != tt.reordered ||
				r.PerKey != tt.perKey || r.Concurrent != tt.n {
				t.Errorf("overlaps %d, order %d, reordered %d, per key %d, at once %d; want %d, %d, %d, %d, %d",
					r.Overlaps, r.OrderViolations, r.Reordered, r.PerKey, r.Concurrent, tt.overlaps, tt.order, tt.reordered, tt.perKey, tt.n)
			}
			var stderr bytes.Buffer
			if code := r.verdict(&stderr, "run"); (code != clikit.ExitOK) != (tt.overlaps+tt.order > 0) {
				t.Errorf("verdict %d: %s", code, stderr.String())
			}
		})
	}
}
