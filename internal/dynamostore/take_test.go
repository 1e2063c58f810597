package dynamostore_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// TestTakeMatchesSlotTake drives one queue through a random walk of takes
// (busy and idle, lagging clocks, scheduled-only batches) and gates (early,
// late, within skew), and checks every answer against internal/slot's rules
// applied to a model state, whatever the hint the caller gives.
func TestTakeMatchesSlotTake(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	const iv = 250 * time.Millisecond
	newQueue(t, st, "walk", iv)
	rng := rand.New(rand.NewPCG(1, 2))
	var model slot.State
	now := base
	for i := range 120 {
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
		if rng.IntN(3) == 0 && model.Ticket > model.Current {
			ticket := model.Current + 1 + rng.Int64N(model.Ticket-model.Current)
			skew := time.Duration(rng.IntN(3)) * 40 * time.Millisecond
			// The hint is sometimes right, sometimes stale or empty: the
			// answer must not depend on it.
			seen := model
			if rng.IntN(3) == 0 {
				seen = slot.State{}
			}
			got, err := st.Gate(ctx, engine.GateRequest{Queue: "walk", Ticket: ticket, Interval: iv, Skew: skew, Now: now, Seen: seen})
			if v, _ := slot.Gate(model, ticket, slot.Every(iv), skew, now); v != slot.Start {
				var ge *engine.GateError
				if !errors.As(err, &ge) || ge.Verdict != v {
					t.Fatalf("step %d: Gate = %v; slot.Gate says %s", i, err, v)
				}
				continue
			}
			if err != nil {
				t.Fatalf("step %d: Gate: %v", i, err)
			}
			model = slot.Started(model, ticket, slot.Every(iv), now)
			if !sameState(got, model) {
				t.Fatalf("step %d: Gate state %+v, want %+v", i, got, model)
			}
			continue
		}
		n := 1 + rng.IntN(5)
		line := rng.IntN(n + 1)
		seen := model
		if rng.IntN(3) == 0 {
			seen = slot.State{}
		}
		tk, err := st.Take(ctx, engine.TakeRequest{Queue: "walk", N: n, Line: line, Interval: iv, Now: now, Seen: seen})
		if err != nil {
			t.Fatalf("step %d: Take: %v", i, err)
		}
		next, first, slots := slot.Take(model, n, line, slot.Every(iv), 0, now)
		if tk.First != first || !slices.EqualFunc(tk.Slots, slots, time.Time.Equal) || !sameState(tk.State, next) {
			t.Fatalf("step %d: Take(n=%d, line=%d, now=%v) = %d %v %+v; slot.Take says %d %v %+v",
				i, n, line, now, tk.First, tk.Slots, tk.State, first, slots, next)
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
