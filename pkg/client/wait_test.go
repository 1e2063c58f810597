package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// Waiting for jobs through the local runtime: a succeeded job's result
// comes back (echo answers its payload); a failed one is a *JobError
// (ErrJobFailed) with its record; a cancelled one ErrJobCancelled; a wait
// whose ctx ends returns ctx's error with the record as last read, and
// backs off meanwhile; a dead letter run again is waited for again.
func TestWait(t *testing.T) {
	c := newLocalClient(t)
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "w", Config: &api.Config{Interval: 50 * time.Millisecond, MaxAttempts: 2, Backoff: 10 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	fast := &client.WaitInput{First: 20 * time.Millisecond, Max: 100 * time.Millisecond}

	enq, out, err := c.EnqueueAndWait(ctx, &client.EnqueueInput{Queue: "w", Job: &api.Spec{ID: "report-1", Kind: "echo",
		Payload: json.RawMessage(`{"rows":3}`)}}, fast)
	if err != nil {
		t.Fatal(err)
	}
	if enq.Jobs[0].JobID != "report-1" || out.Job.Status != api.Succeeded || string(out.Job.Result) != `{"rows":3}` {
		t.Errorf("enqueue and wait: %+v, job %s with result %s; want succeeded with the payload", enq.Jobs, out.Job.Status, out.Job.Result)
	}

	_, out, err = c.EnqueueAndWait(ctx, &client.EnqueueInput{Queue: "w", Job: &api.Spec{ID: "doomed", Kind: "fail",
		Payload: json.RawMessage(`{"times":2,"error":"upstream 503"}`)}}, fast)
	var je *client.JobError
	if !errors.Is(err, client.ErrJobFailed) || !errors.As(err, &je) || je.Job.Status != api.Failed || je.Job.Attempt != 2 || out.Job.Status != api.Failed {
		t.Fatalf("waiting for a failing job: %v (%+v); want ErrJobFailed with its record at attempt 2", err, out)
	}
	if _, err := c.RetryJobs(ctx, &client.RetryJobsInput{Queue: "w", JobIDs: []string{"doomed"}}); err != nil {
		t.Fatal(err)
	}
	if out, err := c.Wait(ctx, &client.WaitInput{Queue: "w", JobID: "doomed", First: fast.First, Max: fast.Max}); err != nil || out.Job.Attempt != 3 {
		t.Errorf("waiting for the dead letter run again: %v, attempt %d; want succeeded at attempt 3", err, out.Job.Attempt)
	}

	// A paused queue: the job waits. The wait ends with its ctx, having
	// backed off: at most a read per First·1.5^k, not one per First.
	if _, err := c.PauseQueue(ctx, &client.PauseQueueInput{Queue: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "w", Job: &api.Spec{ID: "held", Kind: "echo"}}); err != nil {
		t.Fatal(err)
	}
	out, err = waitHeld(c, "w", "held")
	// 20ms growing by half: 20, 30, 45, … reach 1.5s in 10 pauses; a
	// wait without backoff would read 75 times. A loaded host, whose
	// reads take longer, reads fewer times: how many a quiet one reads is
	// BenchmarkWaitBackoff's figure.
	if !errors.Is(err, context.DeadlineExceeded) || out.Job.Status != api.Parked || out.Polls < 2 || out.Polls > 12 {
		t.Errorf("wait on a paused queue: %v, %s after %d reads; want the deadline, parked, 2 to 12 reads", err, out.Job.Status, out.Polls)
	}
	done := make(chan error, 1)
	wctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	go func() {
		_, err := c.Wait(wctx, &client.WaitInput{Queue: "w", JobID: "held", First: fast.First, Max: fast.Max})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := c.CancelJob(ctx, &client.CancelJobInput{Queue: "w", JobID: "held"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, client.ErrJobCancelled) {
		t.Errorf("waiting for a job cancelled meanwhile: %v; want ErrJobCancelled", err)
	}
	if _, err := c.Wait(ctx, &client.WaitInput{Queue: "w", JobID: "nope"}); !errors.Is(err, client.ErrJobNotFound) {
		t.Errorf("waiting for a job that does not exist: %v", err)
	}
	if _, _, err := c.EnqueueAndWait(ctx, &client.EnqueueInput{Queue: "w", Jobs: []api.Spec{{Kind: "echo"}}}, nil); err == nil {
		t.Error("EnqueueAndWait took a batch")
	}
}

// waitHeld waits 1.5s for the job id of a paused queue, reading first
// after 20ms and backing off to a read a second at most.
func waitHeld(c *client.Client, queue, id string) (*client.WaitOutput, error) {
	tctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	return c.Wait(tctx, &client.WaitInput{Queue: queue, JobID: id, First: 20 * time.Millisecond, Max: time.Second})
}

// BenchmarkWaitBackoff reports how many reads a 1.5s wait for a job of a
// paused queue makes through the local runtime (reads/wait; 5 to 12 on a
// quiet host, 75 without backoff).
func BenchmarkWaitBackoff(b *testing.B) {
	c := newLocalClient(b)
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "w", Config: &api.Config{Interval: 50 * time.Millisecond}}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.PauseQueue(ctx, &client.PauseQueueInput{Queue: "w"}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "w", Job: &api.Spec{ID: "held", Kind: "echo"}}); err != nil {
		b.Fatal(err)
	}
	reads := 0
	for b.Loop() {
		out, err := waitHeld(c, "w", "held")
		if !errors.Is(err, context.DeadlineExceeded) {
			b.Fatal(err)
		}
		reads += out.Polls
	}
	b.ReportMetric(float64(reads)/float64(b.N), "reads/wait")
}
