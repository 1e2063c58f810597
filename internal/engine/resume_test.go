package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// slowState makes every call of the resume path take latency, as a
// network round trip does, so that a run's deadline and the interleaving
// of two runs matter.
type slowState struct {
	engine.State
	latency time.Duration
}

func (s slowState) wait(ctx context.Context) error { return clock.Sleep(ctx, s.latency) }

// timedResume is one resume run with the deadline the schedule gives it,
// a minute, and how long it took.
func timedResume(ctx context.Context, eng *engine.Engine) (engine.ResumeReport, time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	began := time.Now()
	rep, err := eng.Resume(rctx)
	return rep, time.Since(began), err
}

func (s slowState) ListQueues(ctx context.Context) ([]engine.Queue, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.State.ListQueues(ctx)
}

func (s slowState) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	if err := s.wait(ctx); err != nil {
		return engine.Queue{}, err
	}
	return s.State.GetQueue(ctx, name)
}

func (s slowState) Unpause(ctx context.Context, name string, ifUntil time.Time) (bool, error) {
	if err := s.wait(ctx); err != nil {
		return false, err
	}
	return s.State.Unpause(ctx, name, ifUntil)
}

func (s slowState) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	if err := s.wait(ctx); err != nil {
		return engine.Taken{}, err
	}
	return s.State.Take(ctx, r)
}

func (s slowState) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.State.UpdateJob(ctx, j, from)
}

func (s slowState) ListJobs(ctx context.Context, r engine.ListRequest) ([]job.Job, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.State.ListJobs(ctx, r)
}

func (s slowState) Lease(ctx context.Context, queue, holder string, until, now time.Time) (engine.Cursor, error) {
	if err := s.wait(ctx); err != nil {
		return engine.Cursor{}, err
	}
	return s.State.Lease(ctx, queue, holder, until, now)
}

func (s slowState) ReleaseLease(ctx context.Context, queue, holder string, c engine.Cursor) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.State.ReleaseLease(ctx, queue, holder, c)
}

// parkBacklog creates queues named names, each paused until a second from
// now with n jobs enqueued meanwhile (so parked, in ticket order j0000,
// j0001, …), and waits for the pause's end.
func parkBacklog(t *testing.T, eng *engine.Engine, names []string, n int) {
	t.Helper()
	ctx := context.Background()
	for _, q := range names {
		if _, err := eng.CreateQueue(ctx, q, slot.Config{Interval: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Pause(ctx, q, time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		for first := 0; first < n; first += job.MaxBatch {
			req := job.EnqueueRequest{Queue: q}
			for i := first; i < min(n, first+job.MaxBatch); i++ {
				req.Jobs = append(req.Jobs, job.Spec{ID: fmt.Sprintf("j%04d", i), Kind: "k"})
			}
			if _, err := eng.Enqueue(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(time.Second)
}

// checkParkedOrder fails unless the jobs of queue hold tickets in the
// order they were enqueued (§5.6: parked jobs keep their relative order).
func checkParkedOrder(t *testing.T, st engine.State, queue string, n int) {
	t.Helper()
	var last int64
	for i := range n {
		j, err := st.GetJob(context.Background(), job.Ref{Queue: queue, ID: fmt.Sprintf("j%04d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if j.Ticket <= last {
			t.Fatalf("queue %s: job %s has ticket %d after ticket %d: parked order inverted", queue, j.ID, j.Ticket, last)
		}
		last = j.Ticket
	}
}

func countParked(t *testing.T, st engine.State, queue string) int {
	t.Helper()
	q, err := st.GetQueue(context.Background(), queue)
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.CountJobs(context.Background(), queue, q.Gen, job.Parked)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Two resume runs that overlap (the schedule's retry, an admin resume)
// never interleave on a queue: the parked jobs keep their order.
func TestResumeOverlappingRunsKeepParkedOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New(memstore.Options{})
		st := slowState{State: mem, latency: 5 * time.Millisecond}
		eng := testenv.NewEngine(t, engine.Options{State: st})
		const n = 300
		parkBacklog(t, eng, []string{"overlap"}, n)

		for round := 0; countParked(t, mem, "overlap") > 0; round++ {
			if round == 5 {
				t.Fatalf("%d jobs still parked after %d rounds", countParked(t, mem, "overlap"), round)
			}
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					if _, err := eng.Resume(context.Background()); err != nil {
						t.Errorf("resume: %v", err)
					}
				})
			}
			wg.Wait()
			time.Sleep(time.Minute)
		}
		checkParkedOrder(t, mem, "overlap", n)
	})
}

// A backlog of 10,000 parked jobs over 50 queues, on a store where every
// call takes 10 ms, is released over several runs: no run outlives its
// 60 s timeout, every run moves every queue that still has parked jobs
// (none starves, whatever its place in name order), and each queue keeps
// its order.
func TestResumeBacklogAcrossQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memstore.New(memstore.Options{})
		st := slowState{State: mem, latency: 10 * time.Millisecond}
		eng := testenv.NewEngine(t, engine.Options{State: st, ResumeBudget: 50})
		const queues, perQueue = 50, 200
		var names []string
		for i := range queues {
			names = append(names, fmt.Sprintf("q%02d", i))
		}
		// Enqueue without the latency: it is the resume runs being timed.
		parkBacklog(t, testenv.NewEngine(t, engine.Options{State: mem}), names, perQueue)

		left := map[string]int{}
		total := 0
		for _, q := range names {
			left[q] = countParked(t, mem, q)
			total += left[q]
		}
		if total != queues*perQueue {
			t.Fatalf("%d parked jobs, want %d", total, queues*perQueue)
		}
		runs := 0
		for total > 0 {
			if runs == 10 {
				t.Fatalf("%d jobs still parked after %d runs", total, runs)
			}
			runs++
			rep, took, err := timedResume(context.Background(), eng)
			if err != nil {
				t.Fatalf("run %d: %v (report %+v)", runs, err, rep)
			}
			if took >= time.Minute {
				t.Fatalf("run %d took %v", runs, took)
			}
			var starved []string
			total = 0
			for _, q := range names {
				n := countParked(t, mem, q)
				if left[q] > 0 && n == left[q] {
					starved = append(starved, q)
				}
				left[q] = n
				total += n
			}
			if len(starved) > 0 {
				t.Fatalf("run %d (report %+v) released nothing of %v", runs, rep, starved)
			}
			time.Sleep(time.Minute - took) // the next run a minute after this one began
		}
		t.Logf("released %d jobs in %d runs", queues*perQueue, runs)
		if runs < 4 {
			t.Errorf("released in %d runs; with a budget of 50 per queue and run, want at least 4", runs)
		}
		for _, q := range names {
			checkParkedOrder(t, mem, q, perQueue)
		}
		if slices.ContainsFunc(names, func(q string) bool { return left[q] != 0 }) {
			t.Errorf("parked jobs left: %v", left)
		}
	})
}
