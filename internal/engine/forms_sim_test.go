package engine_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
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
	forms := []struct {
		name string
		cfg  slot.Config
	}{
		{"rate", slot.Config{Rate: api.Rate{N: 2, Per: time.Second}, Burst: 3}},
		{"window", slot.Config{Window: api.Rate{N: 4, Per: 2 * time.Second}}},
		{"rate and window", slot.Config{Limits: []api.Limit{
			{Rate: api.Rate{N: 4, Per: time.Second}, Burst: 2},
			{Window: api.Rate{N: 10, Per: 5 * time.Second}},
		}}},
	}
	runs := []struct {
		name string
		opts simOptions
	}{
		{"clean", simOptions{Workers: 12}},
		{"jitter and duplicates", simOptions{Workers: 16, Transport: memstore.TransportOptions{Jitter: 3 * time.Second, DuplicateRate: 0.3}}},
		{"crashes, jitter and duplicates", simOptions{Workers: 16, CrashRate: 0.05, Seed: 5,
			Transport: memstore.TransportOptions{Jitter: 3 * time.Second, DuplicateRate: 0.3}}},
	}
	for _, f := range forms {
		for _, r := range runs {
			t.Run(f.name+"/"+r.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := newSim(t, r.opts)
					defer s.stop()
					cfg := f.cfg
					cfg.Skew, cfg.MaxAttempts = 100*time.Millisecond, 10
					s.createQueue("formed", cfg)
					var wg sync.WaitGroup
					var mu sync.Mutex
					scheduled := map[string]bool{} // out of line: no ticket order
					for p := range 10 {
						wg.Go(func() {
							for c := range 5 {
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
								time.Sleep(time.Duration(p*37+c*11) * time.Millisecond)
							}
						})
					}
					wg.Wait()
					s.waitFinished("formed", 6*time.Hour)
					starts := s.startsOf("formed")
					if len(starts) == 0 {
						t.Fatal("nothing started")
					}
					at := make([]time.Time, len(starts))
					for i, st := range starts {
						at[i] = st.At
					}
					if b := slot.Breaches(cfg.LimitList(), cfg.Skew, at); len(b) > 0 {
						t.Fatalf("%d breaches of %v among %d starts; first: starts %d and %d %v too close",
							len(b), cfg.LimitList(), len(starts), b[0].I, b[0].J, b[0].By)
					}
					checkSingleStart(t, starts)
					checkSlotOrder(t, starts, scheduled)
					if r.name == "clean" {
						if js := s.jobs("formed", job.Succeeded); reticketed(js) > 0 {
							t.Fatalf("a clean run re-ticketed %d times: the tickets of one moment start in any order, on time; first: %+v", reticketed(js), firstReticketed(js))
						}
					}
					if failed := s.jobs("formed", job.Failed); len(failed) > 0 {
						t.Fatalf("%d jobs failed; first: %+v", len(failed), failed[0])
					}
				})
			})
		}
	}
}
