package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// limitForms are the limit forms the suite races, beside the plain
// interval every other subtest uses: one rate with a burst (the
// conditional forms), a window and a rate with a window (compare-and-set).
var limitForms = []limitForm{
	{"rate", slot.Limits{{Rate: api.Rate{N: 100, Per: time.Second}, Burst: 3}}},
	{"window", slot.Limits{{Window: api.Rate{N: 4, Per: 50 * time.Millisecond}}}},
	{"rate-and-window", slot.Limits{{Rate: api.Rate{N: 200, Per: time.Second}, Burst: 2}, {Window: api.Rate{N: 6, Per: 100 * time.Millisecond}}}},
}

// limitForm is a queue's limits, by name.
type limitForm struct {
	name string
	ls   slot.Limits
}

// everyForm is the plain interval and limitForms: every form a queue's
// limit takes.
func everyForm() []limitForm {
	return append([]limitForm{{"interval", slot.Every(interval)}}, limitForms...)
}

// newQueueUnder creates a queue under limits ls and returns its name.
func newQueueUnder(t *testing.T, st engine.State, ls slot.Limits) string {
	t.Helper()
	name := queueName(t)
	cfg := slot.Config{Limits: ls, Targets: []string{"https://example.com/*"}}.WithDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateQueue(t.Context(), engine.Queue{Name: name, Config: cfg, CreatedAt: base}); err != nil {
		t.Fatalf("CreateQueue(%s): %v", name, err)
	}
	return name
}

// underEachForm runs test once per limit form (limitForms), as a subtest
// of its name, on a new queue called name under limits ls.
func underEachForm(t *testing.T, newState func(t *testing.T) engine.State, test func(t *testing.T, st engine.State, name string, ls slot.Limits)) {
	for _, f := range limitForms {
		t.Run(f.name, func(t *testing.T) {
			st := newState(t)
			test(t, st, newQueueUnder(t, st, f.ls), f.ls)
		})
	}
}

