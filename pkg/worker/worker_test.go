package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dev/motoserver"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/lambdafn"
	workerfn "github.com/slotq/slotq/internal/lambdafn/worker"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/internal/sqstransport"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A bad environment is an error naming the variable, before any client is
// built.
func TestNewHandlerBadEnvironment(t *testing.T) {
	env := map[string]string{lambdafn.EnvQueueURL: "https://sqs.us-east-1.amazonaws.com/1/slots", lambdafn.EnvWorkerTimeout: "120"}
	_, err := NewHandler(t.Context(), target.NewMux(), Options{
		Logger: slog.New(slog.DiscardHandler),
		Getenv: func(k string) string { return env[k] },
	})
	if err == nil || !strings.Contains(err.Error(), lambdafn.EnvTable) {
		t.Fatalf("NewHandler without %s: %v", lambdafn.EnvTable, err)
	}
}

var seq atomic.Int64

// NewHandler wires a user's mux into the stack's worker on DynamoDB (Local)
// and SQS (moto), from the environment the template sets: an SQS batch of
// the slot queue's messages runs the user's kind and the built-in echo,
// and the answer is the partial batch response.
func TestNewHandler(t *testing.T) {
	dynamolocal.Require(t)
	motoserver.Require(t)
	ctx := t.Context()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ddb := dynamodb.NewFromConfig(awsCfg, dynamolocal.Quiet)
	sq := sqs.NewFromConfig(awsCfg)
	n := seq.Add(1)
	table := fmt.Sprintf("worker-test-%d-%d", os.Getpid(), n)
	if err := dynamostore.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	url, _, err := sqstransport.CreateQueues(ctx, sq, fmt.Sprintf("worker-test-%d-%d", os.Getpid(), n), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A lead of a second: the test receives the messages itself (long
	// polls of moto) and hands them over as one batch; the jobs' slots
	// must not pass meanwhile, or they would be missed and re-ticketed.
	env := map[string]string{lambdafn.EnvTable: table, lambdafn.EnvQueueURL: url, lambdafn.EnvWorkerTimeout: "120", lambdafn.EnvLead: "1s"}
	getenv := func(k string) string { return env[k] }

	var mu sync.Mutex
	var greeted []string
	mux := target.NewMux()
	mux.HandleFunc("greet", func(ctx context.Context, j *api.Job) error {
		var p struct{ Name string }
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			return target.SkipRetry(err)
		}
		mu.Lock()
		defer mu.Unlock()
		greeted = append(greeted, p.Name)
		return nil
	})
	var logs strings.Builder
	var logMu sync.Mutex
	log := slog.New(slog.NewJSONHandler(writerFunc(func(b []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(b)
	}), nil))
	h, err := NewHandler(ctx, mux, Options{Logger: log, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if !mux.Has(workerfn.Echo) {
		t.Errorf("the built-in %s kind was not added to the mux", workerfn.Echo)
	}

	// Enqueue as the enqueue function does, from its own environment.
	cfg, err := lambdafn.Load(lambdafn.Enqueue, getenv)
	if err != nil {
		t.Fatal(err)
	}
	iv := slot.Duration(200 * time.Millisecond)
	res, err := cfg.Engine(awsCfg, nil, slog.New(slog.DiscardHandler)).Enqueue(ctx, job.EnqueueRequest{
		Queue: "greetings", Interval: &iv,
		Jobs: []job.Spec{
			{ID: "ada", Kind: "greet", Payload: json.RawMessage(`{"name":"Ada"}`)},
			{ID: "echo", Kind: workerfn.Echo, Payload: json.RawMessage(`{"hello":"world"}`)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	// Deliver the slot queue's messages as the event source would, until
	// every job has ended: the first delivery carries both, and a worker
	// that a loaded host (or moto) makes late for a slot queues its job
	// again, for a later one.
	state := dynamostore.New(ddb, table, dynamostore.Options{})
	ictx, cancel := context.WithTimeout(ctx, 2*time.Minute) // the invocation's deadline
	defer cancel()
	deliver := func(ev events.SQSEvent) {
		t.Helper()
		resp, err := h.Handle(ictx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) != 0 {
			t.Errorf("batch item failures %v", resp.BatchItemFailures)
		}
		for _, m := range ev.Records {
			if _, err := sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: &m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	receive := func() events.SQSEvent {
		t.Helper()
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		var ev events.SQSEvent
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, sqstransport.EventOf(m, "arn:aws:sqs:us-east-1:123456789012:slots"))
		}
		return ev
	}
	var first events.SQSEvent
	testenv.WaitFor(t, fmt.Sprintf("%d messages on the slot queue", len(res.Jobs)), func() bool {
		first.Records = append(first.Records, receive().Records...)
		return len(first.Records) >= len(res.Jobs)
	})
	deliver(first)
	testenv.WaitFor(t, "every job to end", func() bool {
		for _, a := range res.Jobs {
			j, err := state.GetJob(ctx, job.Ref{Queue: "greetings", ID: a.JobID})
			if err != nil {
				t.Fatal(err)
			}
			if !j.Status.Final() {
				if ev := receive(); len(ev.Records) > 0 {
					deliver(ev)
				}
				return false
			}
		}
		return true
	})
	if len(greeted) != 1 || greeted[0] != "Ada" {
		t.Errorf("greet ran for %v, want [Ada]", greeted)
	}
	logMu.Lock()
	if !strings.Contains(logs.String(), `"payload":{"hello":"world"}`) {
		t.Errorf("the echo kind did not log its payload:\n%s", logs.String())
	}
	logMu.Unlock()
	for _, a := range res.Jobs {
		j, err := state.GetJob(ctx, job.Ref{Queue: "greetings", ID: a.JobID})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != job.Succeeded {
			t.Errorf("job %s is %s, want succeeded", j.ID, j.Status)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
