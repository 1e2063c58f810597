package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// ListStarts against the local runtime: jobs enqueued on a fast queue
// start one each, in ticket order, none before its slot less the skew,
// each at the ticket and slot its record shows (those it was accepted
// with, or the new ones of a re-ticket when a loaded host made it miss
// its slot); bad input and an unknown queue are refused.
func TestListStartsLocal(t *testing.T) {
	c := newLocalClient(t)
	ctx := context.Background()
	since := time.Now()
	q, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "fast", Config: &api.Config{Interval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	var specs []api.Spec
	for i := range 5 {
		specs = append(specs, api.Spec{ID: fmt.Sprintf("j%d", i), Kind: "echo"})
	}
	acc, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "fast", Jobs: specs})
	if err != nil {
		t.Fatal(err)
	}
	var out *client.ListStartsOutput
	for deadline := time.Now().Add(20 * time.Second); ; {
		if out, err = c.ListStarts(ctx, &client.ListStartsInput{Queue: "fast", Since: since}); err != nil {
			t.Fatal(err)
		}
		if len(out.Starts) >= len(specs) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(out.Starts) != len(specs) || out.More || out.StartsError != "" {
		t.Fatalf("starts %+v, more %v, error %q; want %d", out.Starts, out.More, out.StartsError, len(specs))
	}
	skew := q.Queue.Config.Skew
	seen := map[string]bool{}
	for i, s := range out.Starts {
		rec, err := c.GetJob(ctx, &client.GetJobInput{Queue: "fast", JobID: s.JobID})
		if err != nil {
			t.Fatalf("start %d: %+v: get: %v", i, s, err)
		}
		j := rec.Job
		if seen[s.JobID] || s.Attempt != 1 || s.Ticket != j.Ticket || !s.SlotAt.Equal(j.SlotAt) || !s.GateAt.Equal(j.StartedAt) {
			t.Errorf("start %d: %+v, its record %+v", i, s, j)
		}
		seen[s.JobID] = true
		if j.Retickets == 0 && (s.Ticket != acc.Jobs[s.Ticket-1].Ticket || s.JobID != acc.Jobs[s.Ticket-1].JobID) {
			t.Errorf("start %d: %+v, not the ticket it was accepted with: %+v", i, s, acc.Jobs)
		}
		if s.StartedAt.Before(s.SlotAt.Add(-skew)) || s.LatenessMS != s.StartedAt.Sub(s.SlotAt).Milliseconds() {
			t.Errorf("start %d at %v, slot %v, lateness %dms (skew %v)", i, s.StartedAt, s.SlotAt, s.LatenessMS, skew)
		}
		if i > 0 && s.Ticket <= out.Starts[i-1].Ticket {
			t.Errorf("start %d: ticket %d after %d", i, s.Ticket, out.Starts[i-1].Ticket)
		}
	}
	// A page of two, then the rest from the last one's start.
	page, err := c.ListStarts(ctx, &client.ListStartsInput{Queue: "fast", Since: since, Limit: 2})
	if err != nil || len(page.Starts) != 2 || !page.More {
		t.Fatalf("limit 2: %+v, %v", page, err)
	}
	next, err := c.ListStarts(ctx, &client.ListStartsInput{Queue: "fast", Since: page.Starts[1].StartedAt})
	if err != nil || len(next.Starts) != 4 || next.Starts[0].Ticket != page.Starts[1].Ticket || next.More {
		t.Errorf("from the second: %+v, %v", next, err)
	}

	_, err = c.ListStarts(ctx, &client.ListStartsInput{Queue: "fast", Since: time.Now().Add(-2 * time.Hour)})
	wantError(t, err, "invalid_since", "since", nil)
	_, err = c.ListStarts(ctx, &client.ListStartsInput{Queue: "fast", Limit: 1001})
	wantError(t, err, "invalid_limit", "limit", nil)
	_, err = c.ListStarts(ctx, &client.ListStartsInput{Queue: "nope"})
	wantError(t, err, "queue_not_found", "queue", client.ErrQueueNotFound)
}