func testForms(t *testing.T, newState func(t *testing.T) engine.State) {
	// Concurrent takes at one now get disjoint tickets whose slots,
	// together, are the form's arithmetic on the tickets: exactly what
	// one take of them all would give (slot.Take), no slot twice beyond
	// what the form allows at once.
	t.Run("ConcurrentTake", func(t *testing.T) {
		underEachForm(t, newState, func(t *testing.T, st engine.State, name string, ls slot.Limits) {
			const callers = 12
			taken := make([]engine.Taken, callers)
			errs := make([]error, callers)
			total := 0
			for i := range callers {
				total += 1 + i%3
			}
			atOnce(callers, func(i int) {
				n := 1 + i%3
				taken[i], errs[i] = st.Take(t.Context(), engine.TakeRequest{Queue: name, N: n, Line: n, Limits: ls, Now: base})
			})
			var slots []time.Time
			for i, err := range errs {
				if err != nil {
					t.Fatalf("caller %d: %v", i, err)
				}
				slots = append(slots, taken[i].Slots...)
			}
			_, _, want := slot.Take(slot.State{}, total, total, ls, 0, base)
			slices.SortFunc(slots, time.Time.Compare)
			if !slices.EqualFunc(slots, want, time.Time.Equal) {
				t.Fatalf("slots of %d concurrent takes:\n got %v\nwant %v", callers, rel(slots), rel(want))
			}
		})
	})

	// Workers race at the gate for a backlog's tickets, each at its slot
	// or before it, twice for some (duplicate deliveries), all released
	// at once, from a stale read of the queue (its state before any
	// start), so that the store's own atomic step decides: the
	// starts the gate lets through keep the form (slot.Breaches, with the
	// skew as the one allowance), and line tickets pass in ticket order.
	t.Run("ConcurrentGate", func(t *testing.T) {
		underEachForm(t, newState, func(t *testing.T, st engine.State, name string, ls slot.Limits) {
			const n = 24
			skew := getQueue(t, st, name).Config.Skew
			tk, err := st.Take(t.Context(), engine.TakeRequest{Queue: name, N: n, Line: n, Limits: ls, Now: base})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var starts, deadlines []time.Time
			atOnce(2*n, func(k int) {
				ticket, slotAt := tk.First+int64(k%n), tk.Slots[k%n]
				if k >= n && k%3 != 0 {
					return // a duplicate for every third ticket
				}
				// Some ask before their slot (a duplicate woken early, a
				// clock ahead): the gate alone must hold them back.
				early := []time.Duration{0, time.Millisecond, 7 * time.Millisecond, 40 * time.Millisecond}[k%4]
				at := slotAt.Add(-early)
				for range 50 {
					// Each gate records a deadline a room after
					// the start it reserves: its worker may call
					// its target anywhere up to it.
					r := engine.GateRequest{Queue: name, Ticket: ticket, Limits: ls, Skew: skew, Now: at, At: at,
						Deadline: at.Add(slot.Room), SlotAt: slotAt}
					_, err := st.Gate(t.Context(), r)
					var ge *engine.GateError
					switch {
					case err == nil:
						mu.Lock()
						starts, deadlines = append(starts, at), append(deadlines, r.Deadline)
						mu.Unlock()
						return
					case errors.As(err, &ge) && ge.Verdict == slot.Early:
						at = ge.OpenAt
					case errors.As(err, &ge) && ge.Verdict == slot.Passed:
						return
					default:
						t.Errorf("ticket %d: %v", ticket, err)
						return
					}
				}
				t.Errorf("ticket %d: still early after 50 tries", ticket)
			})
			if len(starts) == 0 {
				t.Fatal("no gate passed")
			}
			// Whether each worker calls its target at the start it
			// reserved or at its deadline, no limit breaks: every
			// concurrent gate counted every other's deadline.
			for what, at := range map[string][]time.Time{"reserved starts": starts, "deadlines": deadlines} {
				if b := slot.Breaches(ls, skew, at); len(b) > 0 {
					t.Fatalf("%s: %d breaches of %v among %d starts, first %+v", what, len(b), ls, len(at), b[0])
				}
			}
		})
	})

	// The store's own condition holds the form, not only the caller's
	// reading of it: a gate sent with the queue's current state as its
	// hint (so a store whose write carries its own condition sends it at
	// once) for a start a hair before the form allows is refused as
	// early, and one at the opening passes.
	t.Run("Opening", func(t *testing.T) {
		underEachForm(t, newState, func(t *testing.T, st engine.State, name string, ls slot.Limits) {
			q := getQueue(t, st, name)
			tk, err := st.Take(t.Context(), engine.TakeRequest{Queue: name, N: 30, Line: 30, Limits: ls, Now: base})
			if err != nil {
				t.Fatal(err)
			}
			seen := tk.State
			for k, slotAt := range tk.Slots {
				ticket := tk.First + int64(k)
				open := slot.GateOpen(seen, ls, q.Config.Skew)
				if open.After(slotAt) {
					t.Fatalf("ticket %d: the gate opens at +%v, after its slot +%v", ticket, open.Sub(base), slotAt.Sub(base))
				}
				if !open.IsZero() {
					hair := open.Add(-time.Microsecond)
					r := engine.GateRequest{Queue: name, Ticket: ticket, Limits: ls, Skew: q.Config.Skew, Now: hair, At: hair, Seen: seen}
					_, err := st.Gate(t.Context(), r)
					if ge := wantGate(t, "a hair before the opening", err, slot.Early); ge != nil && !ge.OpenAt.Equal(open) {
						t.Fatalf("ticket %d: opens at +%v, want +%v", ticket, ge.OpenAt.Sub(base), open.Sub(base))
					}
				}
				r := engine.GateRequest{Queue: name, Ticket: ticket, Limits: ls, Skew: q.Config.Skew, Now: slotAt, At: slotAt, Seen: seen}
				if seen, err = st.Gate(t.Context(), r); err != nil {
					t.Fatalf("ticket %d at its slot +%v: %v", ticket, slotAt.Sub(base), err)
				}
			}
		})
	})

	// A take or gate under other limits than the queue's (a configure
	// came between the read and the write) is refused and writes nothing.
	t.Run("LimitChanged", func(t *testing.T) {
		st := newState(t)
		name := newQueueUnder(t, st, limitForms[1].ls)
		before := getQueue(t, st, name).State
		for _, ls := range []slot.Limits{slot.Every(interval), limitForms[0].ls, limitForms[2].ls} {
			_, err := st.Take(t.Context(), engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: ls, Now: base})
			wantErr(t, "Take under "+ls.String(), err, engine.ErrLimitChanged)
			_, err = st.Gate(t.Context(), engine.GateRequest{Queue: name, Ticket: 1, Limits: ls, Now: base})
			wantErr(t, "Gate under "+ls.String(), err, engine.ErrLimitChanged)
		}
		wantState(t, "after refused writes", getQueue(t, st, name).State, before)

		// Configured to another form, the queue takes and gates under it.
		cfg := getQueue(t, st, name).Config
		cfg.Limits = limitForms[0].ls
		if err := st.SetConfig(t.Context(), name, cfg); err != nil {
			t.Fatal(err)
		}
		tk, err := st.Take(t.Context(), engine.TakeRequest{Queue: name, N: 5, Line: 5, Limits: limitForms[0].ls, Now: base})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Gate(t.Context(), engine.GateRequest{Queue: name, Ticket: tk.First, Limits: limitForms[0].ls, Now: tk.Slots[0]}); err != nil {
			t.Fatal(err)
		}
		cfg.Limits = nil
		cfg.Interval = interval
		if err := st.SetConfig(t.Context(), name, cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Take(t.Context(), engine.TakeRequest{Queue: name, N: 1, Line: 1, Interval: interval, Now: base}); err != nil {
			t.Fatalf("take under the plain interval after configure: %v", err)
		}
	})
}

// rel writes times relative to base, for failure messages.
func rel(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(base)
	}
	return out
}
