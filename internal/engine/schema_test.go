package engine_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// building is a State whose due index is still being built.
type building struct{ engine.State }

func (building) ListDue(context.Context, time.Time, int) ([]engine.DueEntry, error) {
	return nil, fmt.Errorf("list due: %w", engine.ErrIndexNotReady)
}

// pausedBig creates queue big on mem, pauses it and enqueues n jobs,
// which park; it returns the engine that did it.
func pausedBig(t *testing.T, mem *memstore.Store, n int) *engine.Engine {
	t.Helper()
	ctx := context.Background()
	setup := testenv.NewEngine(t, engine.Options{State: mem})
	if _, err := setup.CreateQueue(ctx, "big", slot.Config{Interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Pause(ctx, "big", time.Time{}); err != nil {
		t.Fatal(err)
	}
	enqueueN(t, setup, "big", n)
	return setup
}

// A table from before the schema mark, with one queue of more parked
// jobs than a resume run can rewrite before its deadline (6,000, at
// 10 ms a call, in runs of a minute), is rebuilt over several runs, each
// going on from the cursor the last left in the mark and each ending
// before its deadline; the due work of another queue (a timed pause that
// ends, and the jobs it held) is done by the first run, the rebuild
// notwithstanding; and each run says how far the rebuild is.
func TestRebuildOverRunsBesideDueWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memstore.New(memstore.Options{})
		const parked = 6000
		setup := pausedBig(t, mem, parked)
		parkBacklog(t, setup, []string{"other"}, 20) // paused till a second ago
		if err := mem.PutSchema(ctx, engine.Schema{}, engine.Schema{Version: engine.SchemaVersion}); err != nil {
			t.Fatal(err)
		}

		eng := testenv.NewEngine(t, engine.Options{State: slowState{State: mem, latency: 10 * time.Millisecond}})
		var jobs []int64
		for run := 1; ; run++ {
			if run > 6 {
				t.Fatalf("rebuild not over after %d runs: %v jobs rewritten after each", run-1, jobs)
			}
			rep, took, err := timedResume(ctx, eng)
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			if took >= time.Minute {
				t.Fatalf("run %d took %v, past its deadline", run, took)
			}
			if run == 1 {
				if rep.Lifted != 1 || countParked(t, mem, "other") != 0 {
					t.Fatalf("first run: %+v, %d of other's jobs parked; want its pause lifted and its jobs released", rep, countParked(t, mem, "other"))
				}
			}
			if rep.Reindex == nil {
				t.Fatalf("run %d: no reindex progress in %+v", run, rep)
			}
			p := *rep.Reindex
			jobs = append(jobs, p.Jobs)
			if run > 1 && p.Jobs <= jobs[run-2] && !p.Done {
				t.Fatalf("run %d: no progress (%v jobs rewritten after each run)", run, jobs)
			}
			if p.Done {
				t.Logf("rebuilt over %d runs: %v jobs rewritten after each", run, jobs)
				if run < 2 {
					t.Fatalf("over after %d runs (%v): the work was meant to exceed a run", run, jobs)
				}
				break
			}
			if p.Queue != "big" || p.QueuesLeft < 1 {
				t.Errorf("run %d: progress %+v; want it inside queue big", run, p)
			}
		}
		sc, err := mem.Schema(ctx)
		if err != nil || sc.Pending() || sc.Jobs < parked {
			t.Fatalf("mark after the rebuild: %+v, %v; want current, %d jobs or more rewritten", sc, err, parked)
		}
		if rep, err := eng.Resume(ctx); err != nil || rep.Upgraded != nil || rep.Reindex != nil {
			t.Errorf("a run after: %+v, %v; want no rebuild", rep, err)
		}
	})
}

// Reindex asked by hand on a current table walks it again, as far as its
// deadline allows, and answers how far it is; called again it goes on
// from there (the resume runs would too), and it is over once every
// parked job was written again.
func TestReindexByHandResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memstore.New(memstore.Options{})
		const parked = 3000
		pausedBig(t, mem, parked)
		eng := testenv.NewEngine(t, engine.Options{State: slowState{State: mem, latency: 10 * time.Millisecond}})
		var calls int
		for {
			calls++
			if calls > 5 {
				t.Fatalf("reindex not over after %d calls", calls-1)
			}
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			rep, err := eng.Reindex(rctx)
			cancel()
			if err != nil {
				t.Fatalf("call %d: %v", calls, err)
			}
			if rep.Progress.Done {
				if rep.Progress.Jobs != parked || rep.Progress.QueuesDone != 1 {
					t.Errorf("over: %+v; want %d jobs, 1 queue", rep.Progress, parked)
				}
				break
			}
			if rep.Progress.Queue != "big" || rep.Jobs == 0 {
				t.Fatalf("call %d: %+v; want progress inside queue big", calls, rep)
			}
		}
		if calls < 2 {
			t.Fatalf("over in %d call; the work was meant to exceed one", calls)
		}
	})
}

// enqueueN enqueues n jobs j0000 … on queue.
func enqueueN(t *testing.T, eng *engine.Engine, queue string, n int) {
	t.Helper()
	for first := 0; first < n; first += job.MaxBatch {
		req := job.EnqueueRequest{Queue: queue}
		for i := first; i < min(n, first+job.MaxBatch); i++ {
			req.Jobs = append(req.Jobs, job.Spec{ID: fmt.Sprintf("j%04d", i), Kind: "k"})
		}
		if _, err := eng.Enqueue(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
}

// A run on a table whose due index is still being built reads nothing of
// it and fails nothing; the rebuild takes the run.
func TestRebuildWhileIndexBuilds(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	eng := testenv.NewEngine(t, engine.Options{State: building{store}})
	const queues = 150
	for i := range queues {
		if _, err := eng.CreateQueue(ctx, fmt.Sprintf("q%03d", i), slot.Config{Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.PutSchema(ctx, engine.Schema{}, engine.Schema{Version: engine.SchemaVersion}); err != nil {
		t.Fatal(err)
	}
	rep, err := eng.Resume(ctx)
	if err != nil || !rep.IndexBuilding || rep.Upgraded == nil || rep.Upgraded.Queues != queues || rep.Reindex == nil || !rep.Reindex.Done {
		t.Fatalf("run: %+v (upgraded %+v), %v; want the %d queues rebuilt, the index building", rep, rep.Upgraded, err, queues)
	}
	if sc, _ := store.Schema(ctx); sc.Pending() || sc.Queues != queues {
		t.Fatalf("mark after the rebuild: %+v, want current after %d queues", sc, queues)
	}
	if rep, err := eng.Resume(ctx); err != nil || rep.Upgraded != nil {
		t.Errorf("next run: upgraded %+v, %v; want nothing", rep.Upgraded, err)
	}
}
