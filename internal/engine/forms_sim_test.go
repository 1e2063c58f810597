package engine_test

import (
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// §5.3 Spacing in every form, and §5.4 Single start: the simulation of
// TestGuaranteeSpacingAndSingleStart (many workers, delivery jitter,
// duplicates, crashes between gate, claim, run and record) on a queue
// under a rate with a burst, a window, and both at once. The starts break
// none of the queue's limits (slot.Breaches, the skew the one
// allowance), no attempt begins twice, no line job starts before its slot
// (a clean run re-tickets none), and every job succeeds.
func TestGuaranteeSpacingEveryForm(t *testing.T) {
	forms := []simForm{
		{"rate", slot.Config{Rate: api.Rate{N: 2, Per: time.Second}, Burst: 3}},
		{"window", slot.Config{Window: api.Rate{N: 4, Per: 2 * time.Second}}},
		{"rate and window", slot.Config{Limits: []api.Limit{
			{Rate: api.Rate{N: 4, Per: time.Second}, Burst: 2},
			{Window: api.Rate{N: 10, Per: 5 * time.Second}},
		}}},
	}
	eachRun(t, forms, faultRuns(12, 16, 3*time.Second, 0.05, 5, nil), func(t *testing.T, s *sim, cfg slot.Config, r simRun) {
		cfg.Skew, cfg.MaxAttempts = 100*time.Millisecond, 10
		s.createQueue("formed", cfg)
		var mu sync.Mutex
		scheduled := map[string]bool{} // out of line: no ticket order
		produceSteadily(func(p, c int) {
			var mod func(int, *job.Spec)
			if (p+c)%3 == 0 {
				// Scheduled jobs, due together a few seconds
				// out: only the gate spaces them.
				due := time.Now().Add(time.Duration(2+(p*c)%5) * time.Second)
				mod = func(_ int, sp *job.Spec) { sp.NotBefore = &due }
			}
			res := s.enqueue("formed", 1+(p*c)%4, mod)
			mu.Lock()
			for _, a := range res.Jobs {
				scheduled[a.JobID] = scheduled[a.JobID] || mod != nil
			}
			mu.Unlock()
		})
		s.waitFinished("formed", 6*time.Hour)
		starts := s.startsOf("formed")
		checkLimits(t, cfg.LimitList(), cfg.Skew, starts)
		checkSingleStart(t, starts)
		checkSlotOrder(t, starts, scheduled)
		if r.clean() {
			if js := s.jobs("formed", job.Succeeded); reticketed(js) > 0 {
				t.Fatalf("a clean run re-ticketed %d times: the tickets of one moment start in any order, on time; first: %+v", reticketed(js), firstReticketed(js))
			}
		}
		s.checkNoneFailed("formed")
	})
}
