package sqstransport_test

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/dev/motoserver"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/internal/sqstransport"
)

// Redrive on moto: messages SQS moved to the dead-letter queue by its
// redrive policy (received MaxReceiveCount times and never deleted) go
// back to the slot queue when their job still waits for them; a finished
// job's and a stale one's are dropped; a body that is no envelope stays in
// the dead-letter queue. The job redriven then runs, once.
func TestMotoRedrive(t *testing.T) {
	motoserver.Require(t)
	ctx := t.Context()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	name := fmt.Sprintf("%.50s-%d", regexp.MustCompile(`[^A-Za-z0-9_-]`).ReplaceAllString(t.Name(), "-"), queueSeq.Add(1))
	url, dlqURL, err := sqstransport.CreateQueues(ctx, client, name, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New(memstore.Options{})
	var mu sync.Mutex
	ran := map[string]int{}
	eng := engine.New(engine.Options{State: store, Transport: sqstransport.New(client, url, sqstransport.Options{}),
		Runner: runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
			mu.Lock()
			ran[j.ID]++
			mu.Unlock()
			return nil
		}),
		// moto delivers delayed messages late, up to a second on a
		// loaded host: a lead that covers it, so no start is missed.
		Lead: 2 * time.Second})
	if _, err := eng.CreateQueue(ctx, "q", slot.Config{Interval: 100 * time.Millisecond, Skew: 25 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Jobs: []job.Spec{{ID: "waits", Kind: "k"}, {ID: "done", Kind: "k"}, {ID: "moved", Kind: "k"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String("not an envelope")}); err != nil {
		t.Fatal(err)
	}
	// A worker that crashes on every message: received MaxReceiveCount
	// times, never deleted, so SQS moves them to the dead-letter queue.
	for try := 0; try < 50; try++ {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 0, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if v, f, d := queueDepth(t, client, url); len(out.Messages) == 0 && v+f+d == 0 {
			break
		}
	}
	if v, f, d := queueDepth(t, client, dlqURL); v+f+d != 4 {
		t.Fatalf("dead-letter queue holds %d messages, want the 3 jobs' and the undecodable one", v+f+d)
	}
	// "done" ended meanwhile (another delivery ran it); "moved" took a
	// new ticket, so its old message is stale.
	move := func(id string, change func(j *job.Job)) {
		j, err := store.GetJob(ctx, job.Ref{Queue: "q", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		from := j.Version()
		change(&j)
		if err := store.UpdateJob(ctx, j, from); err != nil {
			t.Fatal(err)
		}
	}
	move("done", func(j *job.Job) { j.Status, j.StartedAt = job.Running, time.Now() })
	move("done", func(j *job.Job) { j.Status, j.FinishedAt = job.Succeeded, time.Now() })
	move("moved", func(j *job.Job) { j.Ticket += 10 })

	dlq := sqstransport.NewDeadLetterQueue(client, dlqURL)
	dlq.Visibility = time.Second
	rep, err := eng.Redrive(ctx, dlq, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Received != 4 || rep.Redriven != 1 || rep.Dropped != 2 || rep.Undecodable != 1 || rep.More {
		t.Errorf("redrive report %+v; want 4 received, 1 redriven, 2 dropped, 1 undecodable", rep)
	}
	// The dead-letter queue keeps the undecodable one only (visible, or
	// still in flight: its counts are moto's, read until they settle).
	testenv.WaitFor(t, "the dead-letter queue to hold the undecodable message only", func() bool {
		v, f, d := queueDepth(t, client, dlqURL)
		return v+f+d == 1
	})
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 2,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("slot queue holds %d messages after the redrive, want 1", len(out.Messages))
	}
	env, err := job.DecodeEnvelope([]byte(aws.ToString(out.Messages[0].Body)))
	if err != nil || env.JobID != "waits" {
		t.Fatalf("redriven message %s (%v), want waits's", aws.ToString(out.Messages[0].Body), err)
	}
	if err := eng.Work(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := eng.Work(ctx, env); err != nil { // a duplicate: dropped
		t.Fatal(err)
	}
	// Its slot went by while it was in the dead-letter queue: it may
	// have taken a new ticket at the end of the line (a missed slot),
	// whose message then carries it.
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		if j, err := store.GetJob(ctx, job.Ref{Queue: "q", ID: "waits"}); err != nil || j.Status.Final() {
			break
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			env, err := job.DecodeEnvelope([]byte(aws.ToString(m.Body)))
			if err != nil {
				t.Fatal(err)
			}
			if err := eng.Work(ctx, env); err != nil {
				t.Fatal(err)
			}
		}
	}
	j, err := store.GetJob(ctx, job.Ref{Queue: "q", ID: "waits"})
	if err != nil || j.Status != job.Succeeded || ran["waits"] != 1 || ran["done"] != 0 || ran["moved"] != 0 {
		t.Errorf("after the redrive: waits %s, runs %v; want waits succeeded, run once, nothing else run", j.Status, ran)
	}
}

// runFunc is an engine.Runner made of a function.
type runFunc func(ctx context.Context, j *job.Job, cfg slot.Config) error

func (f runFunc) Run(ctx context.Context, j *job.Job, cfg slot.Config) error { return f(ctx, j, cfg) }
