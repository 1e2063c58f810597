package dynamostore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// passLog records the gate's passes and the limits each passed under: a
// pass under the old limits landed before the configure's atomic step (the
// gate refuses a caller whose limits are not the queue's).
type passLog struct {
	engine.State
	mu     sync.Mutex
	passes map[int64]string // ticket → signature of its last pass
}

func (p *passLog) Gate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	st, err := p.State.Gate(ctx, r)
	if err == nil {
		p.mu.Lock()
		p.passes[r.Ticket] = r.LimitList().Signature()
		p.mu.Unlock()
	}
	return st, err
}

// Admit is the gate of a booked start: a pass under the limits the
// queue had when it was read (a gate's write after it, if the engine
// went on to one, records its own).
func (p *passLog) Admit(ctx context.Context, r engine.AdmitRequest) (engine.Queue, error) {
	q, err := p.State.Admit(ctx, r)
	if err == nil {
		p.mu.Lock()
		p.passes[r.Ticket] = q.Config.LimitList().Signature()
		p.mu.Unlock()
	}
	return q, err
}

// §5.16 (a) on DynamoDB Local, with real concurrency: eight workers,
// duplicate deliveries and the resume function every 200 ms work a
// backlog under a rate; a configure to a slower interval lands midway.
// The reserved starts (the gate's, each job's started_at) before the
// change and the first after it keep the old rate; the starts after it,
// with the ones before that the new interval holds, keep the new one; the
// parked jobs' records show their new slots; every job succeeds.
func TestReslotOnDynamoDB(t *testing.T) {
	ctx := t.Context()
	sim := newLocalSim(t, memstore.TransportOptions{VisibilityTimeout: 2 * time.Second, DuplicateRate: 0.2, Seed: 9, MaxDelay: time.Second})
	log, tr := &passLog{State: sim.store, passes: map[int64]string{}}, sim.tr
	var mu sync.Mutex
	var runs []job.Job
	runner := runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
		mu.Lock()
		runs = append(runs, *j)
		mu.Unlock()
		return nil
	})
	eng := testenv.NewEngine(t, engine.Options{State: log, Transport: tr, Runner: runner, NoAutoCreate: true,
		Lease: 5 * time.Second, RecordGrace: time.Second, Lead: 100 * time.Millisecond})
	old := slot.Config{Rate: api.Rate{N: 10, Per: time.Second}, Burst: 2, Skew: 20 * time.Millisecond, MaxAttempts: 5}
	next := slot.Config{Interval: 250 * time.Millisecond, Skew: 20 * time.Millisecond, MaxAttempts: 5}
	const queue, total = "reslot", 40
	if _, err := eng.CreateQueue(ctx, queue, old); err != nil {
		t.Fatal(err)
	}
	specs := make([]job.Spec, total)
	for i := range specs {
		specs[i] = job.Spec{ID: fmt.Sprintf("j%02d", i), Kind: "sim"}
	}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: queue, Jobs: specs}); err != nil {
		t.Fatal(err)
	}
	var workErrs []string
	sim.work(8, eng, func(env job.Envelope, err error) {
		mu.Lock()
		workErrs = append(workErrs, fmt.Sprintf("%s: %v", env.JobID, err))
		mu.Unlock()
	})
	sim.resumeEvery(200*time.Millisecond, eng, nil)
	testenv.WaitFor(t, "5 jobs started", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) >= 5
	})
	_, rep, err := eng.Reconfigure(ctx, queue, next)
	if err != nil {
		t.Fatalf("configure: %v", err)
	}
	t.Logf("configure moved %d booked jobs, at most %d ms", rep.Moved, rep.MaxShiftMs)
	if rep.Moved == 0 {
		t.Fatal("configure moved no booked job; the backlog reaches past the transport's reach")
	}
	get := func(i int) job.Job {
		j, err := log.GetJob(ctx, job.Ref{Queue: queue, ID: fmt.Sprintf("j%02d", i)})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		return j
	}
	defer func() {
		if t.Failed() {
			q, err := eng.Queue(ctx, queue)
			t.Logf("queue %+v %v; transport holds %d: %+v", q.State, err, tr.Pending(), tr.Stats())
			mu.Lock()
			t.Logf("work errors: %v", workErrs)
			mu.Unlock()
			for i := range total {
				if j := get(i); j.Status != job.Succeeded {
					t.Logf("%s: %s %s ticket %d slot %v due %v history %+v", j.ID, j.Status, j.ParkReason, j.Ticket, j.SlotAt, j.DueAt, j.History)
				}
			}
		}
	}()
	testenv.WaitFor(t, fmt.Sprintf("%d jobs succeeded", total), func() bool {
		for i := range total {
			if get(i).Status != job.Succeeded {
				return false
			}
		}
		return true
	})
	oldSig := old.LimitList().Signature()
	var before, after []time.Time
	seen := map[string]bool{}
	for i := range total {
		j := get(i)
		if seen[j.ID] {
			continue
		}
		seen[j.ID] = true
		log.mu.Lock()
		sig := log.passes[j.Ticket]
		log.mu.Unlock()
		if sig == oldSig {
			before = append(before, j.StartedAt)
		} else {
			after = append(after, j.StartedAt)
		}
	}
	slices.SortFunc(before, time.Time.Compare)
	slices.SortFunc(after, time.Time.Compare)
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("%d starts before the change, %d after", len(before), len(after))
	}
	if b := slot.Breaches(old.LimitList(), old.Skew, append(slices.Clone(before), after[0])); len(b) > 0 {
		t.Fatalf("the old limit breaks across the change: %+v", b[0])
	}
	last := before[len(before)-1]
	var held []time.Time
	for _, s := range before {
		if s.After(last.Add(-next.Interval)) {
			held = append(held, s)
		}
	}
	for _, b := range slot.Breaches(next.LimitList(), next.Skew, append(held, after...)) {
		if b.J >= len(held) {
			t.Fatalf("the new limit breaks across the change: %+v (%d held before)", b, len(held))
		}
	}
}
