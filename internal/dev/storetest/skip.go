package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/slotq/slotq/internal/engine"
)

// testSkip states Skip: current moves to a ticket only from just below it,
// and nothing else changes.
func testSkip(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("OnlyFromJustBelow", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		if _, err := st.Take(t.Context(), engine.TakeRequest{Queue: name, N: 5, Line: 5, Interval: interval, Now: base}); err != nil {
			t.Fatal(err)
		}
		before, err := st.GetQueue(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range []int64{2, 0} {
			if moved, err := st.Skip(t.Context(), name, tk); moved || err != nil {
				t.Fatalf("Skip(%d) with current %d = %v, %v; want false", tk, before.State.Current, moved, err)
			}
		}
		if moved, err := st.Skip(t.Context(), name, 1); !moved || err != nil {
			t.Fatalf("Skip(1) with current 0 = %v, %v; want true", moved, err)
		}
		if moved, err := st.Skip(t.Context(), name, 1); moved || err != nil {
			t.Fatalf("Skip(1) again = %v, %v; want false", moved, err)
		}
		after, err := st.GetQueue(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		want := before.State
		want.Current = 1
		if after.State.Current != 1 || after.State.Ticket != want.Ticket || !after.State.LastStart.Equal(want.LastStart) || !after.State.Clock.Equal(want.Clock) {
			t.Fatalf("state after Skip %+v; want %+v", after.State, want)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		var wg sync.WaitGroup
		moved := make([]bool, 20)
		for i := range moved {
			wg.Go(func() {
				var err error
				if moved[i], err = st.Skip(t.Context(), name, 1); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		n := 0
		for _, m := range moved {
			if m {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d of %d concurrent skips moved current; want 1", n, len(moved))
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		st := newState(t)
		if _, err := st.Skip(t.Context(), queueName(t), 1); !errors.Is(err, engine.ErrQueueNotFound) {
			t.Fatalf("Skip on a missing queue: %v", err)
		}
	})
}
