package dynamostore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// A parked backlog over several queues, on DynamoDB Local, is released by
// overlapping resume runs (two at a time, as the schedule's retry and an
// admin resume may overlap), a bounded slice per queue and run, with every
// queue moving every round and each queue's order kept.
func TestResumeBacklogOnDynamoDB(t *testing.T) {
	st := newStore(t)
	eng := testenv.NewEngine(t, engine.Options{State: st, ResumeBudget: 10})
	ctx := t.Context()
	const queues, perQueue = 4, 30
	prefix := fmt.Sprintf("rb-%d", time.Now().UnixNano())
	var names []string
	// Paused while the backlog is enqueued (however long a loaded host
	// takes), then until a moment ahead, which the resume runs lift.
	for i := range queues {
		q := fmt.Sprintf("%s-%d", prefix, i)
		names = append(names, q)
		if _, err := eng.CreateQueue(ctx, q, slot.Config{Interval: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Pause(ctx, q, time.Time{}); err != nil {
			t.Fatal(err)
		}
		req := job.EnqueueRequest{Queue: q}
		for j := range perQueue {
			req.Jobs = append(req.Jobs, job.Spec{ID: fmt.Sprintf("j%04d", j), Kind: "k"})
		}
		if _, err := eng.Enqueue(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	var until time.Time
	for _, q := range names {
		until = time.Now().Add(500 * time.Millisecond)
		if _, err := eng.Pause(ctx, q, until); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Until(until))

	parked := func(q string) int {
		// Read the jobs strongly: the index is eventually consistent.
		n := 0
		for j := range perQueue {
			got, err := st.GetJob(ctx, job.Ref{Queue: q, ID: fmt.Sprintf("j%04d", j)})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status == job.Parked {
				n++
			}
		}
		return n
	}
	left := map[string]int{}
	for _, q := range names {
		left[q] = perQueue
	}
	for round := 1; ; round++ {
		if round > 8 {
			t.Fatalf("jobs still parked after %d rounds: %v", round-1, left)
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				if _, err := eng.Resume(rctx); err != nil {
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		wg.Wait()
		total := 0
		for _, q := range names {
			n := parked(q)
			if left[q] > 0 && n == left[q] {
				t.Errorf("round %d released nothing of queue %s", round, q)
			}
			left[q] = n
			total += n
		}
		if total == 0 {
			if round < 3 {
				t.Errorf("released in %d rounds; with a budget of 10 of %d per queue, want at least 3", round, perQueue)
			}
			break
		}
	}
	for _, q := range names {
		var last int64
		for j := range perQueue {
			got, err := st.GetJob(ctx, job.Ref{Queue: q, ID: fmt.Sprintf("j%04d", j)})
			if err != nil {
				t.Fatal(err)
			}
			if got.Ticket <= last {
				t.Fatalf("queue %s: job %s has ticket %d after %d: parked order inverted", q, got.ID, got.Ticket, last)
			}
			last = got.Ticket
		}
	}
}
