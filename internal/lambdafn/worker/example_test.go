package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/lambdafn/worker"
)

// workFunc adapts a function to worker.Worker (the engine, in the stack).
type workFunc func(ctx context.Context, env job.Envelope) error

func (f workFunc) Work(ctx context.Context, env job.Envelope) error { return f(ctx, env) }

// The worker function's handler: an SQS batch in, each message worked in
// slot order, and the partial batch response out, naming exactly the
// messages whose work failed so that SQS delivers only those again.
func ExampleHandler() {
	slotAt := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	h := &worker.Handler{
		Engine: workFunc(func(ctx context.Context, env job.Envelope) error {
			fmt.Println("work", env.JobID)
			if env.JobID == "b" {
				return errors.New("DynamoDB unavailable")
			}
			return nil
		}),
		Log: slog.New(slog.DiscardHandler),
	}
	var ev events.SQSEvent
	for i, id := range []string{"b", "a"} {
		body, _ := json.Marshal(job.Envelope{V: 1, Queue: "emails", JobID: id, Ticket: int64(2 - i), SlotAt: slotAt.Add(time.Duration(1-i) * time.Second), Attempt: 1, Kind: "echo"})
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: "msg-" + id, Body: string(body)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the invocation's deadline
	defer cancel()
	resp, _ := h.Handle(ctx, ev)
	b, _ := json.Marshal(resp)
	fmt.Println(string(b))
	// Output:
	// work a
	// work b
	// {"batchItemFailures":[{"itemIdentifier":"msg-b"}]}
}

// The stack's built-in kinds, to which a worker of your own adds its
// handlers (pkg/worker does this for you).
func ExampleKinds() {
	mux := worker.Kinds(slog.New(slog.DiscardHandler))
	fmt.Println(mux.Has(worker.Echo))
	// Output:
	// true
}
