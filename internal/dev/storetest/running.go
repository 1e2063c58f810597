package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// capReq is a gate under a running cap of max, for an attempt whose lease
// ends at until.
func capReq(queue string, ticket int64, now time.Time, max int, until time.Time) engine.GateRequest {
	r := gateReq(queue, ticket, now)
	r.MaxRunning, r.Until = max, until
	return r
}

// diffRunning describes how a running map differs from want, or returns
// "" (nil and empty are alike).
func diffRunning(got, want map[int64]time.Time) string {
	var d []string
	for t, w := range want {
		if g, ok := got[t]; !ok || !g.Equal(w) {
			d = append(d, fmt.Sprintf("ticket %d: got %v (present %v), want %v", t, g, ok, w))
		}
	}
	for t, g := range got {
		if _, ok := want[t]; !ok {
			d = append(d, fmt.Sprintf("ticket %d: got %v, want none", t, g))
		}
	}
	slices.Sort(d)
	return strings.Join(d, "; ")
}

// liveAt returns the entries of a running map whose lease has not ended
// at now.
func liveAt(m map[int64]time.Time, now time.Time) map[int64]time.Time {
	out := map[int64]time.Time{}
	for t, u := range m {
		if now.Before(u) {
			out[t] = u
		}
	}
	return out
}

func wantRunning(t *testing.T, what string, got, want map[int64]time.Time) {
	t.Helper()
	if d := diffRunning(got, want); d != "" {
		t.Errorf("%s: running %s", what, d)
	}
}

