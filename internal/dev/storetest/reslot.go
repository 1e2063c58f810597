package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

func testReconfigure(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("ReplacesConfigAndLimitState", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		old := limitForms[0].ls
		name := newQueueUnder(t, st, old)
		tk, err := st.Take(ctx, engine.TakeRequest{Queue: name, N: 6, Line: 6, Limits: old, Now: base})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Gate(ctx, engine.GateRequest{Queue: name, Ticket: tk.First, Limits: old, Now: tk.Slots[0]}); err != nil {
			t.Fatal(err)
		}
		q := getQueue(t, st, name)
		cfg := q.Config
		cfg.Limits = limitForms[2].ls
		var seen slot.State
		var want slot.State
		var rec engine.Rebooked
		got, err := st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: name, Gen: q.Gen, Config: cfg, Reslot: func(s slot.State) (slot.State, *engine.Rebooked, error) {
			seen = s
			base := slot.Seed(s, old, cfg.Limits, cfg.Skew)
			rec = engine.Rebooked{After: s.Current, Upto: s.Current + 5, At: at(time.Second), Base: base}
			line, _ := slot.Book(base, cfg.Limits, 0, 5, at(time.Second))
			rec.First, rec.Last, rec.From, rec.LineBase, rec.Keys = s.Current+6, s.Current+8, at(2*time.Second), line, true
			want, _ = slot.Book(line, cfg.Limits, 0, 3, at(2*time.Second))
			return want, &rec, nil
		}})
		if err != nil {
			t.Fatalf("Reconfigure: %v", err)
		}
		wantState(t, "Reslot's state", seen, q.State)
		wantState(t, "answer", got, want)
		after := getQueue(t, st, name)
		wantState(t, "state after Reconfigure", after.State, want)
		if !sameConfig(after.Config, cfg) {
			t.Errorf("Config = %+v, want %+v", after.Config, cfg)
		}
		// What the change did to the queued jobs is stored with it.
		if r := after.Rebooked; r == nil || r.After != rec.After || r.Upto != rec.Upto || !r.At.Equal(rec.At) {
			t.Errorf("Rebooked = %+v, want %+v", r, rec)
		} else {
			wantState(t, "Rebooked's base", r.Base, rec.Base)
			if r.First != rec.First || r.Last != rec.Last || !r.From.Equal(rec.From) || r.Keys != rec.Keys {
				t.Errorf("Rebooked's line = %d..%d from %v (keys %t), want %d..%d from %v (keys %t)", r.First, r.Last, r.From, r.Keys, rec.First, rec.Last, rec.From, rec.Keys)
			}
			wantState(t, "Rebooked's line base", r.LineBase, rec.LineBase)
		}
		_, err = st.Take(ctx, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: old, Now: base})
		wantErr(t, "Take under the old limits", err, engine.ErrLimitChanged)
		next, err := st.Take(ctx, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: cfg.Limits, Now: at(time.Second)})
		if err != nil {
			t.Fatalf("Take under the new limits: %v", err)
		}
		if _, _, slots := slot.Take(want, 1, 1, cfg.Limits, 0, at(time.Second)); !next.Slots[0].Equal(slots[0]) {
			t.Errorf("the first take after: slot %s, want %s (the new arithmetic from the stored state)", next.Slots[0].Sub(base), slots[0].Sub(base))
		}
	})

	t.Run("RefusesAndWritesNothing", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := newQueueUnder(t, st, limitForms[1].ls)
		q := getQueue(t, st, name)
		cfg := q.Config
		cfg.Limits = limitForms[0].ls
		boom := errors.New("boom")
		_, err := st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: name, Config: cfg, Reslot: func(s slot.State) (slot.State, *engine.Rebooked, error) { return s, nil, boom }})
		wantErr(t, "Reconfigure whose Reslot fails", err, boom)
		if after := getQueue(t, st, name); !sameConfig(after.Config, q.Config) {
			t.Errorf("a refused Reconfigure wrote the config: %+v", after.Config)
		}
		noop := func(s slot.State) (slot.State, *engine.Rebooked, error) { return s, nil, nil }
		_, err = st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: queueName(t), Config: cfg, Reslot: noop})
		wantErr(t, "Reconfigure of a missing queue", err, engine.ErrQueueNotFound)
		if q.Gen != 0 {
			_, err = st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: name, Gen: q.Gen + 1, Config: cfg, Reslot: noop})
			wantErr(t, "Reconfigure of another generation", err, engine.ErrQueueNotFound)
		}
	})

	// Takes that race a Reconfigure all land, each under the limits it
	// met: none is lost, and none under the old limits lands after it.
	t.Run("RacesTakes", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		old, next := limitForms[0].ls, limitForms[1].ls
		name := newQueueUnder(t, st, old)
		q := getQueue(t, st, name)
		cfg := q.Config
		cfg.Limits = next
		const takers = 8
		var wg sync.WaitGroup
		errs := make(chan error, takers)
		for range takers {
			wg.Go(func() {
				for _, ls := range []slot.Limits{old, next, next, next} {
					_, err := st.Take(ctx, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: ls, Now: base})
					if err == nil || !errors.Is(err, engine.ErrLimitChanged) {
						errs <- err
						return
					}
				}
				errs <- errors.New("no take landed")
			})
		}
		var calls int
		_, err := st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: name, Config: cfg, Reslot: func(s slot.State) (slot.State, *engine.Rebooked, error) {
			calls++
			out, _ := slot.Reslot(s, old, next, cfg.Skew, int(s.Ticket-s.Current), base)
			return out, nil, nil
		}})
		if err != nil {
			t.Fatalf("Reconfigure: %v", err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("take: %v", err)
			}
		}
		if got := getQueue(t, st, name).State.Ticket; got != takers {
			t.Errorf("ticket = %d after %d takes, want %d", got, takers, takers)
		}
		t.Logf("Reslot called %d times", calls)
	})
}
