package resume_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/lambdafn/resume"
	"github.com/slotq/slotq/internal/memstore"
)

// The resume function's handler, as the schedule invokes it: a job asked
// for an hour from now is parked (beyond the transport's 15 minutes), and
// the first run after it comes within reach releases it.
func ExampleHandler() {
	start := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }
	tr := memstore.NewTransport(memstore.TransportOptions{})
	eng := engine.New(engine.Options{State: memstore.New(memstore.Options{Now: clock}), Transport: tr, Now: clock})
	h := &resume.Handler{Engine: eng, Log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()

	later := start.Add(time.Hour)
	res, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "reports", Job: &job.Spec{ID: "daily", Kind: "echo", NotBefore: &later}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Jobs[0].JobID, res.Jobs[0].Status)

	schedule := json.RawMessage(`{"source":"slotq.schedule","action":"resume"}`)
	for _, at := range []time.Duration{time.Minute, 50 * time.Minute} {
		now = start.Add(at)
		rep, err := h.Handle(ctx, schedule)
		if err != nil {
			panic(err)
		}
		j, _ := eng.Job(ctx, job.Ref{Queue: "reports", ID: "daily"})
		fmt.Printf("+%v: released %d, %s is %s\n", at, rep.Released, j.ID, j.Status)
	}
	// Output:
	// daily parked
	// +1m0s: released 0, daily is parked
	// +50m0s: released 1, daily is queued
}
