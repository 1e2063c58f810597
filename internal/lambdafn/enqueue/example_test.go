package enqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/lambdafn/enqueue"
	"github.com/slotq/slotq/internal/memstore"
)

// The enqueue function's handler: an Invoke payload in, each job's ticket,
// slot and position out; bad input is an error object naming the field,
// and nothing is written. Here on the embedded backend with a fixed clock.
func ExampleHandler() {
	now := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	h := &enqueue.Handler{Engine: engine.New(engine.Options{
		State: memstore.New(memstore.Options{Now: clock}), Transport: memstore.NewTransport(memstore.TransportOptions{}), Now: clock,
	})}
	for _, payload := range []string{
		`{"queue":"emails","job":{"id":"welcome-42","kind":"echo","payload":{"to":"ada@example.com"}}}`,
		`{"queue":"emails","job":{"kind":"echo","not_before":"tomorrow"}}`,
	} {
		resp, err := h.Handle(context.Background(), json.RawMessage(payload))
		if err != nil {
			panic(err) // a function error: DynamoDB or SQS unavailable
		}
		b, _ := json.Marshal(resp)
		fmt.Println(string(b))
	}
	// Output:
	// {"queue":"emails","jobs":[{"job_id":"welcome-42","ticket":1,"slot_at":"2026-11-21T14:00:00.002Z","position":0,"status":"queued"}]}
	// {"error":{"code":"invalid_time","field":"job.not_before","message":"\"tomorrow\" is not an RFC 3339 time with an offset, such as \"2026-11-21T14:00:00Z\""}}
}
