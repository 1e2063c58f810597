package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
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

// A job answered "slow down" in a batch is handled as it would be alone:
// the queue waits until the answer's time, the job starts first after
// it (alone: it left its batch), and the batch's other jobs succeed at
// their start.
func TestBatchJobSlowsDownAlone(t *testing.T) {
	inSim(t, simOptions{Workers: 4}, func(t *testing.T, s *sim) {
		var calls []batchCall
		var slowed string
		s.mux.HandleBatchFunc("simb", func(ctx context.Context, jobs []*api.Job) []error {
			c := batchCall{At: time.Now()}
			errs := make([]error, len(jobs))
			for i, j := range jobs {
				c.IDs = append(c.IDs, j.ID)
				if i == 2 && slowed == "" {
					slowed = j.ID
					errs[i] = target.RetryAfter(3 * time.Second)
				}
			}
			calls = append(calls, c)
			return errs
		})
		s.createQueue("b", slot.Config{Interval: 100 * time.Millisecond, BatchMax: 5, BatchWait: 50 * time.Millisecond})
		s.enqueue("b", 15, func(_ int, sp *job.Spec) { sp.Kind = "simb" })
		s.waitFinished("b", time.Hour)
		s.checkNoneFailed("b")
		if len(calls) < 2 || len(calls[0].IDs) != 5 {
			t.Fatalf("calls %+v; want the first batch of 5, then more", calls)
		}
		var after []batchCall
		for _, c := range calls[1:] {
			if !c.At.Before(calls[0].At.Add(3 * time.Second)) {
				after = append(after, c)
			} else {
				t.Errorf("a call at %v, during the slow-down that ends at %v", c.At, calls[0].At.Add(3*time.Second))
			}
		}
		if len(after) == 0 || len(after[0].IDs) != 1 || after[0].IDs[0] != slowed {
			t.Fatalf("after the slow-down, calls %+v; want the answered job %s first, alone", after, slowed)
		}
		for _, j := range s.jobs("b", job.Succeeded) {
			if j.ID == slowed && (j.Attempt != 1 || j.SlowDowns != 1) {
				t.Errorf("the answered job: attempt %d, slow_downs %d; want 1 and 1", j.Attempt, j.SlowDowns)
			}
		}
	})
}

// missList is a State whose ListBatch misses one job of each batch, as
// DynamoDB's index may miss a record written just before.
type missList struct {
	engine.State
	missed map[string]bool
}

func (m *missList) ListBatch(ctx context.Context, b engine.BatchRef, limit int) ([]job.Job, error) {
	jobs, err := m.State.ListBatch(ctx, b, limit)
	if err != nil || len(jobs) == 0 {
		return jobs, err
	}
	m.missed[jobs[0].ID] = true
	return jobs[1:], nil
}

// A job its batch's leader missed takes a new ticket when its watch
// comes, and starts once, in a later start: it never starts beside its
// batch.
func TestBatchMissedJobTakesNewTicket(t *testing.T) {
	miss := &missList{missed: map[string]bool{}}
	o := simOptions{Workers: 4, Wrap: func(st engine.State) engine.State { miss.State = st; return miss }}
	inSim(t, o, func(t *testing.T, s *sim) {
		calls := batchCalls(s)
		s.createQueue("b", slot.Config{Interval: 100 * time.Millisecond, BatchMax: 10, BatchWait: 50 * time.Millisecond})
		s.enqueue("b", 10, func(_ int, sp *job.Spec) { sp.Kind = "simb" })
		s.waitFinished("b", time.Hour)
		s.checkNoneFailed("b")
		got := calls()
		if len(miss.missed) != 1 || len(got) != 2 || len(got[0].IDs) != 9 || len(got[1].IDs) != 1 || !miss.missed[got[1].IDs[0]] {
			t.Fatalf("missed %v, calls %+v; want 9 in the batch, then the missed job alone", miss.missed, got)
		}
		if gap := got[1].At.Sub(got[0].At); gap < time.Second {
			t.Errorf("the missed job started %v after its batch, before its watch", gap)
		}
		for _, j := range s.jobs("b", job.Succeeded) {
			if miss.missed[j.ID] && j.Retickets != 1 {
				t.Errorf("the missed job took %d new tickets, want 1", j.Retickets)
			}
		}
	})
}

// A batch whose outcomes were all lost (its worker died after the call)
// runs again when its jobs' leases end, as any lost attempt: every job
// ends succeeded, none more than twice.
func TestBatchLostOutcomesRetried(t *testing.T) {
	inSim(t, simOptions{Workers: 4, Lease: time.Minute}, func(t *testing.T, s *sim) {
		calls := batchCalls(s)
		s.createQueue("b", slot.Config{Interval: 100 * time.Millisecond, BatchMax: 5, BatchWait: 50 * time.Millisecond})
		res := s.enqueue("b", 5, func(_ int, sp *job.Spec) { sp.Kind = "simb" })
		for _, a := range res.Jobs {
			s.chaos.failNext(a.JobID)
		}
		s.waitFinished("b", time.Hour)
		s.checkNoneFailed("b")
		ran := map[string]int{}
		for _, c := range calls() {
			for _, id := range c.IDs {
				ran[id]++
			}
		}
		for _, a := range res.Jobs {
			if n := ran[a.JobID]; n != 2 {
				t.Errorf("job %s ran %d times, want 2 (its first outcome lost)", a.JobID, n)
			}
		}
	})
}
