package client_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// Keys and max_running (docs/guarantees.md §12) through the client and the
// functions' JSON, both ways: a queue's max_running is kept by create and
// configure and shown by stats; an enqueue with keys answers each job's key
// and the jobs of its key ahead of it; a job's record keeps its key.
func TestLocalRuntimeLanes(t *testing.T) {
	c := newLocalClient(t)
	ctx := context.Background()

	cq, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "accounts", Config: &api.Config{Interval: 100 * time.Millisecond, MaxRunning: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if cq.Queue.Config.MaxRunning != 2 {
		t.Errorf("create answered max_running %d, want 2", cq.Queue.Config.MaxRunning)
	}
	cfg := cq.Queue.Config
	cfg.MaxRunning = 3
	conf, err := c.ConfigureQueue(ctx, &client.ConfigureQueueInput{Queue: "accounts", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if conf.Queue.Config.MaxRunning != 3 || conf.Queue.Config.Interval != 100*time.Millisecond {
		t.Errorf("configure answered %+v", conf.Queue.Config)
	}
	_, err = c.ConfigureQueue(ctx, &client.ConfigureQueueInput{Queue: "accounts", Config: api.Config{MaxRunning: slot.MaxRunningLimit + 1}})
	wantError(t, err, "invalid_max_running", "config.max_running", nil)

	// Paused, so that nothing runs and the answers are exact.
	if _, err := c.PauseQueue(ctx, &client.PauseQueueInput{Queue: "accounts"}); err != nil {
		t.Fatal(err)
	}
	out, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "accounts", Jobs: []api.Spec{
		{ID: "a1", Kind: "echo", Key: "acct-1"}, {ID: "a2", Kind: "echo", Key: "acct-1"},
		{ID: "b1", Kind: "echo", Key: "acct-2"}, {ID: "free", Kind: "echo"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ahead := func(n int64) *int64 { return &n }
	want := []struct {
		key   string
		ahead *int64
	}{{"acct-1", ahead(0)}, {"acct-1", ahead(1)}, {"acct-2", ahead(0)}, {"", nil}}
	for i, a := range out.Jobs {
		w := want[i]
		if a.Key != w.key || (a.KeyAhead == nil) != (w.ahead == nil) || a.KeyAhead != nil && *a.KeyAhead != *w.ahead {
			t.Errorf("job %s answered key %q key_ahead %v, want %q %v", a.JobID, a.Key, deref(a.KeyAhead), w.key, deref(w.ahead))
		}
	}
	one, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "accounts", Job: &api.Spec{ID: "a3", Kind: "echo", Key: "acct-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if a := one.Jobs[0]; a.Key != "acct-1" || a.KeyAhead == nil || *a.KeyAhead != 2 {
		t.Errorf("third job of acct-1 answered %+v, want key_ahead 2", a)
	}
	_, err = c.Enqueue(ctx, &client.EnqueueInput{Queue: "accounts", Jobs: []api.Spec{{Kind: "echo"}, {Kind: "echo", Key: "no spaces"}}})
	wantError(t, err, "invalid_key", "jobs[1].key", nil)

	j, err := c.GetJob(ctx, &client.GetJobInput{Queue: "accounts", JobID: "a2"})
	if err != nil {
		t.Fatal(err)
	}
	if j.Job.Key != "acct-1" {
		t.Errorf("job a2 has key %q, want acct-1", j.Job.Key)
	}
	st, err := c.GetStats(ctx, &client.GetStatsInput{Queue: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats.Config.MaxRunning != 3 || st.Stats.Lanes != (api.LaneFigures{Running: 0, KeysAtLimit: -1}) {
		t.Errorf("stats: max_running %d, lanes %+v; want 3 and nothing running or waiting", st.Stats.Config.MaxRunning, st.Stats.Lanes)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// A job's key and a queue's max_running travel in the requests under the
// names the functions read.
func TestLaneRequestEncoding(t *testing.T) {
	s, c := newStub(t)
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "accounts", Job: &api.Spec{Kind: "echo", Key: "acct-1"}}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, s, `{"queue":"accounts","job":{"kind":"echo","key":"acct-1"}}`)
	if _, err := c.ConfigureQueue(ctx, &client.ConfigureQueueInput{Queue: "accounts", Config: api.Config{Interval: time.Second, MaxRunning: 4}}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, s, `{"op":"configure","queue":"accounts","config":{"interval":"1s","max_running":4},"reset":true}`)
	// An update gives max_running 0 (no cap) explicitly, and nothing else.
	zero := 0
	if _, err := c.ConfigureQueue(ctx, &client.ConfigureQueueInput{Queue: "accounts", Update: &api.ConfigUpdate{MaxRunning: &zero}}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, s, `{"op":"configure","queue":"accounts","config":{"max_running":0}}`)
}

// sameJSON checks that the stub's last request is want, as JSON values.
func sameJSON(t *testing.T, s *stub, want string) {
	t.Helper()
	_, body := s.last()
	var g, w any
	if err := json.Unmarshal(body, &g); err != nil {
		t.Fatalf("request %s: %v", body, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("request %s, want %s", body, want)
	}
}
