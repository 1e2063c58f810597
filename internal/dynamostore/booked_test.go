package dynamostore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

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
	store := dynamostore.New(client, newTable(t, client), dynamostore.Options{})
	st := &gateCount{State: store}
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
	plain := enqueue(4, 5, func(p, i int) job.Spec { return job.Spec{ID: fmt.Sprintf("p%d-%d", p, i), Kind: "sim"} })
	done(plain)
	// A start on time passes by a read: a gate's write comes only after
	// a worker that came late (its job's history says slot_missed: a host
	// loaded enough to starve DynamoDB Local), which may turn the queue
	// gated for the rest.
	late := 0
	for _, id := range plain {
		j, err := st.GetJob(ctx, job.Ref{Queue: queue, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(j.History, func(ev job.Event) bool { return ev.Kind == job.SlotMissed }) {
			late++
		}
	}
	gates, admits := st.counts()
	t.Logf("%d single jobs: %d admitted by a read, %d gate writes, %d late workers", len(plain), admits, gates, late)
	if late == 0 && gates > 0 || admits < len(plain)/2 {
		t.Errorf("%d gate writes and %d reads for %d starts, %d of them after a late worker: a booked start on time passes by a read", gates, admits, len(plain), late)
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

// gateCount counts the gate's writes and the gates of booked starts.
type gateCount struct {
	engine.State
	mu            sync.Mutex
	gates, admits int
}

func (g *gateCount) Gate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	g.mu.Lock()
	g.gates++
	g.mu.Unlock()
	return g.State.Gate(ctx, r)
}

func (g *gateCount) Admit(ctx context.Context, r engine.AdmitRequest) (engine.Queue, error) {
	q, err := g.State.Admit(ctx, r)
	if err == nil {
		g.mu.Lock()
		g.admits++
		g.mu.Unlock()
	}
	return q, err
}

func (g *gateCount) counts() (gates, admits int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gates, g.admits
}
