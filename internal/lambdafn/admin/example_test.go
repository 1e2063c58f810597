package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/lambdafn/admin"
	"github.com/slotq/slotq/internal/memstore"
)

// The admin function's handler: create a queue, pause it, enqueue a job
// (parked, since the queue is paused) and read the job back. Here on the
// embedded backend with a fixed clock.
func ExampleHandler() {
	now := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	eng := engine.New(engine.Options{
		State: memstore.New(memstore.Options{Now: clock}), Transport: memstore.NewTransport(memstore.TransportOptions{}), Now: clock,
	})
	h := &admin.Handler{Engine: eng}
	do := func(payload string) admin.Response {
		resp, err := h.Handle(context.Background(), json.RawMessage(payload))
		if err != nil {
			panic(err)
		}
		return resp
	}
	q := do(`{"op":"create","queue":"emails","config":{"interval":"2s"}}`).Queue
	fmt.Println("created", q.Name, "interval", q.Config.Interval)
	st := do(`{"op":"pause","queue":"emails"}`).State
	fmt.Println("paused", st.Paused)
	if _, err := eng.Enqueue(context.Background(), job.EnqueueRequest{Queue: "emails", Job: &job.Spec{ID: "welcome-42", Kind: "echo"}}); err != nil {
		panic(err)
	}
	j := do(`{"op":"get","queue":"emails","job_id":"welcome-42"}`).Job
	fmt.Println(j.ID, j.Status, j.ParkReason)
	if e := do(`{"op":"get","queue":"emails","job_id":"nope"}`).Error; e != nil {
		fmt.Println(e.Code, e.Field)
	}
	// Output:
	// created emails interval 2s
	// paused true
	// welcome-42 parked paused
	// job_not_found job_id
}
