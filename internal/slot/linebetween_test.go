package slot

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// TestLineBetween: where the line's places are spaced (an interval, a rate
// without a burst, alone or with other limits), LineBetween bounds the
// line tickets that can still come ahead of a line ticket: never fewer
// than there are, and, under one limit, none for the next line ticket
// after the front of a line booked back to back, however many tickets out
// of line (a waiting room's places) were handed out between them. (A
// window beside the interval spaces some places further: the bound
// counts more than come, as if none were known.) A window or a burst
// alone gives no bound.
func TestLineBetween(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	spaced := map[string]Limits{
		"interval":            Every(10 * time.Millisecond),
		"rate burst 0":        {{Rate: api.Rate{N: 100, Per: time.Second}}},
		"interval and window": {{Interval: 10 * time.Millisecond}, {Window: api.Rate{N: 5, Per: 100 * time.Millisecond}}},
	}
	for name, ls := range spaced {
		t.Run(name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(7, uint64(len(name))))
			for round := range 400 {
				idle := round%2 == 1 // takes with idle times between
				// Takes as an enqueue makes them: the first tickets of
				// each in line, the rest the room's places.
				var s State
				type lined struct {
					ticket int64
					slot   time.Time
				}
				var line []lined
				now := t0
				for range 1 + rnd.IntN(6) {
					n := 1 + rnd.IntN(5)
					in := rnd.IntN(n + 1)
					var first int64
					var slots []time.Time
					s, first, slots = Take(s, n, in, ls, 0, now)
					for k, at := range slots {
						line = append(line, lined{first + int64(k), at})
					}
					if idle {
						now = now.Add(time.Duration(rnd.IntN(30)) * time.Millisecond)
					}
				}
				if len(line) < 2 {
					continue
				}
				// The line starts on time up to some ticket.
				started := rnd.IntN(len(line) - 1)
				for _, l := range line[:started+1] {
					s = StartedBy(s, l.ticket, ls, l.slot, l.slot, l.slot, 0)
				}
				for j := started + 1; j < len(line); j++ {
					n, ok := LineBetween(s, ls, line[j].slot)
					if !ok {
						t.Fatalf("round %d: no bound for %v", round, ls)
					}
					if want := int64(j - started - 1); n < want {
						t.Fatalf("round %d: LineBetween for line ticket %d = %d, but %d line tickets lie between it and the front", round, line[j].ticket, n, want)
					}
					if !idle && len(ls) == 1 && j == started+1 && n != 0 {
						t.Fatalf("round %d: LineBetween for the next line ticket %d after started %d = %d, want 0 (tickets between: %d)",
							round, line[j].ticket, line[started].ticket, n, line[j].ticket-line[started].ticket-1)
					}
				}
			}
		})
	}
	front := State{Front: t0}
	for name, ls := range map[string]Limits{
		"rate burst 4": {{Rate: api.Rate{N: 100, Per: time.Second}, Burst: 4}},
		"window":       {{Window: api.Rate{N: 5, Per: 100 * time.Millisecond}}},
	} {
		if n, ok := LineBetween(front, ls, t0.Add(time.Second)); ok {
			t.Errorf("%s: LineBetween = %d, true; want no bound: several places share a moment", name, n)
		}
	}
	if n, ok := LineBetween(State{}, Every(10*time.Millisecond), t0); ok {
		t.Errorf("no line ticket started: LineBetween = %d, true; want no bound", n)
	}
}
