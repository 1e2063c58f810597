package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
)

// testLease checks Lease and ReleaseLease: one holder at a time, expiry,
// and the cursor handed from holder to holder.
func testLease(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("OneHolder", func(t *testing.T) {
		st := newState(t)
		q := queueName(t)
		ctx := t.Context()
		c, err := st.Lease(ctx, q, "a", at(time.Minute), at(0))
		if err != nil || c != (engine.Cursor{}) {
			t.Fatalf("first Lease = %+v, %v; want a zero cursor", c, err)
		}
		if _, err := st.Lease(ctx, q, "b", at(time.Minute), at(30*time.Second)); !errors.Is(err, engine.ErrLeaseHeld) {
			t.Fatalf("Lease by b while a holds it: %v, want ErrLeaseHeld", err)
		}
		if _, err := st.Lease(ctx, q, "a", at(2*time.Minute), at(30*time.Second)); err != nil {
			t.Fatalf("a takes its own lease again: %v", err)
		}
		if err := st.ReleaseLease(ctx, q, "b", engine.Cursor{Round: at(9 * time.Second)}); !errors.Is(err, engine.ErrLeaseHeld) {
			t.Fatalf("ReleaseLease by b: %v, want ErrLeaseHeld", err)
		}
		want := engine.Cursor{Round: at(42 * time.Second), Until: at(time.Hour)}
		if err := st.ReleaseLease(ctx, q, "a", want); err != nil {
			t.Fatalf("ReleaseLease by a: %v", err)
		}
		if err := st.ReleaseLease(ctx, q, "a", engine.Cursor{}); !errors.Is(err, engine.ErrLeaseHeld) {
			t.Fatalf("second ReleaseLease by a: %v, want ErrLeaseHeld", err)
		}
		c, err = st.Lease(ctx, q, "b", at(3*time.Minute), at(time.Minute))
		if err != nil || !c.Round.Equal(want.Round) || !c.Until.Equal(want.Until) {
			t.Fatalf("Lease by b after release = %+v, %v; want the cursor a left, %+v", c, err, want)
		}
	})
	// The cursor's mark of an unfinished configure is handed on with it,
	// and taken off by a release without it.
	t.Run("Reslot", func(t *testing.T) {
		st := newState(t)
		q := queueName(t)
		ctx := t.Context()
		for _, c := range []engine.Cursor{{Round: at(time.Second), Reslot: true}, {Round: at(time.Second)}, {}} {
			if _, err := st.Lease(ctx, q, "h1", at(time.Minute), at(0)); err != nil {
				t.Fatal(err)
			}
			if err := st.ReleaseLease(ctx, q, "h1", c); err != nil {
				t.Fatal(err)
			}
			got, err := st.Lease(ctx, q, "h2", at(time.Minute), at(0))
			if err != nil || got.Reslot != c.Reslot || !got.Round.Equal(c.Round) {
				t.Fatalf("cursor handed on = %+v, %v; want %+v", got, err, c)
			}
			if err := st.ReleaseLease(ctx, q, "h2", c); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		st := newState(t)
		q := queueName(t)
		ctx := t.Context()
		if _, err := st.Lease(ctx, q, "a", at(time.Minute), at(0)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Lease(ctx, q, "b", at(time.Minute), at(time.Minute-time.Millisecond)); !errors.Is(err, engine.ErrLeaseHeld) {
			t.Fatalf("Lease by b a moment before a's until: %v, want ErrLeaseHeld", err)
		}
		if _, err := st.Lease(ctx, q, "b", at(2*time.Minute), at(time.Minute)); err != nil {
			t.Fatalf("Lease by b at a's until: %v", err)
		}
		// a's lease expired and b took it: a writes nothing.
		if err := st.ReleaseLease(ctx, q, "a", engine.Cursor{Round: at(7 * time.Second)}); !errors.Is(err, engine.ErrLeaseHeld) {
			t.Fatalf("ReleaseLease by a after expiry: %v, want ErrLeaseHeld", err)
		}
		if err := st.ReleaseLease(ctx, q, "b", engine.Cursor{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		st := newState(t)
		q := queueName(t)
		const holders = 20
		errs := make([]error, holders)
		atOnce(holders, func(i int) {
			_, errs[i] = st.Lease(t.Context(), q, fmt.Sprintf("h%d", i), at(time.Minute), at(0))
		})
		oneWins(t, "concurrent holders of the lease", errs, engine.ErrLeaseHeld)
	})
	t.Run("ApartFromQueue", func(t *testing.T) {
		st := newState(t)
		q := newQueue(t, st, interval)
		before, err := st.GetQueue(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Lease(t.Context(), q, "a", at(time.Minute), at(0)); err != nil {
			t.Fatal(err)
		}
		if err := st.ReleaseLease(t.Context(), q, "a", engine.Cursor{Round: at(3 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		after, err := st.GetQueue(t.Context(), q)
		if err != nil || !reflect.DeepEqual(after.State, before.State) {
			t.Fatalf("queue state %+v after the lease, was %+v (%v)", after.State, before.State, err)
		}
		qs, err := st.ListQueues(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, x := range qs {
			if x.Name == q {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("queue %s listed %d times", q, n)
		}
	})
}
