package worker_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
	"github.com/slotq/slotq/pkg/worker"
)

// A worker function of your own: register Go handlers by job kind and
// start. Deploy it as the stack's WorkerFunction (examples/acme).
func ExampleStart() {
	mux := target.NewMux()
	mux.HandleFunc("email.send", func(ctx context.Context, j *api.Job) error {
		// send the email in j.Payload; an error retries the job
		return nil
	})
	worker.Start(mux) // serves the function's invocations; never returns
}

// NewHandler checks the environment first: a worker deployed without the
// stack's variables says which one is missing.
func ExampleNewHandler() {
	env := map[string]string{"SLOTQ_TABLE": "acme-jobs-Table", "SLOTQ_WORKER_TIMEOUT": "120"}
	_, err := worker.NewHandler(context.Background(), target.NewMux(), worker.Options{
		Logger: slog.New(slog.DiscardHandler),
		Getenv: func(k string) string { return env[k] },
	})
	fmt.Println(err)
	// Output:
	// SLOTQ_QUEUE_URL must be the SQS queue URL, got ""
}
