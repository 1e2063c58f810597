package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// testBooked holds a store to what a queue whose line books its starts
// needs (slot.Config.BooksStarts): the gate of a booked start is a read
// (Admit); a take remembers where the line's current run of bookings
// began (RunFrom); a take, a gate or a slow-down that lets starts cut in
// turns the queue gated in the same write, settled as the engine's pure
// functions say (engine.TakeRequest.Gating, GateRequest.Started,
// slot.GateAll); and a take lifts a gated state that has run its course.
func testBooked(t *testing.T, newState func(t *testing.T) engine.State) {
	rate := slot.Limits{{Rate: api.Rate{N: 10, Per: time.Second}, Burst: 2}}
	t.Run("Admit", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		cfg := slot.Config{Limits: rate, Targets: []string{"https://example.com/*"}}.WithDefaults()
		if err := st.CreateQueue(t.Context(), engine.Queue{Name: name, Gen: 5, Config: cfg, CreatedAt: base}); err != nil {
			t.Fatalf("CreateQueue(%s): %v", name, err)
		}
		tk := takeUnder(t, st, engine.TakeRequest{Queue: name, N: 3, Line: 3, Limits: rate, Now: base, Gen: 5})
		r := engine.AdmitRequest{Queue: name, Gen: 5, Ticket: tk.First, At: tk.Slots[0]}
		q, err := st.Admit(t.Context(), r)
		if err != nil || q.Name != name || q.State.Ticket != 3 {
			t.Fatalf("Admit = %+v, %v; want the queue as read, no error", q.State, err)
		}
		if after := getQueue(t, st, name).State; diffState(after, tk.State) != "" {
			t.Errorf("Admit wrote the queue: %s", diffState(after, tk.State))
		}
		if _, err := st.Admit(t.Context(), engine.AdmitRequest{Queue: name, Gen: 6, Ticket: 1, At: tk.Slots[0]}); !errors.Is(err, engine.ErrQueueNotFound) {
			t.Errorf("Admit of another generation = %v, want ErrQueueNotFound", err)
		}
		if _, err := st.Admit(t.Context(), engine.AdmitRequest{Queue: name + "-none", Ticket: 1, At: base}); !errors.Is(err, engine.ErrQueueNotFound) {
			t.Errorf("Admit of no queue = %v, want ErrQueueNotFound", err)
		}
		if _, err := st.Pause(t.Context(), name, time.Time{}); err != nil {
			t.Fatal(err)
		}
		wantVerdict(t, "paused", st, r, slot.Paused)
		if _, err := st.Unpause(t.Context(), name, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Purge(t.Context(), name); err != nil {
			t.Fatal(err)
		}
		wantVerdict(t, "purged", st, r, slot.Purged)
	})
	t.Run("RunFrom", func(t *testing.T) {
		st := newState(t)
		name := newQueueUnder(t, st, rate)
		want := slot.State{}
		for i, now := range []time.Time{base, at(10 * time.Millisecond), at(5 * time.Second)} {
			tk := takeUnder(t, st, engine.TakeRequest{Queue: name, N: 2, Line: 2, Limits: rate, Now: now})
			want, _, _ = slot.Take(want, 2, 2, rate, 0, now)
			if !tk.State.RunFrom.Equal(want.RunFrom) || !tk.State.Clock.Equal(want.Clock) {
				t.Fatalf("take %d: run from %v, clock %v; want %v, %v", i, tk.State.RunFrom, tk.State.Clock, want.RunFrom, want.Clock)
			}
		}
	})
	t.Run("Gating", func(t *testing.T) {
		st := newState(t)
		name := newQueueUnder(t, st, rate)
		tk := takeUnder(t, st, engine.TakeRequest{Queue: name, N: 20, Line: 20, Limits: rate, Now: base})
		// A scheduled job's take turns the queue gated, settled.
		settle := slot.Settling{Now: at(305 * time.Millisecond), By: at(310 * time.Millisecond)}
		r := engine.TakeRequest{Queue: name, N: 1, Limits: rate, Now: at(300 * time.Millisecond), Seen: tk.State,
			CutIns: true, Settle: settle, Until: at(time.Minute)}
		gated := takeUnder(t, st, r)
		want := r.Gating(tk.State)
		want.Ticket = 21
		wantState(t, "after the take that lets a start cut in", gated.State, want)
		if !gated.State.Gated || gated.State.GatedThrough == 0 || !gated.State.LastStart.After(base) {
			t.Fatalf("not gated and settled: %+v", gated.State)
		}
		// A take that lets nothing cut in keeps it gated while its
		// bookings lie ahead, and lifts it once they and GatedUntil
		// have passed.
		busy := takeUnder(t, st, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: rate, Now: at(time.Second), Seen: gated.State})
		if !busy.State.Gated {
			t.Fatalf("a take with the line booked ahead lifted the gated state: %+v", busy.State)
		}
		idle := takeUnder(t, st, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: rate, Now: at(2 * time.Minute), Seen: busy.State})
		if idle.State.Gated || !idle.State.GatedUntil.IsZero() || idle.State.GatedThrough != 0 {
			t.Fatalf("a take on an idle queue past GatedUntil kept it gated: %+v", idle.State)
		}
	})
	t.Run("CutIn", func(t *testing.T) {
		st := newState(t)
		name := newQueueUnder(t, st, rate)
		tk := takeUnder(t, st, engine.TakeRequest{Queue: name, N: 20, Line: 20, Limits: rate, Now: base})
		settle := slot.Settling{Now: at(500 * time.Millisecond), By: at(505 * time.Millisecond)}
		r := engine.GateRequest{Queue: name, Ticket: 3, Limits: rate, Now: settle.Now, Seen: tk.State, CutIn: true, Settle: settle}
		if v, open := r.Decide(tk.State); v == slot.Early {
			r.At = open
		}
		got, err := st.Gate(t.Context(), r)
		if err != nil {
			t.Fatalf("Gate(cut in) = %v", err)
		}
		wantState(t, "after a start that cut in", got, r.Started(tk.State))
		if !got.Gated {
			t.Fatal("a start that cut in left the queue not gated")
		}
	})
	t.Run("Alone", func(t *testing.T) {
		st := newState(t)
		name := newQueueUnder(t, st, rate)
		tk := takeUnder(t, st, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: rate, Now: base})
		late := at(time.Second)
		r := engine.GateRequest{Queue: name, Ticket: 1, Limits: rate, Now: late, At: late, Seen: tk.State, Alone: true}
		more := takeUnder(t, st, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: rate, Now: late, Seen: tk.State})
		r.Seen = more.State
		var ge *engine.GateError
		if _, err := st.Gate(t.Context(), r); !errors.As(err, &ge) || ge.Verdict != slot.Passed {
			t.Fatalf("a late lone start with a booking behind it since = %v, want passed", err)
		}
		r.Ticket = 2
		if _, err := st.Gate(t.Context(), r); err != nil {
			t.Fatalf("a late start of the line's last booking = %v, want it through", err)
		}
	})
	t.Run("SlowDownGates", func(t *testing.T) {
		st := newState(t)
		name := newQueueUnder(t, st, rate)
		takeUnder(t, st, engine.TakeRequest{Queue: name, N: 2, Line: 2, Limits: rate, Now: base})
		s := slowDown(t, st, engine.SlowDownRequest{Queue: name, Ticket: 1, Until: at(time.Minute), Hold: at(time.Minute), Gate: true})
		if !s.Gated || !getQueue(t, st, name).State.Gated {
			t.Fatalf("a slow-down that gates left the queue not gated: %+v", s)
		}
	})
}

// takeUnder is Take of r, failing the test on an error.
func takeUnder(t *testing.T, st engine.State, r engine.TakeRequest) engine.Taken {
	t.Helper()
	tk, err := st.Take(t.Context(), r)
	if err != nil {
		t.Fatalf("Take(%+v): %v", r, err)
	}
	return tk
}

// wantVerdict holds Admit of r to a *engine.GateError with verdict v.
func wantVerdict(t *testing.T, what string, st engine.State, r engine.AdmitRequest, v slot.Verdict) {
	t.Helper()
	var ge *engine.GateError
	if _, err := st.Admit(t.Context(), r); !errors.As(err, &ge) || ge.Verdict != v {
		t.Errorf("Admit on a %s queue = %v, want the verdict %v", what, err, v)
	}
}
