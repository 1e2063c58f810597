package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// slowDown records a slow-down and returns the state after.
func slowDown(t *testing.T, st engine.State, r engine.SlowDownRequest) slot.State {
	t.Helper()
	s, err := st.SlowDown(t.Context(), r)
	if err != nil {
		t.Fatalf("SlowDown(%+v): %v", r, err)
	}
	return s
}

func wantSlow(t *testing.T, what string, s slot.State, until time.Time, ticket, n int64) {
	t.Helper()
	if !s.SlowUntil.Equal(until) || s.SlowTicket != ticket || s.SlowDowns != n {
		t.Fatalf("%s: slow until %v, ticket %d, %d slow-downs; want %v, %d, %d", what, s.SlowUntil, s.SlowTicket, s.SlowDowns, until, ticket, n)
	}
}

func testSlowDown(t *testing.T, newState func(t *testing.T) engine.State) {
	// A slow-down only extends: an answer that ends sooner than the
	// stored one is counted and changes nothing else; a later one takes
	// its place, with its ticket.
	t.Run("Extends", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		gen := getQueue(t, st, name).Gen
		s := slowDown(t, st, engine.SlowDownRequest{Queue: name, Gen: gen, Ticket: 3, Until: at(10 * time.Second), Hold: at(11 * time.Second)})
		wantSlow(t, "first", s, at(10*time.Second), 3, 1)
		if !s.SlowHold.Equal(at(11 * time.Second)) {
			t.Fatalf("slow hold %v, want %v", s.SlowHold, at(11*time.Second))
		}
		s = slowDown(t, st, engine.SlowDownRequest{Queue: name, Gen: gen, Ticket: 5, Until: at(5 * time.Second), Hold: at(6 * time.Second)})
		wantSlow(t, "sooner", s, at(10*time.Second), 3, 2)
		s = slowDown(t, st, engine.SlowDownRequest{Queue: name, Gen: gen, Ticket: 5, Until: at(20 * time.Second), Hold: at(21 * time.Second)})
		wantSlow(t, "later", s, at(20*time.Second), 5, 3)
		wantSlow(t, "read back", getQueue(t, st, name).State, at(20*time.Second), 5, 3)
	})

	// An answer is counted once: its write sent again (a retry of one
	// that landed) finds it counted and changes nothing, also after
	// other answers of other tickets were counted meanwhile; an answer
	// of its job after it is counted.
	t.Run("CountedOnce", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		gen := getQueue(t, st, name).Gen
		a := engine.SlowDownRequest{Queue: name, Gen: gen, Ticket: 3, Until: at(10 * time.Second), Hold: at(11 * time.Second), Answer: "3.1.0"}
		wantSlow(t, "first", slowDown(t, st, a), at(10*time.Second), 3, 1)
		wantSlow(t, "sent again", slowDown(t, st, a), at(10*time.Second), 3, 1)
		b := engine.SlowDownRequest{Queue: name, Gen: gen, Ticket: 4, Until: at(20 * time.Second), Hold: at(21 * time.Second), Answer: "4.1.0"}
		wantSlow(t, "another ticket's", slowDown(t, st, b), at(20*time.Second), 4, 2)
		wantSlow(t, "the first sent again after it", slowDown(t, st, a), at(20*time.Second), 4, 2)
		wantSlow(t, "the second sent again", slowDown(t, st, b), at(20*time.Second), 4, 2)
		next := a
		next.Until, next.Hold, next.Answer = at(30*time.Second), at(31*time.Second), "3.1.1"
		wantSlow(t, "the first job's next answer", slowDown(t, st, next), at(30*time.Second), 3, 3)
		wantSlow(t, "read back", getQueue(t, st, name).State, at(30*time.Second), 3, 3)
	})

	// A stale generation, or a queue that is gone, writes nothing.
	t.Run("Generations", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		gen := getQueue(t, st, name).Gen
		if gen != 0 {
			_, err := st.SlowDown(t.Context(), engine.SlowDownRequest{Queue: name, Gen: gen + 1, Ticket: 1, Until: at(time.Second)})
			if !errors.Is(err, engine.ErrQueueNotFound) {
				t.Fatalf("SlowDown of another generation: %v, want ErrQueueNotFound", err)
			}
			wantSlow(t, "after a stale one", getQueue(t, st, name).State, time.Time{}, 0, 0)
		}
		_, err := st.SlowDown(t.Context(), engine.SlowDownRequest{Queue: name + "-none", Ticket: 1, Until: at(time.Second)})
		if !errors.Is(err, engine.ErrQueueNotFound) {
			t.Fatalf("SlowDown of no queue: %v, want ErrQueueNotFound", err)
		}
	})

	// Concurrent answers are all counted, and the latest end wins.
	t.Run("Concurrent", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		const n = 16
		var wg sync.WaitGroup
		for k := range n {
			wg.Go(func() {
				until := at(time.Duration(1+(k*7)%n) * time.Second)
				if _, err := st.SlowDown(t.Context(), engine.SlowDownRequest{Queue: name, Ticket: int64(k + 1), Until: until, Hold: until}); err != nil {
					t.Errorf("SlowDown: %v", err)
				}
			})
		}
		wg.Wait()
		s := getQueue(t, st, name).State
		if !s.SlowUntil.Equal(at(n*time.Second)) || s.SlowDowns != n {
			t.Fatalf("slow until %v after %d slow-downs, want %v and %d", s.SlowUntil, s.SlowDowns, at(n*time.Second), n)
		}
	})

	// The gate keeps a slow-down, by the store's own condition (the
	// hint the caller sends does not show it): nothing starts before its end;
	// after it the answered ticket first, the others once it started or
	// once the hold is over; then the limit's arithmetic as before.
	t.Run("HoldEnds", func(t *testing.T) { testSlowHoldEnds(t, newState(t)) })

	// A key's slow-down is kept on its meter, and comes back as it was
	// put; the key's side of the gate keeps it.
	t.Run("Meter", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		ls := slot.Limits{{Interval: time.Second}}
		m := slot.Meter{Queue: name, Key: "k", Gen: 2}
		m, _, _ = slot.KeyGate(m, 4, ls, 0, at(0))
		m.State = slot.SlowDown(m.State, 4, at(10*time.Second), at(11*time.Second), "4.1.0")
		if _, err := st.PutMeter(t.Context(), m, 0, time.Time{}); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetMeter(t.Context(), name, "k")
		if err != nil {
			t.Fatal(err)
		}
		wantSlow(t, "meter", got.State, at(10*time.Second), 4, 1)
		if !slot.SlowCounted(got.State, 4, "4.1.0") {
			t.Fatalf("the meter read back forgot the answer it counted: %q", got.State.SlowSeen)
		}
		if !got.State.SlowHold.Equal(at(11 * time.Second)) {
			t.Fatalf("meter's slow hold %v, want %v", got.State.SlowHold, at(11*time.Second))
		}
		if _, v, open := slot.KeyGate(got, 5, ls, 0, at(5*time.Second)); v != slot.KeyEarly || !open.Equal(at(10*time.Second)) {
			t.Fatalf("the key's gate during its slow-down: %v until %v", v, open)
		}
		if next, v, _ := slot.KeyGate(got, 4, ls, 0, at(10*time.Second)); v != slot.KeyStart || next.State.SlowTicket != 0 {
			t.Fatalf("the answered ticket at the end: %v, slow ticket %d", v, next.State.SlowTicket)
		}
	})

	t.Run("Gate", func(t *testing.T) {
		for _, f := range everyForm() {
			t.Run(f.name, func(t *testing.T) {
				testSlowGate(t, newState(t), f.ls)
			})
		}
	})
}

