package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// TestRetryConcurrent: on DynamoDB Local, with real concurrency, 24 dead
// letters are run again by 6 callers at once — four naming them one by
// one in their own orders, two paging through the failed jobs. Each job is run again exactly once: one answer
// lists it, its record counts one rerun, and its rerun's attempt starts
// once; no two jobs share a ticket.
func TestRetryConcurrent(t *testing.T) {
	ctx := t.Context()
	sim := newLocalSim(t, memstore.TransportOptions{VisibilityTimeout: time.Second, DuplicateRate: 0.2, Seed: 3})
	st, tr := sim.store, sim.tr
	var mu sync.Mutex
	started := map[string]int{} // id#attempt → starts
	runner := runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
		mu.Lock()
		started[fmt.Sprintf("%s#%d", j.ID, j.Attempt)]++
		mu.Unlock()
		if j.Attempt == 1 {
			return errors.New("fails on purpose")
		}
		return nil
	})
	// A losing retry's message waits RecordGrace for a record that never
	// comes: keep it short.
	eng := testenv.NewEngine(t, engine.Options{State: st, Transport: tr, Runner: runner, NoAutoCreate: true, Lease: 5 * time.Second, RecordGrace: time.Second})
	const queue, n = "rtr", 24
	// A skew a loaded host's worker keeps within: with 5ms of a 20ms
	// interval, workers woken late by busy CPUs missed slot after slot
	// (thousands of new tickets) and the reruns did not end.
	if _, err := eng.CreateQueue(ctx, queue, slot.Config{Interval: 100 * time.Millisecond, Skew: 75 * time.Millisecond, MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	sim.work(6, eng, nil)
	ids := make([]string, n)
	req := job.EnqueueRequest{Queue: queue}
	for i := range ids {
		ids[i] = fmt.Sprintf("r%02d", i)
		req.Jobs = append(req.Jobs, job.Spec{ID: ids[i], Kind: "sim"})
	}
	if _, err := eng.Enqueue(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitAll := func(want job.Status) {
		t.Helper()
		var left []string // the jobs not yet there, as last read
		defer func() {
			if t.Failed() {
				t.Logf("not %s: %v", want, left)
			}
		}()
		testenv.WaitFor(t, fmt.Sprintf("%d jobs %s", n, want), func() bool {
			left = left[:0]
			for _, id := range ids {
				j, err := st.GetJob(ctx, job.Ref{Queue: queue, ID: id})
				if err != nil || j.Status != want {
					left = append(left, fmt.Sprintf("%s %s (attempt %d, ticket %d, reruns %d)", id, j.Status, j.Attempt, j.Ticket, j.Reruns))
				}
			}
			return len(left) == 0
		})
	}
	waitAll(job.Failed)

	answered := map[string]int{}
	var wg sync.WaitGroup
	note := func(res engine.RetryResult) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range res.Jobs {
			answered[a.JobID]++
		}
	}
	for c := range 4 {
		wg.Go(func() {
			order := append([]string(nil), ids...)
			rand.New(rand.NewPCG(uint64(c), 9)).Shuffle(len(order), func(i, k int) { order[i], order[k] = order[k], order[i] })
			for _, id := range order {
				res, err := eng.Retry(ctx, engine.RetryRequest{Queue: queue, IDs: []string{id}, By: fmt.Sprintf("caller%d", c)})
				if err != nil && !errors.Is(err, engine.ErrNotRetryable) {
					t.Errorf("retry %s: %v", id, err)
				}
				note(res)
			}
		})
	}
	for c := range 2 {
		wg.Go(func() {
			var after, upTo int64
			for {
				res, err := eng.Retry(ctx, engine.RetryRequest{Queue: queue, Failed: true, After: after, UpTo: upTo, Limit: 5, By: fmt.Sprintf("pager%d", c)})
				if err != nil {
					t.Errorf("retry failed: %v", err)
					return
				}
				note(res)
				if res.NextAfter == 0 {
					return
				}
				after, upTo = res.NextAfter, res.UpTo
			}
		})
	}
	wg.Wait()
	waitAll(job.Succeeded)
	// Late duplicates: every message sent (duplicates and a losing
	// retry's included) handled, so none can start a job after the count.
	testenv.WaitFor(t, "every message handled", func() bool { return tr.Pending() == 0 })

	tickets := map[int64]string{}
	for _, id := range ids {
		j, err := st.GetJob(ctx, job.Ref{Queue: queue, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		ans, runs := answered[id], started[id+"#2"]
		mu.Unlock()
		if ans != 1 || j.Reruns != 1 {
			t.Errorf("%s: in %d retry answers, %d reruns recorded; want 1 and 1", id, ans, j.Reruns)
		}
		if j.Status != job.Succeeded || runs != 1 {
			t.Errorf("%s: %s, its rerun started %d times; want succeeded, once", id, j.Status, runs)
		}
		if other, dup := tickets[j.Ticket]; dup {
			t.Errorf("%s and %s share ticket %d", id, other, j.Ticket)
		}
		tickets[j.Ticket] = id
	}
}
