package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// batchCall is one call of a batch handler: when it came and its jobs.
type batchCall struct {
	At   time.Time
	IDs  []string
	Slot time.Time
}

// batchCalls registers kind "simb" on s's mux, a batch handler that
// records each call (and, as the sim's handler does, each job's start)
// and fails the attempts s.failFor names; it returns the calls so far.
func batchCalls(s *sim) func() []batchCall {
	var calls []batchCall
	s.mux.HandleBatchFunc("simb", func(ctx context.Context, jobs []*api.Job) []error {
		c := batchCall{At: time.Now(), Slot: jobs[0].SlotAt}
		errs := make([]error, len(jobs))
		for i, j := range jobs {
			c.IDs = append(c.IDs, j.ID)
			if s.recordStart(j, c.At) {
				errs[i] = fmt.Errorf("attempt %d of %s fails on purpose", j.Attempt, j.ID)
			}
		}
		s.mu.Lock()
		calls = append(calls, c)
		s.mu.Unlock()
		return errs
	})
	return func() []batchCall {
		s.mu.Lock()
		defer s.mu.Unlock()
		return append([]batchCall(nil), calls...)
	}
}

// 1,000 jobs enqueued over one second on a queue of rate 10/1s with
// batch_max 100 start in 10 batches, one call each, spaced by the rate,
// each job once; with duplicates, jitter and crashes between a batch's
// start and its jobs' outcomes, every job still succeeds, none runs
// twice in a run that succeeded, and the starts keep the rate.
func TestBatchesStartAsOne(t *testing.T) {
	rate := slot.Config{Rate: api.Rate{N: 10, Per: time.Second}, BatchMax: 100, BatchWait: 100 * time.Millisecond}
	runs := faultRuns(8, 16, 5*time.Millisecond, 0.02, 59, nil)
	eachRun(t, nil, runs, func(t *testing.T, s *sim, _ slot.Config, r simRun) {
		calls := batchCalls(s)
		s.createQueue("b", rate)
		for range 100 {
			s.enqueue("b", 10, func(_ int, sp *job.Spec) { sp.Kind = "simb" })
			if err := clock.Sleep(context.Background(), 10*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		s.waitFinished("b", time.Hour)
		s.checkNoneFailed("b")
		done := s.jobs("b", job.Succeeded)
		if len(done) != 1000 {
			t.Fatalf("%d jobs succeeded, want 1000", len(done))
		}
		// The batch's starts (its calls' gates) keep the rate: one
		// start a call, whatever the jobs it carries.
		var starts []start
		ran := map[string]int{}
		for _, c := range calls() {
			starts = append(starts, start{Queue: "b", At: c.At})
			for _, id := range c.IDs {
				ran[id]++
			}
		}
		checkLimits(t, rate.WithDefaults().LimitList(), rate.WithDefaults().Skew, starts)
		for _, j := range done {
			if ran[j.ID] == 0 {
				t.Fatalf("job %s succeeded without a call", j.ID)
			}
		}
		if !r.clean() {
			return
		}
		if n := len(calls()); n != 10 {
			t.Fatalf("%d calls, want 10 batches of 100", n)
		}
		for i, c := range calls() {
			if len(c.IDs) != 100 {
				t.Errorf("call %d carried %d jobs, want 100", i, len(c.IDs))
			}
		}
		for id, n := range ran {
			if n != 1 {
				t.Fatalf("job %s ran %d times in a clean run", id, n)
			}
		}
	})
}

// A job failed in a batch is retried alone, as it would be without
// batches: its retry joins a later batch, and the rest of its batch is
// not run again.
func TestBatchJobFailsAlone(t *testing.T) {
	inSim(t, simOptions{Workers: 4}, func(t *testing.T, s *sim) {
		calls := batchCalls(s)
		s.createQueue("b", slot.Config{Interval: 100 * time.Millisecond, BatchMax: 10, BatchWait: 50 * time.Millisecond})
		res := s.enqueue("b", 10, func(_ int, sp *job.Spec) { sp.Kind = "simb" })
		failing := res.Jobs[3].JobID
		s.mu.Lock()
		s.failFor[failing] = 1
		s.mu.Unlock()
		s.waitFinished("b", time.Hour)
		got := calls()
		if len(got) != 2 || len(got[0].IDs) != 10 || len(got[1].IDs) != 1 || got[1].IDs[0] != failing {
			t.Fatalf("calls %+v; want the batch of 10, then the failed job's retry alone", got)
		}
		var rec json.RawMessage
		for _, j := range s.jobs("b", job.Succeeded) {
			if j.ID == failing {
				rec, _ = json.Marshal(j.Attempt)
			}
		}
		if string(rec) != "2" {
			t.Fatalf("the failed job's record: attempt %s, want 2", rec)
		}
	})
}
