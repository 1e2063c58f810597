package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
)

// The embedded transport delivers each message after its delay, as SQS
// does; a message received and not deleted comes back after its
// visibility timeout.
func ExampleTransport() {
	ctx := context.Background()
	tr := memstore.NewTransport(memstore.TransportOptions{})
	err := tr.Send(ctx, []engine.Message{
		{Envelope: job.Envelope{Queue: "emails", JobID: "later", Ticket: 2}, Delay: 50 * time.Millisecond},
		{Envelope: job.Envelope{Queue: "emails", JobID: "now", Ticket: 1}},
	})
	if err != nil {
		panic(err)
	}
	for range 2 {
		ds, err := tr.Receive(ctx, 10, time.Second, time.Minute)
		if err != nil {
			panic(err)
		}
		for _, d := range ds {
			fmt.Println(d.Envelope.JobID, "receive", d.ReceiveCount)
			_ = tr.Delete(ctx, d.ReceiptHandle)
		}
	}
	fmt.Println("pending", tr.Pending())
	// Output:
	// now receive 1
	// later receive 1
	// pending 0
}

// The embedded state store, which the engine uses for local runs and
// tests: every change is a compare-and-set on the job's version, and a
// status change job.CanMove does not list is refused.
func ExampleStore() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	j := job.Job{Queue: "emails", ID: "welcome-42", Kind: "echo", Status: job.Queued, Ticket: 1, Attempt: 1}
	if _, err := st.CreateJobs(ctx, []job.Job{j}); err != nil {
		panic(err)
	}
	running := j
	running.Status = job.Running
	fmt.Println(st.UpdateJob(ctx, running, j.Version()))
	fmt.Println(st.UpdateJob(ctx, running, j.Version())) // the same claim again
	done := running
	done.Status = job.Cancelled
	fmt.Println(st.UpdateJob(ctx, done, running.Version()))
	// Output:
	// <nil>
	// update job emails/welcome-42: job changed concurrently
	// update job emails/welcome-42: illegal status change: running to cancelled
}
