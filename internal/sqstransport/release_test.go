package sqstransport_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/internal/sqstransport"
)

// The resume function releases far-parked jobs through this transport in
// SendMessageBatch calls of 10, many at once; SQS fails some entries of a
// call (on its side, every try of the first run) and accepts the others.
// The jobs of failed entries stay parked and due, and the next run sends
// them; the others are queued at once. Every job ends queued, sent
// (accepted) exactly once.
func TestResumeReleasesThroughPartialBatchFailures(t *testing.T) {
	ctx := t.Context()
	var failing atomic.Bool
	failing.Store(true)
	var mu sync.Mutex
	accepted := map[string]int{}
	fake := &fakeSQS{send: func(_ int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		out := &sqs.SendMessageBatchOutput{}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range in.Entries {
			a := e.MessageAttributes
			k := aws.ToString(a[sqstransport.AttrQueue].StringValue) + "/" + aws.ToString(a[sqstransport.AttrJobID].StringValue)
			var n int
			fmt.Sscanf(aws.ToString(a[sqstransport.AttrJobID].StringValue), "j%d", &n)
			if failing.Load() && n%7 == 3 {
				out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("injected")})
				continue
			}
			accepted[k]++
			out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + k)})
		}
		return out, nil
	}}
	tr := sqstransport.New(fake, "https://sqs.test/1/q", sqstransport.Options{SendAttempts: 2, RetryBackoff: time.Millisecond})
	var shift atomic.Int64
	mem := memstore.New(memstore.Options{})
	eng := testenv.NewEngine(t, engine.Options{State: mem, Transport: tr, Now: func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }})

	const queues, perQueue, interval = 3, 200, 10 * time.Millisecond
	t0 := time.Now().Add(20 * time.Minute)
	for q := range queues {
		name := fmt.Sprintf("q%d", q)
		if _, err := eng.CreateQueue(ctx, name, slot.Config{Interval: interval}); err != nil {
			t.Fatal(err)
		}
		for first := 0; first < perQueue; first += job.MaxBatch {
			req := job.EnqueueRequest{Queue: name}
			for i := first; i < min(perQueue, first+job.MaxBatch); i++ {
				nb := t0.Add(time.Duration(i) * interval)
				req.Jobs = append(req.Jobs, job.Spec{ID: fmt.Sprintf("j%04d", i), Kind: "k", NotBefore: &nb})
			}
			if _, err := eng.Enqueue(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	shift.Store(int64(5*time.Minute + perQueue*interval)) // every job due

	now := func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	count := func() (queued, due int) {
		_, jobs := mem.Contents()
		for _, j := range jobs {
			switch at := engine.JobDue(j); {
			case j.Status == job.Queued:
				queued++
			case !at.IsZero() && !at.After(now()):
				due++
			}
		}
		return queued, due
	}
	rep, err := eng.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queued, due := count()
	// j%7 == 3: 29 of each queue's 200.
	if wantDue := queues * 29; due != wantDue || queued != queues*perQueue-wantDue || rep.Released != queued {
		t.Fatalf("first run: %+v; %d queued, %d parked and due; want %d due and the rest queued", rep, queued, due, wantDue)
	}
	for _, ids := range fake.calls {
		if len(ids) > sqstransport.MaxBatch {
			t.Fatalf("a SendMessageBatch of %d entries", len(ids))
		}
	}
	failing.Store(false)
	if rep, err = eng.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if queued, due = count(); queued != queues*perQueue || due != 0 {
		t.Fatalf("second run: %+v; %d of %d queued, %d due", rep, queued, queues*perQueue, due)
	}
	mu.Lock()
	defer mu.Unlock()
	for q := range queues {
		for i := range perQueue {
			if k := fmt.Sprintf("q%d/j%04d", q, i); accepted[k] != 1 {
				t.Fatalf("job %s accepted by SQS %d times, want once", k, accepted[k])
			}
		}
	}
}
