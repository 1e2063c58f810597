package target_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// Register Go handlers by job kind, and test them by running jobs of
// your making through the Mux, as the worker does. A handler's error
// retries the job; SkipRetry fails it now, as does a kind without a
// handler.
func ExampleMux() {
	mux := target.NewMux()
	mux.HandleFunc("email.send", func(ctx context.Context, j *api.Job) error {
		var msg struct{ To string }
		if err := json.Unmarshal(j.Payload, &msg); err != nil || msg.To == "" {
			return target.SkipRetry(errors.New("no recipient"))
		}
		fmt.Println("sending to", msg.To)
		return nil
	})
	ctx := context.Background()
	for _, j := range []*api.Job{
		{ID: "a", Kind: "email.send", Payload: json.RawMessage(`{"to":"ada@example.com"}`)},
		{ID: "b", Kind: "email.send", Payload: json.RawMessage(`{}`)},
		{ID: "c", Kind: "sms.send"},
	} {
		err := mux.Run(ctx, j)
		fmt.Printf("%s: %v (retry: %v)\n", j.ID, err, err != nil && !errors.Is(err, target.ErrSkipRetry))
	}
	// Output:
	// sending to ada@example.com
	// a: <nil> (retry: false)
	// b: skip retry: no recipient (retry: false)
	// c: skip retry: no handler for kind "sms.send" (retry: false)
}

// A handler whose API answers "too many requests" slows its queue down
// instead of failing: the engine holds the queue's starts for the time
// asked, then runs this job again first.
func ExampleRetryAfter() {
	mux := target.NewMux()
	mux.HandleFunc("report.fetch", func(ctx context.Context, j *api.Job) error {
		// Say the partner's API answered 429 with Retry-After: 30.
		return target.RetryAfter(30 * time.Second)
	})
	err := mux.Run(context.Background(), &api.Job{ID: "a", Kind: "report.fetch"})
	var ra *target.RetryAfterError
	if errors.As(err, &ra) {
		fmt.Println("slow down for", ra.Wait)
	}
	// Output:
	// slow down for 30s
}

// A kind whose API takes many records a request gets the jobs that start
// together (a queue's batch_max) in one call, and answers per job: here
// one bulk request for the batch, a record the API refused failing its
// job for good, and each job's result kept on its own record.
func ExampleMux_HandleBatch() {
	mux := target.NewMux()
	mux.HandleBatchFunc("search.index", func(ctx context.Context, jobs []*api.Job) []error {
		errs := make([]error, len(jobs))
		for i, j := range jobs {
			// Say the bulk API refused the record without a title.
			if string(j.Payload) == `{}` {
				errs[i] = target.SkipRetry(errors.New("no title"))
				continue
			}
			_ = target.SetBatchResult(ctx, i, map[string]int{"version": i + 1})
		}
		fmt.Println("one bulk request of", len(jobs), "records")
		return errs
	})
	jobs := []*api.Job{
		{ID: "a", Kind: "search.index", Payload: json.RawMessage(`{"title":"Ada"}`)},
		{ID: "b", Kind: "search.index", Payload: json.RawMessage(`{}`)},
		{ID: "c", Kind: "search.index", Payload: json.RawMessage(`{"title":"Grace"}`)},
	}
	for i, err := range mux.RunBatch(context.Background(), jobs) {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s: %v %s", jobs[i].ID, err, jobs[i].Result)))
	}
	// Output:
	// one bulk request of 3 records
	// a: <nil> {"version":1}
	// b: skip retry: no title
	// c: <nil> {"version":3}
}
