package dynamostore_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/engine"
	"github.com/slotq/slotq/pkg/job"
	"github.com/slotq/slotq/pkg/slot"
)

// TestTakeMatchesSlotTake drives one queue through a random walk of takes
// (busy and idle, lagging clocks, scheduled-only batches) and starts, and
// checks every answer against pkg/slot's rules applied to a model state.
func TestTakeMatchesSlotTake(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	const iv = 250 * time.Millisecond
	newQueue(t, st, "walk", iv)
	rng := rand.New(rand.NewPCG(1, 2))
	var model slot.State
	now := base
	for i := range 60 {
		// Mostly small steps (a busy line), sometimes a long pause (idle),
		// sometimes a caller whose clock lags, and sub-millisecond times.
		switch rng.IntN(6) {
		case 0:
			now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
		case 1:
			now = now.Add(-time.Duration(rng.IntN(3000)) * time.Millisecond)
		default:
			now = now.Add(time.Duration(rng.IntN(400_000_000)))
		}
		if rng.IntN(4) == 0 && model.Ticket > model.Current {
			ticket := model.Ticket
			id := "j" + string(rune('A'+i%26)) + string(rune('a'+i/26))
			j := job.Job{Queue: "walk", ID: id, Kind: "k", Status: job.Queued, Ticket: ticket, Attempt: 1}
			if _, err := st.CreateJobs(ctx, []job.Job{j}); err != nil {
				t.Fatal(err)
			}
			got, err := st.Start(ctx, engine.StartRequest{Key: job.Key{Queue: "walk", ID: id}, From: j.Version(), Interval: iv, Now: now})
			if v, _ := slot.Gate(model, ticket, iv, 0, now); v != slot.Start {
				if err == nil {
					t.Fatalf("step %d: Start passed a gate slot.Gate says %s to", i, v)
				}
				continue
			}
			if err != nil {
				t.Fatalf("step %d: Start: %v", i, err)
			}
			model = slot.Started(model, ticket, now)
			if !sameState(got, model) {
				t.Fatalf("step %d: Start state %+v, want %+v", i, got, model)
			}
			continue
		}
		n := 1 + rng.IntN(5)
		line := rng.IntN(n + 1)
		tk, err := st.Take(ctx, engine.TakeRequest{Queue: "walk", N: n, Line: line, Interval: iv, Now: now})
		if err != nil {
			t.Fatalf("step %d: Take: %v", i, err)
		}
		next, first, firstSlot := slot.Take(model, n, line, iv, now)
		if tk.First != first || !tk.FirstSlot.Equal(firstSlot) || !sameState(tk.State, next) {
			t.Fatalf("step %d: Take(n=%d, line=%d, now=%v) = %d %v %+v; slot.Take says %d %v %+v",
				i, n, line, now, tk.First, tk.FirstSlot, tk.State, first, firstSlot, next)
		}
		model = next
	}
	q, err := st.GetQueue(ctx, "walk")
	if err != nil {
		t.Fatal(err)
	}
	if !sameState(q.State, model) {
		t.Errorf("stored state %+v, want %+v", q.State, model)
	}
}

func sameState(a, b slot.State) bool {
	return a.Ticket == b.Ticket && a.Current == b.Current && a.Clock.Equal(b.Clock) &&
		a.LastStart.Equal(b.LastStart) && a.Paused == b.Paused && a.PausedUntil.Equal(b.PausedUntil)
}