func testSlowGate(t *testing.T, st engine.State, ls slot.Limits) {
	t.Helper()
	name := newQueueUnder(t, st, ls)
	q := getQueue(t, st, name)
	skew := q.Config.Skew
	tk, err := st.Take(t.Context(), engine.TakeRequest{Queue: name, N: 4, Line: 4, Limits: ls, Now: base})
	if err != nil {
		t.Fatal(err)
	}
	gate := func(ticket int64, answered bool, now time.Time, seen slot.State) (slot.State, *engine.GateError) {
		t.Helper()
		s, err := st.Gate(t.Context(), engine.GateRequest{Queue: name, Ticket: ticket, Limits: ls, Skew: skew, Now: now, At: now, Scheduled: answered, Seen: seen, Gen: q.Gen})
		var ge *engine.GateError
		if err != nil && !errors.As(err, &ge) {
			t.Fatalf("Gate ticket %d at +%v: %v", ticket, now.Sub(base), err)
		}
		return s, ge
	}
	first, _ := gate(tk.First, false, tk.Slots[0], tk.State)
	until, hold := tk.Slots[0].Add(10*time.Second), tk.Slots[0].Add(11*time.Second)
	_ = first
	// The hint each gate sends is the queue's state without the
	// slow-down: only the store's own condition can refuse.
	first = slowDown(t, st, engine.SlowDownRequest{Queue: name, Gen: q.Gen, Ticket: tk.First, Until: until, Hold: hold})
	first.SlowUntil, first.SlowTicket, first.SlowHold = time.Time{}, 0, time.Time{}
	// The next ticket, at its slot and just before the end: refused, the
	// end named.
	for _, now := range []time.Time{tk.Slots[1], until.Add(-time.Millisecond)} {
		if _, ge := gate(tk.First+1, false, now, first); ge == nil || ge.Verdict != slot.Early || !ge.OpenAt.Equal(until) {
			t.Fatalf("ticket %d at +%v during the slow-down: %+v, want early until +%v", tk.First+1, now.Sub(base), ge, until.Sub(base))
		}
	}
	// At the end, the answered ticket has it first.
	if _, ge := gate(tk.First+1, false, until, first); ge == nil || ge.Verdict != slot.Early || !ge.OpenAt.Equal(hold) {
		t.Fatalf("ticket %d at the end: %+v, want early until the hold +%v", tk.First+1, ge, hold.Sub(base))
	}
	s, ge := gate(tk.First, true, until, first)
	if ge != nil {
		t.Fatalf("the answered ticket at the end: %+v, want a start", ge)
	}
	if s.SlowTicket != 0 || !s.SlowUntil.Equal(until) {
		t.Fatalf("after the answered ticket's start: slow ticket %d until %v; want 0 and %v", s.SlowTicket, s.SlowUntil, until)
	}
	// Then the others, by the limit's arithmetic: no start closer than
	// the form allows after the answered one's.
	starts := []time.Time{until}
	now := until
	for ticket := tk.First + 1; ticket <= tk.First+3; {
		_, ge := gate(ticket, false, now, first)
		switch {
		case ge == nil:
			starts = append(starts, now)
			ticket++
		case ge.Verdict == slot.Early && ge.OpenAt.After(now):
			now = ge.OpenAt
		default:
			t.Fatalf("ticket %d at +%v: %+v", ticket, now.Sub(base), ge)
		}
	}
	if b := slot.Breaches(ls, skew, starts); len(b) > 0 {
		t.Fatalf("starts after the slow-down break %v: %+v", ls, b[0])
	}
}

// A slow-down whose answered ticket never comes holds the others until
// its hold only.
func testSlowHoldEnds(t *testing.T, st engine.State) {
	t.Helper()
	name := newQueue(t, st, interval)
	tk := take(t, st, name, 2, 2, base)
	until, hold := at(10*time.Second), at(10*time.Second+500*time.Millisecond)
	slowDown(t, st, engine.SlowDownRequest{Queue: name, Ticket: tk.First, Until: until, Hold: hold})
	r := engine.GateRequest{Queue: name, Ticket: tk.First + 1, Interval: interval, Now: hold, At: hold}
	if _, err := st.Gate(t.Context(), r); err != nil {
		t.Fatalf("ticket %d at the hold's end: %v, want a start", tk.First+1, err)
	}
}
