package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
)

func testTake(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("Ranges", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)

		a := take(t, st, name, 3, 3, base)
		if a.First != 1 || !firstSlot(a).Equal(base) {
			t.Errorf("first take: First=%d FirstSlot=%v; want 1, %v", a.First, firstSlot(a), base)
		}
		wantState(t, "first take", a.State, lineState(3, 0, at(2*interval)))

		b := take(t, st, name, 2, 2, base)
		if b.First != 4 || !firstSlot(b).Equal(at(3*interval)) {
			t.Errorf("second take: First=%d FirstSlot=%v; want 4, %v", b.First, firstSlot(b), at(3*interval))
		}
		wantState(t, "second take", b.State, lineState(5, 0, at(4*interval)))
		wantState(t, "stored state", getQueue(t, st, name).State, b.State)
	})

	t.Run("ClockNeverMovesBack", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		steps := []struct {
			now, slot time.Time
		}{
			{at(10 * time.Second), at(10 * time.Second)},
			{base, at(11 * time.Second)}, // a caller whose clock lags
			{at(time.Hour), at(time.Hour)},
			{at(time.Minute), at(time.Hour + interval)},
		}
		var prev time.Time
		for i, s := range steps {
			tk := take(t, st, name, 1, 1, s.now)
			if !firstSlot(tk).Equal(s.slot) {
				t.Errorf("take %d at %v: slot %v, want %v", i, s.now, firstSlot(tk), s.slot)
			}
			if tk.State.Clock.Before(prev) {
				t.Errorf("take %d: clock moved back from %v to %v", i, prev, tk.State.Clock)
			}
			prev = tk.State.Clock
		}
	})

	t.Run("ScheduledKeepClock", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		a := take(t, st, name, 3, 1, base) // one in line, two scheduled
		if a.First != 1 || !firstSlot(a).Equal(base) {
			t.Errorf("mixed take: First=%d FirstSlot=%v; want 1, %v", a.First, firstSlot(a), base)
		}
		wantState(t, "mixed take", a.State, lineState(3, 0, base))

		b := take(t, st, name, 2, 0, at(5*time.Second)) // all scheduled
		if b.First != 4 || !firstSlot(b).IsZero() {
			t.Errorf("scheduled take: First=%d FirstSlot=%v; want 4, zero", b.First, firstSlot(b))
		}
		wantState(t, "scheduled take", b.State, lineState(5, 0, base))

		c := take(t, st, name, 1, 1, base)
		if c.First != 6 || !firstSlot(c).Equal(at(interval)) {
			t.Errorf("line take after scheduled: First=%d FirstSlot=%v; want 6, %v", c.First, firstSlot(c), at(interval))
		}
	})

	// The line's last ticket (slot.State.Line) moves with takes of jobs
	// that start in ticket order, and stays where it is for those of
	// scheduled jobs (no place booked) and of jobs under key limits
	// (places booked, OutOfLine), under every limit form; a batch whose
	// scheduled jobs come after its line jobs moves it to its last line
	// job (LineEnd). It is what tells the stats the line's jobs from the
	// others.
	t.Run("LineTicket", func(t *testing.T) {
		for _, f := range everyForm() {
			t.Run(f.name, func(t *testing.T) {
				st := newState(t)
				name := newQueueUnder(t, st, f.ls)
				if l := getQueue(t, st, name).State.Line; l != 0 {
					t.Errorf("new queue: Line %d, want 0", l)
				}
				steps := []struct {
					n, line   int
					outOfLine bool
					lineEnd   int // the batch's last line ticket, 0 for its last
					want      int64
				}{{2, 0, false, 0, 0}, {3, 1, false, 0, 5}, {4, 0, false, 0, 5}, {2, 2, true, 0, 5}, {1, 1, false, 0, 12},
					// Line jobs batched with scheduled ones after them
					// (13–17, 18–21): the line ends at the last line job.
					{5, 1, false, 1, 13}, {4, 2, false, 3, 20}}
				for i, s := range steps {
					tk, err := st.Take(t.Context(), engine.TakeRequest{Queue: name, N: s.n, Line: s.line, OutOfLine: s.outOfLine, LineEnd: s.lineEnd, Limits: f.ls, Now: base})
					if err != nil {
						t.Fatalf("take %d: %v", i, err)
					}
					if tk.State.Line != s.want {
						t.Errorf("take %d (n=%d line=%d line_end=%d): Line %d, want %d", i, s.n, s.line, s.lineEnd, tk.State.Line, s.want)
					}
					if l := getQueue(t, st, name).State.Line; l != s.want {
						t.Errorf("take %d: stored Line %d, want %d", i, l, s.want)
					}
				}
			})
		}
	})

	t.Run("IntervalChanged", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		before := take(t, st, name, 1, 1, base)
		_, err := st.Take(t.Context(), engine.TakeRequest{Queue: name, N: 1, Line: 1, Interval: 2 * interval, Now: base})
		wantErr(t, "Take with a stale interval", err, engine.ErrLimitChanged)
		wantState(t, "state after refused take", getQueue(t, st, name).State, before.State)
	})

	t.Run("Concurrent", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		const callers = 50
		type result struct {
			n, line int
			taken   engine.Taken
			err     error
		}
		results := make([]result, callers)
		for i := range callers {
			n := 1 + i%3
			results[i] = result{n: n, line: i % (n + 1)}
		}
		atOnce(callers, func(i int) {
			r := &results[i]
			r.taken, r.err = st.Take(t.Context(), engine.TakeRequest{
				Queue: name, N: r.n, Line: r.line, Interval: interval, Now: base})
		})

		total, lineTotal := 0, 0
		owner := map[int64]int{}
		var slots []time.Time
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("caller %d: Take: %v", i, r.err)
			}
			total += r.n
			lineTotal += r.line
			for k := range int64(r.n) {
				if j, dup := owner[r.taken.First+k]; dup {
					t.Errorf("ticket %d handed to callers %d and %d", r.taken.First+k, j, i)
				}
				owner[r.taken.First+k] = i
			}
			for k := range r.line {
				slots = append(slots, r.taken.Slots[k])
			}
		}
		for tk := int64(1); tk <= int64(total); tk++ {
			if _, ok := owner[tk]; !ok {
				t.Errorf("ticket %d of 1..%d handed to nobody", tk, total)
			}
		}
		if len(owner) != total {
			t.Errorf("%d distinct tickets for %d requested", len(owner), total)
		}
		// Every caller asked at the same now, so the line slots are exactly
		// base, base+interval, … with no collision and no hole.
		slices.SortFunc(slots, time.Time.Compare)
		for k, s := range slots {
			if want := at(time.Duration(k) * interval); !s.Equal(want) {
				t.Fatalf("line slot #%d is %v, want %v (slots collide or leave a hole)", k, s, want)
			}
		}
		wantState(t, "state after concurrent takes", getQueue(t, st, name).State,
			lineState(int64(total), 0, at(time.Duration(lineTotal-1)*interval)))
	})
}

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
