package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
	"github.com/slotq/slotq/pkg/local"
)

// runLocal starts the local runtime (what `slotq local` runs) on a free
// port, so the examples have a stack to call, and returns its Invoke API
// URL and how to stop it.
func runLocal() (url string, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(done)
		_ = local.Run(ctx, local.Options{Addr: "127.0.0.1:0", Out: io.Discard, Logger: slog.New(slog.DiscardHandler),
			Ready: func(e local.Endpoints) { ready <- e.InvokeURL }})
	}()
	return <-ready, func() { cancel(); <-done }
}

// Enqueue a job on the local runtime. On a deployed stack, load the
// configuration with config.LoadDefaultConfig and name the functions by the
// stack's outputs (client.WithStackOutputs) instead of an endpoint.
func ExampleClient_Enqueue() {
	endpoint, stop := runLocal() // such as "http://127.0.0.1:3001"
	defer stop()
	c := client.NewFromConfig(aws.Config{}, client.WithEndpoint(endpoint))
	ctx := context.Background()

	out, err := c.Enqueue(ctx, &client.EnqueueInput{
		Queue: "emails",
		Job: &api.Spec{
			ID:      "welcome-42", // enqueued once per queue, however often it is sent
			Kind:    "echo",
			Payload: json.RawMessage(`{"to":"ada@example.com"}`),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := out.Jobs[0]
	fmt.Println(a.JobID, "ticket", a.Ticket, "position", a.Position, a.Status)
	// a.SlotAt is when it is expected to start.
	// Output:
	// welcome-42 ticket 1 position 0 queued
}

// Errors carry the code and field the function answered; errors.Is finds
// the common ones.
func ExampleError() {
	endpoint, stop := runLocal()
	defer stop()
	c := client.NewFromConfig(aws.Config{}, client.WithEndpoint(endpoint))
	ctx := context.Background()

	_, err := c.GetStats(ctx, &client.GetStatsInput{Queue: "no-such-queue"})
	fmt.Println(errors.Is(err, client.ErrQueueNotFound))

	_, err = c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "crawls", Config: &api.Config{Interval: -2 * time.Second}})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Field)
	}

	var fe *client.FunctionError
	fmt.Println(errors.As(err, &fe)) // a crash or timeout would be a *client.FunctionError
	// Output:
	// true
	// invalid_interval config.interval
	// false
}

// Create a queue whose limit is a quota in the words an API publishes it:
// 100 calls a minute with bursts of 10, then, configured, 10 a second
// and at most 1,000 in any hour, both kept.
func ExampleClient_CreateQueue() {
	endpoint, stop := runLocal()
	defer stop()
	c := client.NewFromConfig(aws.Config{}, client.WithEndpoint(endpoint))
	ctx := context.Background()

	out, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "crawls", Config: &api.Config{
		Rate:  api.Rate{N: 100, Per: time.Minute},
		Burst: 10,
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := out.Queue.Config
	fmt.Println("rate:", cfg.Rate, "burst:", cfg.Burst)

	limits := []api.Limit{
		{Rate: api.Rate{N: 10, Per: time.Second}},
		{Window: api.Rate{N: 1000, Per: time.Hour}},
	}
	conf, err := c.ConfigureQueue(ctx, &client.ConfigureQueueInput{Queue: "crawls", Update: &api.ConfigUpdate{Limits: &limits}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range conf.Queue.Config.Limits {
		fmt.Println(l)
	}
	// Output:
	// rate: 100/1m burst: 10
	// rate 10/1s
	// window 1000/1h
}

// Pause a queue for an hour, look at it, and resume it.
func ExampleClient_PauseQueue() {
	endpoint, stop := runLocal()
	defer stop()
	c := client.NewFromConfig(aws.Config{}, client.WithEndpoint(endpoint))
	ctx := context.Background()

	if _, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "emails", Config: &api.Config{Interval: 2 * time.Second}}); err != nil {
		fmt.Println(err)
		return
	}
	p, err := c.PauseQueue(ctx, &client.PauseQueueInput{Queue: "emails", Until: time.Now().Add(time.Hour)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("paused:", p.State.Paused)

	st, err := c.GetStats(ctx, &client.GetStatsInput{Queue: "emails"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("interval:", st.Stats.Config.Interval, "waiting:", st.Stats.Waiting, "parked:", st.Stats.Parked)

	if _, err := c.ResumeQueue(ctx, &client.ResumeQueueInput{Queue: "emails"}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// paused: true
	// interval: 2s waiting: 0 parked: 0
}

// List a queue's dead letters (failed jobs), page by page.
func ExampleClient_ListJobs() {
	endpoint, stop := runLocal()
	defer stop()
	c := client.NewFromConfig(aws.Config{}, client.WithEndpoint(endpoint))
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "emails"}); err != nil {
		fmt.Println(err)
		return
	}

	in := &client.ListJobsInput{Queue: "emails", Status: api.Failed}
	for {
		page, err := c.ListJobs(ctx, in)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, j := range page.Jobs {
			fmt.Println(j.ID, j.LastError)
		}
		if page.NextAfter == 0 {
			break
		}
		in.After = page.NextAfter
	}
	fmt.Println("done")
	// Output:
	// done
}

// Give every key of a queue a limit of its own (each tenant at 5 a
// second, the queue at 200), one key a higher one, and list the busy
// keys with their limits.
func ExampleClient_SetKeyLimits() {
	endpoint, stop := runLocal()
	defer stop()
	c := client.NewFromConfig(aws.Config{}, client.WithEndpoint(endpoint))
	ctx := context.Background()

	_, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "tenants", Config: &api.Config{
		Rate:      api.Rate{N: 200, Per: time.Second},
		KeyLimits: []api.Limit{{Rate: api.Rate{N: 5, Per: time.Second}}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Paused, so the jobs wait and the list is the same on every run.
	if _, err := c.PauseQueue(ctx, &client.PauseQueueInput{Queue: "tenants"}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "tenants", Jobs: []api.Spec{
		{Kind: "echo", Key: "acme"}, {Kind: "echo", Key: "acme"}, {Kind: "echo", Key: "globex"},
	}}); err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.SetKeyLimits(ctx, &client.SetKeyLimitsInput{Queue: "tenants", Keys: []api.KeyLimit{
		{Key: "acme", Limits: []api.Limit{{Rate: api.Rate{N: 20, Per: time.Second}, Burst: 5}}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := c.ListKeys(ctx, &client.ListKeysInput{Queue: "tenants"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range out.Keys {
		fmt.Println(k.Key, k.Limits, "own:", k.Own, "pending:", k.Pending)
	}
	// Output:
	// acme [rate 20/1s burst 5] own: true pending: 2
	// globex [rate 5/1s] own: false pending: 1
}