// testCap: a queue's running cap (GateRequest.MaxRunning), held in the
// gate's own atomic step, and EndRun.
func testCap(t *testing.T, newState func(t *testing.T) engine.State) {
	// The same walk whatever the hint: none, a map that is not there, the
	// state of the caller's last answer (stale after other callers'
	// writes), the exact state.
	hints := []struct {
		name string
		seen func(last, stored slot.State) slot.State
	}{
		{"NoHint", func(last, stored slot.State) slot.State { return slot.State{} }},
		{"EmptyMapHint", func(last, stored slot.State) slot.State {
			return slot.State{Running: map[int64]time.Time{}}
		}},
		{"LastAnswer", func(last, stored slot.State) slot.State { return last }},
		{"Exact", func(last, stored slot.State) slot.State { return stored }},
	}
	for _, h := range hints {
		t.Run("Cap"+h.name, func(t *testing.T) {
			st := newState(t)
			ctx := t.Context()
			name, _ := lineUp(t, st, 6)
			const max = 2
			lease := base.Add(time.Minute)
			var last slot.State
			gate := func(ticket int64, now, until time.Time) (slot.State, error) {
				t.Helper()
				r := capReq(name, ticket, now, max, until)
				r.Seen = h.seen(last, getQueue(t, st, name).State)
				s, err := st.Gate(ctx, r)
				var ge *engine.GateError
				switch {
				case err == nil:
					last = s
					// Ended entries may linger in a store's answer and
					// record; those that run must be the same.
					if stored := getQueue(t, st, name).State; diffRunning(liveAt(s.Running, now), liveAt(stored.Running, now)) != "" {
						t.Errorf("ticket %d: Gate answered running %v, stored %v", ticket, s.Running, stored.Running)
					}
				case errors.As(err, &ge):
					last = ge.State
				}
				return s, err
			}

			// Two places: tickets 1 and 2 take them.
			if _, err := gate(1, base, lease); err != nil {
				t.Fatalf("ticket 1: %v", err)
			}
			s, err := gate(2, at(interval), lease)
			if err != nil {
				t.Fatalf("ticket 2: %v", err)
			}
			wantRunning(t, "after two starts", s.Running, map[int64]time.Time{1: lease, 2: lease})

			// The third finds both taken, and the gate writes nothing.
			_, err = gate(3, at(2*interval), lease)
			ge := wantGate(t, "ticket 3 with both places taken", err, slot.Full)
			wantRunning(t, "GateError.State", ge.State.Running, map[int64]time.Time{1: lease, 2: lease})
			stored := getQueue(t, st, name).State
			wantState(t, "state after a full gate", stored, slot.State{Ticket: 6, Current: 2, Clock: at(5 * interval), LastStart: at(interval)})
			wantRunning(t, "state after a full gate", stored.Running, map[int64]time.Time{1: lease, 2: lease})

			// A later start's end (its place would end after this
			// one's) frees nothing.
			if err := st.EndRun(ctx, name, 0, 1, lease.Add(time.Second)); err != nil {
				t.Fatalf("EndRun(1) of another start: %v", err)
			}
			wantRunning(t, "after EndRun(1) of another start", getQueue(t, st, name).State.Running, map[int64]time.Time{1: lease, 2: lease})
			// An attempt that ends frees its place, once.
			for range 2 {
				if err := st.EndRun(ctx, name, 0, 1, lease); err != nil {
					t.Fatalf("EndRun(1): %v", err)
				}
				wantRunning(t, "after EndRun(1)", getQueue(t, st, name).State.Running, map[int64]time.Time{2: lease})
			}
			if err := st.EndRun(ctx, name, 0, 99, lease); err != nil {
				t.Errorf("EndRun of a ticket with no place: %v", err)
			}
			later := at(5 * time.Minute)
			if s, err = gate(3, at(2*interval), later); err != nil {
				t.Fatalf("ticket 3 after EndRun(1): %v", err)
			}
			wantRunning(t, "after ticket 3", s.Running, map[int64]time.Time{2: lease, 3: later})

			// Ticket 2's lease ends (its worker died): it counts no more,
			// and the next start drops it.
			now := lease
			if s, err = gate(4, now, now.Add(time.Minute)); err != nil {
				t.Fatalf("ticket 4 after ticket 2's lease: %v", err)
			}
			wantRunning(t, "after ticket 4", s.Running, map[int64]time.Time{3: later, 4: now.Add(time.Minute)})
			wantRunning(t, "stored after ticket 4", getQueue(t, st, name).State.Running, map[int64]time.Time{3: later, 4: now.Add(time.Minute)})
			_, err = gate(5, now.Add(interval), now.Add(time.Hour))
			wantGate(t, "ticket 5 with 3 and 4 running", err, slot.Full)

			// Ticket 4 passed, and its worker died before it ran: its next
			// delivery, past the lease, takes its own place again.
			now = now.Add(2 * time.Minute)
			if s, err = gate(4, now, now.Add(time.Minute)); err != nil {
				t.Fatalf("ticket 4 again past its lease: %v", err)
			}
			wantRunning(t, "after ticket 4 again", s.Running, map[int64]time.Time{3: later, 4: now.Add(time.Minute)})
			if s := getQueue(t, st, name).State; s.Current != 4 || !s.LastStart.Equal(now) {
				t.Errorf("state after ticket 4 again: current %d, last start %v; want 4, %v", s.Current, s.LastStart, now)
			}

			// Its worker died before the claim once more: its next
			// delivery, within the lease and with both places taken (3
			// and its own), passes again: its own place is not counted
			// against it.
			now = now.Add(interval)
			if s, err = gate(4, now, now.Add(time.Minute)); err != nil {
				t.Fatalf("ticket 4 again within its lease, every place taken: %v", err)
			}
			wantRunning(t, "after ticket 4 within its lease", s.Running, map[int64]time.Time{3: later, 4: now.Add(time.Minute)})
		})
	}

	// The running map a store answers with is the caller's: changing it
	// changes nothing stored.
	// A ticket that passes the gate again before its first gate's claim
	// landed (a duplicate delivery) rewrites its running place with a
	// later end; the attempt that runs is the first gate's, and its end
	// still frees the place. An end of another generation frees nothing.
	t.Run("CapEndRunRegated", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := queueOfGen(t, st, 7)
		take(t, st, name, 2, 2, base)
		first, again := base.Add(time.Minute), base.Add(time.Minute+interval)
		if _, err := st.Gate(ctx, capReq(name, 1, base, 1, first)); err != nil {
			t.Fatalf("ticket 1: %v", err)
		}
		if _, err := st.Gate(ctx, capReq(name, 1, at(interval), 1, again)); err != nil {
			t.Fatalf("ticket 1 again: %v", err)
		}
		wantRunning(t, "after the second gate", getQueue(t, st, name).State.Running, map[int64]time.Time{1: again})
		if err := st.EndRun(ctx, name, 12345, 1, first); err != nil {
			t.Fatalf("EndRun of another generation: %v", err)
		}
		wantRunning(t, "after EndRun of another generation", getQueue(t, st, name).State.Running, map[int64]time.Time{1: again})
		if err := st.EndRun(ctx, name, 0, 1, first); err != nil {
			t.Fatalf("EndRun: %v", err)
		}
		wantRunning(t, "after the first gate's attempt ended", getQueue(t, st, name).State.Running, map[int64]time.Time{})
	})

	t.Run("CapNoAliasing", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, _ := lineUp(t, st, 2)
		until := at(time.Minute)
		s, err := st.Gate(ctx, capReq(name, 1, base, 1, until))
		if err != nil {
			t.Fatal(err)
		}
		s.Running[1] = base
		q := getQueue(t, st, name)
		q.State.Running[1] = base
		_, err = st.Gate(ctx, capReq(name, 2, at(interval), 1, until))
		ge := wantGate(t, "ticket 2 with the one place taken", err, slot.Full)
		ge.State.Running[1] = base
		wantRunning(t, "stored after the answers were changed", getQueue(t, st, name).State.Running, map[int64]time.Time{1: until})
	})

	t.Run("EndRunNotFound", func(t *testing.T) {
		st := newState(t)
		wantErr(t, "EndRun of a missing queue", st.EndRun(t.Context(), queueName(t), 0, 1, base), engine.ErrQueueNotFound)
		// A queue that never ran anything under a cap has no places.
		name, _ := lineUp(t, st, 1)
		if err := st.EndRun(t.Context(), name, 0, 1, base); err != nil {
			t.Errorf("EndRun on a queue without running places: %v", err)
		}
	})

	// A queue gated without a cap keeps no running places.
	t.Run("NoCapNoPlaces", func(t *testing.T) {
		st := newState(t)
		name, _ := lineUp(t, st, 1)
		s, err := st.Gate(t.Context(), gateReq(name, 1, base))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Running) != 0 || len(getQueue(t, st, name).State.Running) != 0 {
			t.Errorf("running %v after a gate without a cap", s.Running)
		}
	})

	// Many workers at the gate of a capped queue at once, each with a
	// ticket the limit would let through (a rate whose burst lets n gates
	// pass together),
	// so the cap alone decides: exactly max pass, and never more than max
	// places are taken. Then places free up one at a time, and the rest
	// race again.
	t.Run("ConcurrentCap", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		const (
			n   = 30
			max = 3
		)
		ls := slot.Limits{{Rate: api.Rate{N: 1000, Per: time.Second}, Burst: 2 * n}}
		name := newQueueUnder(t, st, ls)
		if _, err := st.Take(ctx, engine.TakeRequest{Queue: name, N: n, Limits: ls, Now: base}); err != nil {
			t.Fatal(err)
		}
		until := at(time.Hour)
		race := func(tickets []int64, now time.Time, seen slot.State) (passed, refused []int64) {
			t.Helper()
			errs := make([]error, len(tickets))
			atOnce(len(tickets), func(i int) {
				r := engine.GateRequest{Queue: name, Ticket: tickets[i], Limits: ls, Now: now,
					Scheduled: true, MaxRunning: max, Until: until, Seen: seen}
				_, errs[i] = st.Gate(ctx, r)
			})
			for i, err := range errs {
				var ge *engine.GateError
				switch {
				case err == nil:
					passed = append(passed, tickets[i])
				case errors.As(err, &ge) && ge.Verdict == slot.Full:
					refused = append(refused, tickets[i])
				default:
					t.Errorf("ticket %d: got %v, want a pass or slot.Full", tickets[i], err)
				}
			}
			return passed, refused
		}
		all := make([]int64, n)
		for i := range all {
			all[i] = int64(i + 1)
		}
		passed, refused := race(all, base, slot.State{})
		if len(passed) != max {
			t.Fatalf("%d of %d gates passed under a cap of %d: %v", len(passed), n, max, passed)
		}
		want := map[int64]time.Time{}
		for _, ticket := range passed {
			want[ticket] = until
		}
		s := getQueue(t, st, name).State
		wantRunning(t, "after the race", s.Running, want)

		// One place frees up at a time; of the refused, one takes it.
		now := base
		for round := range 3 {
			if err := st.EndRun(ctx, name, 0, passed[0], getQueue(t, st, name).State.Running[passed[0]]); err != nil {
				t.Fatal(err)
			}
			delete(want, passed[0])
			now = now.Add(time.Second)
			var won []int64
			won, refused = race(refused, now, getQueue(t, st, name).State)
			if len(won) != 1 {
				t.Fatalf("round %d: %d gates passed for one free place: %v", round, len(won), won)
			}
			want[won[0]] = until
			passed = append(passed[1:], won[0])
			if s := getQueue(t, st, name).State; s.RunningAt(now) != max || diffRunning(s.Running, want) != "" {
				t.Fatalf("round %d: running %v, want %v", round, s.Running, want)
			}
		}

		// Every lease ends (the workers died): the ended places count no
		// more, each gate drops them as it passes, and still only max
		// of the rest take places, though every one of them read the
		// ended places and would drop them. (A start without a cap first
		// moves the last start to now, so that the gates race in the
		// busy form, which does not fail as soon as one of them passes.)
		now = until
		until = now.Add(time.Hour)
		if _, err := st.Gate(ctx, engine.GateRequest{Queue: name, Ticket: refused[0], Limits: ls, Now: now, Scheduled: true}); err != nil {
			t.Fatal(err)
		}
		passed, _ = race(refused[1:], now, getQueue(t, st, name).State)
		if len(passed) != max {
			t.Fatalf("%d gates passed past the leases' end under a cap of %d: %v", len(passed), max, passed)
		}
		want = map[int64]time.Time{}
		for _, ticket := range passed {
			want[ticket] = until
		}
		wantRunning(t, "after the leases ended", liveAt(getQueue(t, st, name).State.Running, now), want)
	})
}
