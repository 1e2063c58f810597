package dynamostore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// Booked starts on DynamoDB Local, with real concurrency: four producers
// enqueue single jobs at once on a queue under a rate, eight workers take
// their deliveries (duplicates among them), and every start on time
// passes by a read: the queue's state item takes one write per enqueue
// call and none per start. Then scheduled jobs cut in: the queue turns
// gated (their takes, and their gates), and the limit holds across the
// turn for every start, read or written, at the reserved starts.
func TestBookedStartsOnDynamoDB(t *testing.T) {
	ctx := t.Context()
	client := newClient(t, nil, fastRetries)
	m := awsmeter.NewDynamoDB(client)
	st := dynamostore.New(m, newTable(t, client), dynamostore.Options{})
	var mu sync.Mutex
	ran := map[string]int{}
	runner := runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
		mu.Lock()
		ran[j.ID]++
		mu.Unlock()
		return nil
	})
	tr := memstore.NewTransport(memstore.TransportOptions{VisibilityTimeout: 5 * time.Second, DuplicateRate: 0.2, Seed: 4})
	eng := testenv.NewEngine(t, engine.Options{State: st, Transport: tr, Runner: runner, NoAutoCreate: true, Lead: 400 * time.Millisecond})
	cfg := slot.Config{Rate: api.Rate{N: 8, Per: time.Second}, Burst: 2, Skew: 50 * time.Millisecond}
	const queue = "booked"
	if _, err := eng.CreateQueue(ctx, queue, cfg); err != nil {
		t.Fatal(err)
	}
	testenv.RunWorkers(t, tr, 8, eng)
	enqueue := func(producers, each int, spec func(p, i int) job.Spec) []string {
		var wg sync.WaitGroup
		var ids []string
		for p := range producers {
			wg.Go(func() {
				for i := range each {
					sp := spec(p, i)
					if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: queue, Job: &sp}); err != nil {
						t.Error(err)
					}
					mu.Lock()
					ids = append(ids, sp.ID)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return ids
	}
	done := func(ids []string) {
		testenv.WaitFor(t, fmt.Sprintf("%d jobs to succeed", len(ids)), func() bool {
			for _, id := range ids {
				if j, err := st.GetJob(ctx, job.Ref{Queue: queue, ID: id}); err != nil || j.Status != job.Succeeded {
					return false
				}
			}
			return true
		})
	}
	before := m.Counts()
	plain := enqueue(4, 5, func(p, i int) job.Spec { return job.Spec{ID: fmt.Sprintf("p%d-%d", p, i), Kind: "sim"} })
	done(plain)
	writes := m.Counts()["UpdateItem state"].Calls - before["UpdateItem state"].Calls
	calls := int64(len(plain))
	// Each take is one write, and a refused one another: concurrent
	// producers may refuse each other's forms now and then.
	if writes < calls || writes > calls+calls/2 {
		t.Errorf("%d writes of the queue's state for %d single-job enqueues and their starts, want about one a take and none a start", writes, calls)
	}
	// Scheduled jobs, due together in a second, cut in.
	due := time.Now().Add(time.Second)
	cut := enqueue(2, 2, func(p, i int) job.Spec {
		return job.Spec{ID: fmt.Sprintf("s%d-%d", p, i), Kind: "sim", NotBefore: &due}
	})
	more := enqueue(4, 3, func(p, i int) job.Spec { return job.Spec{ID: fmt.Sprintf("q%d-%d", p, i), Kind: "sim"} })
	all := slices.Concat(plain, cut, more)
	done(all)
	var starts []time.Time
	for _, id := range all {
		j, err := st.GetJob(ctx, job.Ref{Queue: queue, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, j.StartedAt)
	}
	slices.SortFunc(starts, time.Time.Compare)
	if b := slot.Breaches(cfg.LimitList(), cfg.Skew, starts); len(b) > 0 {
		t.Fatalf("%d breaches of %v among %d starts, booked and cut in; first: %+v", len(b), cfg.LimitList(), len(starts), b[0])
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range all {
		if ran[id] != 1 {
			t.Errorf("job %s ran %d times, want once", id, ran[id])
		}
	}
}
