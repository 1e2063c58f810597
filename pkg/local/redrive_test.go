package local_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/internal/dev/localtest"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/pkg/local"
)

// Redrive through the local runtime's own SQS emulation: a job that runs
// longer than its message's visibility timeout times the receive limit
// has its message (the attempt's watchdog, which the worker hands back
// while the attempt runs) moved to the dead-letter list by the event
// source, as SQS would; once the job has ended, redrive receives the
// message and drops it (the job moved on), and the list is empty after.
func TestRedriveDropsFinished(t *testing.T) {
	c := startRedriveStack(t)
	var acc any
	c.call(local.EnqueueFunction, map[string]any{"queue": "slow", "job": map[string]any{"id": "s1", "kind": "sleep", "payload": map[string]int{"ms": 1500}}}, &acc)
	waitSucceeded(t, c, "s1")
	var rep redriveAnswer
	c.call(local.AdminFunction, map[string]any{"op": "redrive"}, &rep)
	if r := rep.Redrive; r.Received != 1 || r.Dropped != 1 || r.Redriven != 0 {
		t.Errorf("redrive %+v; want the watchdog message received and dropped (its job ended)", r)
	}
	c.call(local.AdminFunction, map[string]any{"op": "redrive"}, &rep)
	if r := rep.Redrive; r.Received != 0 {
		t.Errorf("a second redrive received %d messages, want none", r.Received)
	}
}

// A message redriven while its job still runs goes back to the slot
// queue (the job waits for it: it is the attempt's watchdog) and starts
// nothing: the job runs once.
func TestRedriveWhileRunning(t *testing.T) {
	c := startRedriveStack(t)
	var acc any
	c.call(local.EnqueueFunction, map[string]any{"queue": "slow", "job": map[string]any{"id": "s2", "kind": "sleep", "payload": map[string]int{"ms": 3000}}}, &acc)
	// Redrive until the watchdog reaches the dead-letter list: a redrive
	// of an empty list receives nothing and changes nothing.
	var rep redriveAnswer
	testenv.WaitFor(t, "the watchdog in the dead-letter list", func() bool {
		c.call(local.AdminFunction, map[string]any{"op": "redrive"}, &rep)
		return rep.Redrive.Received > 0
	})
	if r := rep.Redrive; r.Received != 1 || r.Redriven != 1 {
		t.Errorf("redrive %+v; want the running job's message sent back", r)
	}
	j := waitSucceeded(t, c, "s2")
	starts := 0
	for _, ev := range j.History {
		if ev.Kind == job.Started {
			starts++
		}
	}
	if j.Attempt != 1 || starts != 1 {
		t.Errorf("s2: attempt %d, %d starts; want one run", j.Attempt, starts)
	}
}

type redriveAnswer struct {
	Redrive struct {
		Received, Redriven, Dropped, Undecodable int
	} `json:"redrive"`
}

func waitSucceeded(t *testing.T, c invoker, id string) job.Job {
	t.Helper()
	var res struct {
		Job job.Job `json:"job"`
	}
	testenv.WaitFor(t, id+" to succeed", func() bool {
		c.call(local.AdminFunction, map[string]any{"op": "get", "queue": "slow", "job_id": id}, &res)
		return res.Job.Status == job.Succeeded
	})
	return res.Job
}

// startRedriveStack runs the local runtime with a slot queue whose
// messages come back after 200ms and go to the dead-letter list on
// their third receive.
func startRedriveStack(t *testing.T) invoker {
	ends := localtest.Start(t, local.Options{
		Out:   &testenv.Buffer{},
		Stack: local.Stack{VisibilityTimeout: 200 * time.Millisecond, MaxReceiveCount: 2},
	})
	return invoker{t, lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(ends.InvokeURL), Credentials: aws.AnonymousCredentials{}})}
}
