package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// wantError checks that err is an *client.Error with code and field, and
// that errors.Is finds sentinel (if not nil).
func wantError(t *testing.T, err error, code, field string, sentinel error) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want *client.Error %s", err, err, code)
	}
	if e.Code != code || e.Field != field {
		t.Errorf("got code %q field %q (%v), want %q %q", e.Code, e.Field, err, code, field)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Errorf("errors.Is(%v, %v) = false", err, sentinel)
	}
	var fe *client.FunctionError
	if errors.As(err, &fe) {
		t.Errorf("%v is also a *client.FunctionError", err)
	}
}

// Every operation and every refusal against the local runtime: the
// handlers Lambda runs, behind the Invoke API.
func TestLocalRuntime(t *testing.T) {
	c := newLocalClient(t)
	ctx := context.Background()

	cq, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "emails", Config: &api.Config{
		Interval: 100 * time.Millisecond, Targets: []string{"https://hooks.example.com/*"}}})
	if err != nil {
		t.Fatal(err)
	}
	if cq.Queue.Name != "emails" || cq.Queue.Config.Interval != 100*time.Millisecond || cq.Queue.Config.MaxAttempts != slot.DefaultMaxAttempts {
		t.Errorf("created %+v", cq.Queue)
	}
	_, err = c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "emails"})
	wantError(t, err, "queue_exists", "queue", client.ErrQueueExists)
	// A create that leaves the interval out takes the default.
	dq, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "defaults", Config: &api.Config{MaxAttempts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if dq.Queue.Config.Interval != time.Second || dq.Queue.Config.MaxAttempts != 2 {
		t.Errorf("created %+v", dq.Queue.Config)
	}
	_, err = c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "bad", Config: &api.Config{Interval: -time.Second}})
	wantError(t, err, "invalid_interval", "config.interval", nil)

	one, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Job: &api.Spec{ID: "welcome-42", Kind: "echo", Payload: json.RawMessage(`{"to":"ada@example.com"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if a := one.Jobs; len(a) != 1 || a[0].JobID != "welcome-42" || a[0].Ticket != 1 || a[0].Position != 0 || a[0].SlotAt.IsZero() || a[0].Status != api.Queued {
		t.Errorf("enqueue answered %+v", one)
	}
	again, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Job: &api.Spec{ID: "welcome-42", Kind: "echo"}})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Jobs[0].Existing || again.Jobs[0].Ticket != 1 {
		t.Errorf("enqueue again answered %+v", again.Jobs[0])
	}
	batch, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Jobs: []api.Spec{{Kind: "echo"}, {Kind: "echo"}, {Kind: "echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(batch.Jobs) != 3 || batch.Jobs[0].Ticket != 2 || batch.Jobs[2].Ticket != 4 || batch.Jobs[2].Position < 1 {
		t.Errorf("batch answered %+v", batch.Jobs)
	}

	_, err = c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Job: &api.Spec{Target: "https://evil.example.org/x"}})
	wantError(t, err, "target_not_allowed", "job.target", client.ErrNotAllowed)
	_, err = c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Jobs: []api.Spec{{Kind: "echo"}, {}}})
	wantError(t, err, "no_target", "jobs[1].kind", nil)

	until := time.Now().Add(time.Hour).Truncate(time.Second)
	p, err := c.PauseQueue(ctx, &client.PauseQueueInput{Queue: "emails", Until: until})
	if err != nil {
		t.Fatal(err)
	}
	if !p.State.Paused || !p.State.PausedUntil.Equal(until) {
		t.Errorf("pause answered %+v", p.State)
	}
	_, err = c.PauseQueue(ctx, &client.PauseQueueInput{Queue: "emails", Until: time.Now().Add(-time.Hour)})
	wantError(t, err, "invalid_until", "until", nil)
	_, err = c.PauseQueue(ctx, &client.PauseQueueInput{Queue: "nope"})
	wantError(t, err, "queue_not_found", "queue", client.ErrQueueNotFound)

	parked, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Job: &api.Spec{ID: "held", Kind: "echo"}})
	if err != nil {
		t.Fatal(err)
	}
	if parked.Jobs[0].Status != api.Parked {
		t.Errorf("enqueue on a paused queue answered %+v", parked.Jobs[0])
	}
	l, err := c.ListJobs(ctx, &client.ListJobsInput{Queue: "emails"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(l.Jobs, func(j api.Job) bool { return j.ID == "held" && j.Status == api.Parked }) || l.NextAfter != 0 {
		t.Errorf("list answered %+v", l)
	}
	_, err = c.ListJobs(ctx, &client.ListJobsInput{Queue: "emails", Status: api.Succeeded})
	wantError(t, err, "status_not_listed", "status", nil)
	_, err = c.ListJobs(ctx, &client.ListJobsInput{})
	wantError(t, err, "invalid_queue", "queue", nil)
	failed, err := c.ListJobs(ctx, &client.ListJobsInput{Queue: "emails", Status: api.Failed})
	if err != nil || len(failed.Jobs) != 0 {
		t.Errorf("list failed: %+v, %v", failed, err)
	}

	g, err := c.GetJob(ctx, &client.GetJobInput{Queue: "emails", JobID: "held"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Job.ID != "held" || g.Job.Status != api.Parked || g.Job.Kind != "echo" {
		t.Errorf("get answered %+v", g.Job)
	}
	_, err = c.GetJob(ctx, &client.GetJobInput{Queue: "emails", JobID: "nope"})
	wantError(t, err, "job_not_found", "job_id", client.ErrJobNotFound)
	if errors.Is(err, client.ErrQueueNotFound) {
		t.Error("a missing job matches ErrQueueNotFound")
	}

	st, err := c.GetStats(ctx, &client.GetStatsInput{Queue: "emails"})
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Stats; s.Queue != "emails" || s.Parked < 1 || s.Waiting < 1 || !s.State.Paused || s.Config.Interval != 100*time.Millisecond {
		t.Errorf("stats answered %+v", s)
	}

	cj, err := c.CancelJob(ctx, &client.CancelJobInput{Queue: "emails", JobID: "held"})
	if err != nil {
		t.Fatal(err)
	}
	if cj.Job.Status != api.Cancelled {
		t.Errorf("cancel answered %+v", cj.Job)
	}
	_, err = c.CancelJob(ctx, &client.CancelJobInput{Queue: "emails", JobID: "held"})
	wantError(t, err, "not_waiting", "job_id", client.ErrNotWaiting)

	if _, err := c.ResumeQueue(ctx, &client.ResumeQueueInput{Queue: "emails"}); err != nil {
		t.Fatal(err)
	}
	cf, err := c.ConfigureQueue(ctx, &client.ConfigureQueueInput{Queue: "emails", Config: api.Config{Interval: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if cf.Queue.Config.Interval != 2*time.Second || cf.Queue.Config.Targets != nil {
		t.Errorf("configure answered %+v", cf.Queue.Config)
	}
	_, err = c.ConfigureQueue(ctx, &client.ConfigureQueueInput{Queue: "emails", Config: api.Config{Retention: time.Second}})
	wantError(t, err, "invalid_retention", "config.retention", nil)

	qs, err := c.ListQueues(ctx, &client.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range qs.Queues {
		names = append(names, q.Name)
	}
	if !slices.Equal(names, []string{"defaults", "emails"}) {
		t.Errorf("queues: %v", names)
	}

	if _, err := c.PurgeQueue(ctx, &client.PurgeQueueInput{Queue: "emails"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteQueue(ctx, &client.DeleteQueueInput{Queue: "emails"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetStats(ctx, &client.GetStatsInput{Queue: "emails"})
	wantError(t, err, "queue_not_found", "queue", client.ErrQueueNotFound)
	_, err = c.DeleteQueue(ctx, &client.DeleteQueueInput{Queue: "emails"})
	wantError(t, err, "queue_not_found", "queue", client.ErrQueueNotFound)
	_, err = c.Enqueue(ctx, &client.EnqueueInput{Queue: "bad name"})
	wantError(t, err, "invalid_queue", "queue", nil)
}

// A function name the endpoint does not know is the SDK's
// ResourceNotFoundException, neither an *Error nor a *FunctionError.
func TestLocalRuntimeUnknownFunction(t *testing.T) {
	c := newLocalClient(t, func(o *client.Options) { o.AdminFunction = "NoSuchFunction" })
	_, err := c.GetStats(context.Background(), &client.GetStatsInput{Queue: "emails"})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("got %v (%T), want ResourceNotFoundException", err, err)
	}
	var e *client.Error
	var fe *client.FunctionError
	if errors.As(err, &e) || errors.As(err, &fe) || errors.Is(err, client.ErrQueueNotFound) {
		t.Errorf("%v is typed as a slotq answer", err)
	}
}

// Stats on the local runtime answer the queue's recent activity, as the
// stack's answer it from CloudWatch: the runtime tallies its own events.
func TestLocalStatsActivity(t *testing.T) {
	c := newLocalClient(t)
	ctx := context.Background()
	iv := api.Duration(20 * time.Millisecond)
	res, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "tally", Interval: &iv, Jobs: []api.Spec{{Kind: "echo"}, {Kind: "echo"}, {Kind: "echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 3 {
		t.Fatalf("enqueue answered %+v", res)
	}
	// The outcome is tallied just after it is recorded: ask until the
	// three are in.
	var st *client.GetStatsOutput
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st, err = c.GetStats(ctx, &client.GetStatsInput{Queue: "tally"}); err != nil {
			t.Fatal(err)
		}
		if st.Activity != nil && st.Activity.Succeeded == 3 || time.Now().After(deadline) {
			break
		}
	}
	a := st.Activity
	if a == nil || a.Starts != 3 || a.Succeeded != 3 || a.LatenessP50 == nil || a.LatenessMax == nil || st.ActivityError != "" {
		t.Fatalf("activity %+v (error %q)", a, st.ActivityError)
	}
}
