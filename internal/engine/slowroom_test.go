package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// A target that answers each job's first attempt "slow down" on a
// bounded queue: the answered job, queued again with a slot, is counted
// by the bounds (it goes through the waiting room again), so at no
// moment do more jobs hold a slot than book_ahead and key_book_ahead
// allow; every job runs once to success, and nobody is held for an
// answered ticket after its wait.
func TestSlowDownOnBoundedQueueKeepsBounds(t *testing.T) {
	cases := []struct {
		name string
		cfg  slot.Config
		keys []string
	}{
		{"keyless", slot.Config{Interval: 5 * time.Millisecond, BookAhead: 2}, []string{""}},
		{"keys without cap", slot.Config{Interval: 5 * time.Millisecond, BookAhead: 3, KeyBookAhead: 2, KeyMaxRunning: slot.NoKeyCap, KeyLimits: []api.Limit{{Interval: 3 * time.Millisecond}}}, []string{"A", "B"}},
		{"keys one at a time", slot.Config{Interval: 5 * time.Millisecond, BookAhead: 2, KeyBookAhead: 1}, []string{"A", "B", "C"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRoomSim(t, simOptions{Workers: 3, Seed: 7}, "slowed", c.cfg, 0)
				defer r.stop()
				var mu sync.Mutex
				answered, runs := map[string]bool{}, map[string]int{}
				var first, last time.Time
				r.mux.HandleFunc("slowed", func(ctx context.Context, j *api.Job) error {
					mu.Lock()
					defer mu.Unlock()
					if first.IsZero() {
						first = time.Now()
					}
					last = time.Now()
					if !answered[j.ID] {
						answered[j.ID] = true
						return target.RetryAfter(20 * time.Millisecond)
					}
					runs[j.ID]++
					return nil
				})
				req := job.EnqueueRequest{Queue: "slowed"}
				for range 6 {
					for _, k := range c.keys {
						req.Jobs = append(req.Jobs, job.Spec{Kind: "slowed", Key: k})
					}
				}
				if _, err := r.eng.Enqueue(context.Background(), req); err != nil {
					t.Fatal(err)
				}
				r.waitFinished("slowed", time.Minute)
				r.verify(0)
				mu.Lock()
				defer mu.Unlock()
				// Nobody waits for an answered ticket after its wait (it
				// was booked again): 18 slow-downs of 20ms, not a hold of
				// a second (or a lease) each.
				if span := last.Sub(first); span > time.Second {
					t.Errorf("the calls took %v, want well under a second", span)
				}
				if len(runs) != len(req.Jobs) {
					t.Fatalf("%d jobs succeeded, want %d", len(runs), len(req.Jobs))
				}
				for id, n := range runs {
					if n != 1 {
						t.Errorf("job %s succeeded %d times", id, n)
					}
				}
			})
		})
	}
}
