package slot

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// A limit changed mid-backlog breaks neither limit, whichever forms it
// changes between: a queue starts jobs under old (at random times the
// gate allows, as early as it allows some of them), 40 jobs wait in line,
// the limits change to next (Reslot), and the waiting jobs start at the
// gate's earliest, each at its new slot or the gate's opening. Then
//
//   - the starts before and the first start after keep old;
//   - the starts after, with the starts before that the new limit's own
//     period holds, keep next (each limit of it judged on its own);
//   - every new slot passes the gate at once (the slots honour the
//     gate's state), in ticket order.
func TestReslotKeepsBothLimits(t *testing.T) {
	const skew = time.Millisecond
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range forms {
			if !yield(n) {
				return
			}
		}
	})
	extra := map[string]Limits{
		"slow interval": Every(40 * time.Millisecond),
		"fast rate":     {{Rate: api.Rate{N: 1000, Per: time.Second}, Burst: 20}},
	}
	all := map[string]Limits{}
	for n, ls := range forms {
		all[n] = ls
	}
	for n, ls := range extra {
		all[n] = ls
		names = append(names, n)
	}
	for _, from := range names {
		for _, to := range names {
			old, next := all[from], all[to]
			t.Run(fmt.Sprintf("%s to %s", from, to), func(t *testing.T) {
				for seed := range uint64(8) {
					checkReslot(t, old, next, skew, seed)
				}
			})
		}
	}
}

func checkReslot(t *testing.T, old, next Limits, skew time.Duration, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	st, before, now := history(rng, old, skew)
	const waiting = 40
	st, _, _ = Take(st, waiting, waiting, old, 0, now)
	first := st.Ticket - waiting + 1
	now = now.Add(time.Duration(rng.IntN(3)) * time.Millisecond)
	prev := st
	st, slots := Reslot(st, old, next, skew, waiting, now)
	if st.LastStart.Before(prev.LastStart) || st.Ticket != prev.Ticket || st.Current != prev.Current {
		t.Fatalf("seed %d: the state moved back: %+v -> %+v", seed, prev, st)
	}
	if len(slots) != waiting || !slices.IsSortedFunc(slots, time.Time.Compare) {
		t.Fatalf("seed %d: %d slots, not in order: %v", seed, len(slots), slots)
	}
	exact := st
	for k, at := range slots {
		if v, open := Gate(exact, first+int64(k), next, skew, at); v != Start {
			t.Fatalf("seed %d: ticket %d at its new slot +%v: %v (opens +%v)", seed, k, at.Sub(t0), v, open.Sub(t0))
		}
		exact = Started(exact, first+int64(k), next, at)
	}
	var after []time.Time
	for k, at := range slots {
		// The worker comes as early as the gate lets it: its slot less
		// the skew, or the gate's opening if later.
		at = later(at.Add(-skew), GateOpen(st, next, skew))
		if k%3 == 1 {
			at = at.Add(time.Duration(rng.IntN(2000)) * time.Microsecond) // late
		}
		if v, open := Gate(st, first+int64(k), next, skew, at); v != Start {
			t.Fatalf("seed %d: ticket %d at +%v: %v (opens +%v)", seed, k, at.Sub(t0), v, open.Sub(t0))
		}
		st = Started(st, first+int64(k), next, at)
		after = append(after, at)
	}
	if b := Breaches(old, skew, append(slices.Clone(before), after[0])); len(b) > 0 {
		t.Fatalf("seed %d: the old limit breaks across the change: %+v (starts %v, first after +%v)", seed, b[0], rel(before), after[0].Sub(t0))
	}
	last := before[len(before)-1]
	for _, l := range next {
		per := every(l)
		switch {
		case !l.Window.IsZero():
			per = l.Window.Per
		case !l.Rate.IsZero():
			per = l.Rate.Per
		}
		var held []time.Time
		for _, s := range before {
			if s.After(last.Add(-per)) {
				held = append(held, s)
			}
		}
		// Pairs of starts before the change are the old limit's to judge.
		if b := across(Breaches(Limits{l}, skew, append(held, after...)), len(held)); len(b) > 0 {
			t.Fatalf("seed %d: the new limit %s breaks across the change: %+v\nbefore %v\nafter %v", seed, l, b[0], rel(held), rel(after))
		}
	}
}

// history starts 30 to 90 jobs under ls at random times the gate allows:
// some as early as it allows, some after an idle time, some a little late.
func history(rng *rand.Rand, ls Limits, skew time.Duration) (State, []time.Time, time.Time) {
	var st State
	var starts []time.Time
	now := t0
	n := 30 + rng.IntN(60)
	tick := Config{Limits: ls}.Tick()
	for k := range n {
		switch rng.IntN(6) {
		case 0:
			now = now.Add(time.Duration(rng.IntN(20)) * tick) // idle
		case 1:
			now = now.Add(time.Duration(rng.IntN(int(tick))))
		}
		st, _, _ = Take(st, 1, 1, ls, 0, now)
		at := later(now, GateOpen(st, ls, skew))
		st = Started(st, int64(k+1), ls, at)
		starts = append(starts, at)
		now = at
	}
	return st, starts, now
}

// across keeps the breaches whose later start is one of the starts after
// the change (the first n are before it).
func across(bs []Breach, n int) []Breach {
	var out []Breach
	for _, b := range bs {
		if b.J >= n {
			out = append(out, b)
		}
	}
	return out
}

func rel(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, at := range ts {
		out[i] = at.Sub(t0)
	}
	return out
}

// A change that keeps the limits keeps the gate's marks: configure run
// again (to finish a change a crash interrupted) moves nothing but the
// line's bookings, which it makes again from the gate's marks, the same
// each time.
func TestReslotSameLimitsKeepsTheGate(t *testing.T) {
	const skew = time.Millisecond
	for name, ls := range forms {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 5))
			st, _, now := history(rng, ls, skew)
			st, _, _ = Take(st, 10, 10, ls, 0, now)
			got, slots := Reslot(st, ls, ls, skew, 10, now)
			if !GateOpen(got, ls, skew).Equal(GateOpen(st, ls, skew)) {
				t.Fatalf("the gate's opening moved: %v, was %v", GateOpen(got, ls, skew), GateOpen(st, ls, skew))
			}
			again, slots2 := Reslot(got, ls, ls, skew, 10, now)
			if !slices.Equal(slots2, slots) || !NextSlot(again, ls, 0, now).Equal(NextSlot(got, ls, 0, now)) {
				t.Fatalf("a second reslot moved slots: %v, were %v", rel(slots2), rel(slots))
			}
		})
	}
}
