package engine_test

import (
	"context"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// printRunner is an engine.Runner that prints each job it runs.
type printRunner struct{}

func (printRunner) Run(ctx context.Context, j *job.Job, cfg slot.Config) error {
	fmt.Printf("run %s (ticket %d, attempt %d)\n", j.ID, j.Ticket, j.Attempt)
	return nil
}

// Enqueue three jobs on a queue created by its first enqueue, then work
// the first one's message as the worker function would. The engine runs
// on the embedded store and transport, with a fixed clock. An idle queue's
// first slot is the engine's Lead away (2ms by default): the time its
// worker takes to pass the gate and claim the job before the start.
func Example() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	tr := memstore.NewTransport(memstore.TransportOptions{})
	eng := engine.New(engine.Options{
		State:     memstore.New(memstore.Options{Now: func() time.Time { return now }}),
		Transport: tr,
		Now:       func() time.Time { return now },
		Runner:    printRunner{},
	})

	iv := slot.Duration(2 * time.Second)
	res, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "emails", Interval: &iv, Jobs: []job.Spec{
		{ID: "welcome-1", Kind: "email.send"}, {ID: "welcome-2", Kind: "email.send"}, {ID: "welcome-3", Kind: "email.send"},
	}})
	if err != nil {
		panic(err)
	}
	for _, a := range res.Jobs {
		fmt.Printf("%s: ticket %d, position %d, slot +%v, %s\n", a.JobID, a.Ticket, a.Position, a.SlotAt.Sub(now), a.Status)
	}

	// The first job's message is due now: a lead before its slot.
	ds, err := tr.Receive(ctx, 1, time.Second, time.Minute)
	if err != nil {
		panic(err)
	}
	if err := eng.Work(ctx, ds[0].Envelope); err != nil {
		panic(err)
	}
	j, _ := eng.Job(ctx, job.Ref{Queue: "emails", ID: "welcome-1"})
	fmt.Println(j.ID, j.Status)
	// Output:
	// welcome-1: ticket 1, position 0, slot +2ms, queued
	// welcome-2: ticket 2, position 1, slot +2.002s, queued
	// welcome-3: ticket 3, position 2, slot +4.002s, queued
	// run welcome-1 (ticket 1, attempt 1)
	// welcome-1 succeeded
}
