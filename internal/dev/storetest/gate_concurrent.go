package storetest

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// testGateConcurrent: the gate under real concurrency — many workers at
// one queue's gate at once, duplicate claims, the spacing rule's window
// form.
func testGateConcurrent(t *testing.T, newState func(t *testing.T) engine.State) {
	// Many workers hold envelopes of one queue at once: the gate lets one
	// through, whichever tickets they carry.
	concurrent := func(t *testing.T, st engine.State, name string, tickets []int64) {
		t.Helper()
		errs := make([]error, len(tickets))
		atOnce(len(tickets), func(i int) { _, errs[i] = st.Gate(t.Context(), gateReq(name, tickets[i], base)) })
		winner := -1
		for i, err := range errs {
			var ge *engine.GateError
			switch {
			case err == nil && winner >= 0:
				t.Errorf("tickets %d and %d both passed the gate", tickets[winner], tickets[i])
			case err == nil:
				winner = i
			case !errors.As(err, &ge):
				t.Errorf("ticket %d: got %v, want a gate error", tickets[i], err)
			}
		}
		if winner < 0 {
			t.Fatalf("no gate passed")
		}
		if s := getQueue(t, st, name).State; s.Current != tickets[winner] || !s.LastStart.Equal(base) {
			t.Errorf("state after the race: %+v, want current %d", s, tickets[winner])
		}
	}

	t.Run("ConcurrentTickets", func(t *testing.T) {
		st := newState(t)
		name, jobs := lineUp(t, st, 50)
		concurrent(t, st, name, slices.Collect(func(yield func(int64) bool) {
			for _, j := range jobs {
				if !yield(j.Ticket) {
					return
				}
			}
		}))
	})

	t.Run("ConcurrentSameTicket", func(t *testing.T) {
		st := newState(t)
		name, _ := lineUp(t, st, 1)
		concurrent(t, st, name, slices.Repeat([]int64{1}, 50))
	})

	// Duplicate deliveries of one message that all passed the gate (the
	// same ticket may pass again): one claim wins.
	t.Run("ConcurrentClaim", func(t *testing.T) {
		st := newState(t)
		_, jobs := lineUp(t, st, 1)
		const copies = 20
		errs := make([]error, copies)
		atOnce(copies, func(i int) { errs[i] = claim(t.Context(), st, jobs[0], base) })
		oneWins(t, "copies claiming the job", errs, engine.ErrConflict)
		if j := getJob(t, st, jobs[0].Queue, jobs[0].ID); j.Status != job.Running || !j.StartedAt.Equal(base) {
			t.Errorf("claimed job: status %s, started %v", j.Status, j.StartedAt)
		}
	})

	// docs/guarantees.md §3 in its window form, with real concurrency: workers
	// whose clocks run on their own try the gate over and over; whatever
	// the interleaving, any two passes i < j (in pass order) are at least
	// (j − i)·interval − skew apart. With reserve, each gate reserves a
	// start up to 500ms after the worker's now (GateRequest.At), and the
	// passes are the reserved starts.
	window := func(t *testing.T, scheduled, reserve bool) {
		st := newState(t)
		name, _ := lineUp(t, st, 1)
		const (
			workers = 6
			tries   = 60
			skew    = 150 * time.Millisecond
		)
		var mu sync.Mutex
		var passes []time.Time
		scheduledPasses := 0
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(uint64(w), 1))
				now := base
				var ticket int64 = 1
				for range tries {
					now = now.Add(time.Duration(rnd.IntN(700)) * time.Millisecond)
					r := gateReq(name, ticket, now)
					r.Skew = skew
					if reserve {
						r.At = now.Add(time.Duration(rnd.IntN(500)) * time.Millisecond)
					}
					if scheduled && rnd.IntN(3) == 0 {
						// A scheduled job's ticket (1, below current once
						// the line started) between the line's.
						r.Ticket, r.Scheduled = 1, true
					}
					s, err := st.Gate(t.Context(), r)
					var ge *engine.GateError
					switch {
					case err == nil:
						mu.Lock()
						passes = append(passes, r.Start())
						if r.Scheduled {
							scheduledPasses++
						}
						mu.Unlock()
						ticket = s.Current + 1
					case errors.As(err, &ge):
						ticket = ge.State.Current + 1
					default:
						t.Errorf("worker %d: %v", w, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if len(passes) < 10 {
			t.Fatalf("only %d passes", len(passes))
		}
		if scheduled && scheduledPasses == 0 {
			t.Fatalf("no scheduled ticket passed")
		}
		slices.SortFunc(passes, func(a, b time.Time) int { return a.Compare(b) })
		for i := range passes {
			for j := i + 1; j < len(passes); j++ {
				if gap, least := passes[j].Sub(passes[i]), time.Duration(j-i)*interval-skew; gap < least {
					t.Fatalf("passes %d and %d are %v apart, want ≥ %v", i, j, gap, least)
				}
			}
		}
	}
	t.Run("ConcurrentWindow", func(t *testing.T) { window(t, false, false) })
	// The same with reserved starts ahead of the gate.
	t.Run("ConcurrentWindowReserved", func(t *testing.T) { window(t, false, true) })
	// The same with scheduled tickets among the line's: their gate
	// leaves out ticket order, not the spacing.
	t.Run("ConcurrentWindowScheduled", func(t *testing.T) { window(t, true, false) })
}
