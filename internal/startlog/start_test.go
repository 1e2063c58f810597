package startlog

import (
	"context"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
)

// A Ring keeps the last Size starts of each queue and answers those from
// since on, in start order, at most limit.
func TestRing(t *testing.T) {
	r := &Ring{Size: 5}
	ctx := context.Background()
	start := func(q string, ticket int64) {
		slotAt := t0.Add(time.Duration(ticket) * time.Second)
		r.Observe(ctx, engine.Event{Kind: engine.EventStarted, Queue: q, Lateness: 2 * time.Millisecond,
			Start: &engine.Start{JobID: "j", Ticket: ticket, Attempt: 1, SlotAt: slotAt, GateAt: slotAt.Add(time.Millisecond),
				At: slotAt.Add(2 * time.Millisecond)}})
	}
	for i := int64(1); i <= 8; i++ {
		start("q", i)
	}
	start("other", 1)
	r.Observe(ctx, engine.Event{Kind: engine.EventSucceeded, Queue: "q"})
	r.Observe(ctx, engine.Event{Kind: engine.EventStarted, Queue: "q"}) // no start: nothing kept

	tickets := func(ss []Start) []int64 {
		var out []int64
		for _, s := range ss {
			out = append(out, s.Ticket)
		}
		return out
	}
	tests := []struct {
		name     string
		since    time.Time
		limit    int
		want     []int64
		wantMore bool
	}{
		{"the last five", time.Time{}, 10, []int64{4, 5, 6, 7, 8}, false},
		{"since ticket 6", t0.Add(6 * time.Second), 10, []int64{6, 7, 8}, false},
		{"cut at limit", time.Time{}, 2, []int64{4, 5}, true},
		{"since after the last", t0.Add(time.Minute), 10, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, more, err := r.Starts(ctx, "q", tt.since, tt.limit)
			if err != nil || more != tt.wantMore || !equal(tickets(got), tt.want) {
				t.Errorf("got %v more %v (%v), want %v more %v", tickets(got), more, err, tt.want, tt.wantMore)
			}
		})
	}
	got, _, _ := r.Starts(ctx, "q", time.Time{}, 1)
	if s := got[0]; s.LatenessMS != 2 || s.JobID != "j" || s.Attempt != 1 || s.StartedAt.Sub(s.SlotAt) != 2*time.Millisecond ||
		s.GateAt.Sub(s.SlotAt) != time.Millisecond {
		t.Errorf("start %+v", s)
	}
	if got, _, _ := r.Starts(ctx, "none", time.Time{}, 10); len(got) != 0 {
		t.Errorf("unknown queue: %+v", got)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
