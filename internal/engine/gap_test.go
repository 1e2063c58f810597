package engine

import (
	"testing"
	"time"

	"github.com/slotq/slotq/internal/slot"
)

// TestStartGap: the gap to the previous start's theoretical time is never
// negative: a start inside a burst, whose theoretical time runs ahead of
// the clock, started with the one before (gap 0); an on-time start's gap
// is the interval, an early one's less by how early, a late one's the
// time since the previous.
func TestStartGap(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	const T = 10 * time.Millisecond
	for _, c := range []struct {
		name        string
		seen, after slot.State
		want        time.Duration
		ok          bool
	}{
		{"first start", slot.State{}, slot.State{LastStart: now}, 0, false},
		{"on time", slot.State{LastStart: now.Add(-T)}, slot.State{LastStart: now}, T, true},
		{"early within the skew", slot.State{LastStart: now.Add(-T + time.Millisecond)}, slot.State{LastStart: now.Add(time.Millisecond)}, T - time.Millisecond, true},
		{"inside a burst", slot.State{LastStart: now.Add(3 * T)}, slot.State{LastStart: now.Add(4 * T)}, 0, true},
		{"late", slot.State{LastStart: now.Add(-5 * T)}, slot.State{LastStart: now}, 5 * T, true},
	} {
		got, ok := startGap(c.seen, c.after, T, now)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: gap %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
