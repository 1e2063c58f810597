package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// lineUp creates a queue, takes n line tickets at base and stores a queued
// job for each, job i with ticket i+1.
func lineUp(t *testing.T, st engine.State, n int) (string, []job.Job) {
	t.Helper()
	name := newQueue(t, st, interval)
	tk := take(t, st, name, n, n, base)
	jobs := make([]job.Job, n)
	for i := range jobs {
		jobs[i] = newJob(name, fmt.Sprintf("j%03d", i+1), tk.First+int64(i), job.Queued)
		jobs[i].SlotAt = firstSlot(tk).Add(time.Duration(i) * interval)
	}
	createJobs(t, st, jobs...)
	return name, jobs
}

func gateReq(queue string, ticket int64, now time.Time) engine.GateRequest {
	return engine.GateRequest{Queue: queue, Ticket: ticket, Interval: interval, Now: now}
}

// err2 is the error of a call's two results.
func err2[T any](_ T, err error) error { return err }

// wantGate checks that err is a *engine.GateError with verdict v.
func wantGate(t *testing.T, what string, err error, v slot.Verdict) *engine.GateError {
	t.Helper()
	var ge *engine.GateError
	if !errors.As(err, &ge) {
		t.Fatalf("%s: got error %v, want a gate error %s", what, err, v)
	}
	if ge.Verdict != v {
		t.Errorf("%s: verdict %s, want %s", what, ge.Verdict, v)
	}
	return ge
}

// wantUnchanged checks that j's stored record is still j.
func wantUnchanged(t *testing.T, st engine.State, j job.Job) {
	t.Helper()
	if d := diffJob(getJob(t, st, j.Queue, j.ID), j); d != "" {
		t.Errorf("job %s changed: %s", j.ID, d)
	}
}

// claim moves j from queued to running at now, as the engine does after
// the gate.
func claim(ctx context.Context, st engine.State, j job.Job, now time.Time) error {
	from := j.Version()
	j.Status, j.StartedAt = job.Running, now
	return st.UpdateJob(ctx, j, from)
}

func testGate(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("Passes", func(t *testing.T) {
		st := newState(t)
		name, jobs := lineUp(t, st, 3) // slots base, +1s, +2s; clock base+2s
		s, err := st.Gate(t.Context(), gateReq(name, 1, at(200*time.Millisecond)))
		if err != nil {
			t.Fatalf("Gate: %v", err)
		}
		want := slot.State{Ticket: 3, Current: 1, Clock: at(2 * interval), LastStart: at(200 * time.Millisecond)}
		wantState(t, "Gate's state", s, want)
		wantState(t, "stored state", getQueue(t, st, name).State, want)
		// The gate touches the queue alone; the claim is the job's write.
		wantUnchanged(t, st, jobs[0])

		// The theoretical last start: a start whose deadline lies within
		// the skew of it moves it by one interval, not to the deadline
		// (the skew is spent on the deadline, never as an early start).
		r := gateReq(name, 2, at(1200*time.Millisecond))
		r.Skew, r.Deadline = 200*time.Millisecond, at(1350*time.Millisecond)
		if s, err = st.Gate(t.Context(), r); err != nil {
			t.Fatalf("Gate with a deadline within skew: %v", err)
		}
		wantState(t, "state after a start with room", s, slot.State{Ticket: 3, Current: 2, Clock: at(2 * interval), LastStart: at(1200 * time.Millisecond)})

		// A late start moves it to its deadline less the skew.
		late := at(9 * time.Second)
		r = gateReq(name, 3, late)
		r.Skew, r.Deadline = 200*time.Millisecond, late.Add(300*time.Millisecond)
		if s, err = st.Gate(t.Context(), r); err != nil {
			t.Fatalf("late Gate: %v", err)
		}
		wantState(t, "state after a late start", s, slot.State{Ticket: 3, Current: 3, Clock: at(2 * interval), LastStart: late.Add(100 * time.Millisecond)})
	})

	// A gate asked ahead of its start reserves the start (GateRequest.At):
	// the spacing is checked, and the theoretical last start moved, by the
	// start, not by when the gate was asked.
	t.Run("Reserves", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, _ := lineUp(t, st, 4) // slots base, +1s, +2s, +3s
		r := gateReq(name, 1, at(-50*time.Millisecond))
		r.At = base
		s, err := st.Gate(ctx, r)
		if err != nil {
			t.Fatalf("Gate reserving base: %v", err)
		}
		wantState(t, "state after reserving the first start", s, slot.State{Ticket: 4, Current: 1, Clock: at(3 * interval), LastStart: base})
		// Busy by the reserved start: last start + interval (the start
		// is reserved at its opening, its deadline within the skew).
		r = gateReq(name, 2, at(950*time.Millisecond))
		r.At, r.Skew, r.Deadline = at(interval), 10*time.Millisecond, at(interval+8*time.Millisecond)
		if s, err = st.Gate(ctx, r); err != nil {
			t.Fatalf("Gate reserving +1s: %v", err)
		}
		wantState(t, "state after reserving the second start", s, slot.State{Ticket: 4, Current: 2, Clock: at(3 * interval), LastStart: at(interval)})
		// A start before the opening is early, however late the gate is
		// asked.
		r = gateReq(name, 3, at(5*interval))
		r.At = at(1500 * time.Millisecond)
		ge := wantGate(t, "Gate reserving a start before the opening", err2(st.Gate(ctx, r)), slot.Early)
		if !ge.OpenAt.Equal(at(2 * interval)) {
			t.Errorf("OpenAt = %v, want %v", ge.OpenAt, at(2*interval))
		}
		// Idle by the reserved start although busy by the gate's now: the
		// last start moves to the start.
		r = gateReq(name, 3, at(1900*time.Millisecond))
		r.At = at(7 * interval)
		if s, err = st.Gate(ctx, r); err != nil {
			t.Fatalf("Gate reserving +7s: %v", err)
		}
		want := slot.State{Ticket: 4, Current: 3, Clock: at(3 * interval), LastStart: at(7 * interval)}
		wantState(t, "state after reserving a start past the next", s, want)
		wantState(t, "stored state", getQueue(t, st, name).State, want)
	})

	t.Run("QueueNotFound", func(t *testing.T) {
		st := newState(t)
		_, err := st.Gate(t.Context(), gateReq(queueName(t), 1, base))
		wantErr(t, "Gate of a missing queue", err, engine.ErrQueueNotFound)
	})

	t.Run("IntervalChanged", func(t *testing.T) {
		st := newState(t)
		name, _ := lineUp(t, st, 1)
		r := gateReq(name, 1, base)
		r.Interval = 2 * interval
		_, err := st.Gate(t.Context(), r)
		wantErr(t, "Gate with a stale interval", err, engine.ErrLimitChanged)
		wantState(t, "state after a refused gate", getQueue(t, st, name).State, lineState(1, 0, base))
	})

	t.Run("Early", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, _ := lineUp(t, st, 3)
		if _, err := st.Gate(ctx, gateReq(name, 1, base)); err != nil {
			t.Fatal(err)
		}
		_, err := st.Gate(ctx, gateReq(name, 2, at(400*time.Millisecond)))
		ge := wantGate(t, "Gate 400ms after the last", err, slot.Early)
		if !ge.OpenAt.Equal(at(interval)) {
			t.Errorf("OpenAt = %v, want %v", ge.OpenAt, at(interval))
		}
		if ge.State.Current != 1 || !ge.State.LastStart.Equal(base) {
			t.Errorf("GateError.State = %+v, want current 1, last start %v", ge.State, base)
		}
		if s := getQueue(t, st, name).State; s.Current != 1 || !s.LastStart.Equal(base) {
			t.Errorf("queue moved by an early gate: %+v", s)
		}

		// The skew is no early allowance: with one the gate still opens
		// at last start + interval.
		r := gateReq(name, 2, at(800*time.Millisecond))
		r.Skew = 300 * time.Millisecond
		_, err = st.Gate(ctx, r)
		ge = wantGate(t, "Gate with skew", err, slot.Early)
		if want := at(interval); !ge.OpenAt.Equal(want) {
			t.Errorf("OpenAt with skew = %v, want %v", ge.OpenAt, want)
		}
		r.Now = at(interval)
		if _, err := st.Gate(ctx, r); err != nil {
			t.Errorf("Gate at OpenAt: %v", err)
		}
	})

	// Slot order: a line ticket is passed when the queue started a
	// ticket of a later moment beyond its room (its Front), not for a
	// higher ticket alone.
	t.Run("Passed", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, jobs := lineUp(t, st, 3) // slots base, +1s, +2s
		line := func(k int, now time.Time) engine.GateRequest {
			r := gateReq(name, jobs[k].Ticket, now)
			r.SlotAt = jobs[k].SlotAt
			return r
		}
		if _, err := st.Gate(ctx, line(1, at(interval))); err != nil {
			t.Fatal(err)
		}
		if s := getQueue(t, st, name).State; !s.Front.Equal(jobs[1].SlotAt) {
			t.Errorf("Front = %v, want the started ticket's slot %v", s.Front, jobs[1].SlotAt)
		}
		_, err := st.Gate(ctx, line(0, at(time.Minute)))
		ge := wantGate(t, "Gate of a ticket the queue overtook", err, slot.Passed)
		if ge.State.Current != 2 {
			t.Errorf("GateError.State.Current = %d, want 2", ge.State.Current)
		}
		// A ticket without its slot (a start the caller does not place)
		// is not passed, and a lower ticket leaves current where it is.
		s, err := st.Gate(ctx, gateReq(name, jobs[0].Ticket, at(time.Minute)))
		if err != nil {
			t.Fatalf("a lower ticket without a slot: %v", err)
		}
		if s.Current != 2 || !s.Front.Equal(jobs[1].SlotAt) {
			t.Errorf("after a lower ticket: current %d, front %v; want 2, %v", s.Current, s.Front, jobs[1].SlotAt)
		}
	})

	// A worker that passed the gate and died before its claim leaves the
	// queue at its ticket; the next delivery passes again, one interval on.
	t.Run("SameTicketAgain", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, _ := lineUp(t, st, 2)
		if _, err := st.Gate(ctx, gateReq(name, 1, base)); err != nil {
			t.Fatal(err)
		}
		_, err := st.Gate(ctx, gateReq(name, 1, at(500*time.Millisecond)))
		wantGate(t, "the same ticket within the interval", err, slot.Early)
		s, err := st.Gate(ctx, gateReq(name, 1, at(interval)))
		if err != nil {
			t.Fatalf("the same ticket after the interval: %v", err)
		}
		wantState(t, "state", s, slot.State{Ticket: 2, Current: 1, Clock: at(interval), LastStart: at(interval)})
	})

	// A scheduled ticket took no place in the line: the gate lets it
	// start below current (never passed), and its start moves the
	// theoretical last start but not current. Spacing, pause and purge
	// hold for it as for the line.
	t.Run("Scheduled", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := newQueue(t, st, interval)
		take(t, st, name, 3, 2, base) // tickets 1, 2 in line; 3 scheduled
		if _, err := st.Gate(ctx, gateReq(name, 1, base)); err != nil {
			t.Fatal(err)
		}
		tk := take(t, st, name, 1, 1, base) // ticket 4, in line at base+2s
		r4 := gateReq(name, tk.First, at(2*interval))
		r4.SlotAt = tk.Slots[0]
		if _, err := st.Gate(ctx, r4); err != nil {
			t.Fatal(err)
		}
		sched := func(now time.Time) engine.GateRequest {
			r := gateReq(name, 3, now)
			r.Scheduled = true
			return r
		}
		_, err := st.Gate(ctx, sched(at(2500*time.Millisecond)))
		ge := wantGate(t, "a scheduled ticket within the interval", err, slot.Early)
		if !ge.OpenAt.Equal(at(3 * interval)) {
			t.Errorf("OpenAt = %v, want %v", ge.OpenAt, at(3*interval))
		}
		s, err := st.Gate(ctx, sched(at(3*interval)))
		if err != nil {
			t.Fatalf("a scheduled ticket below current: %v", err)
		}
		want := slot.State{Ticket: 4, Current: 4, Front: at(2 * interval), Clock: at(2 * interval), LastStart: at(3 * interval)}
		wantState(t, "state after a scheduled start", s, want)
		wantState(t, "stored state", getQueue(t, st, name).State, want)

		// The line goes on one interval after the scheduled start.
		tk = take(t, st, name, 1, 1, at(3*interval))
		_, err = st.Gate(ctx, gateReq(name, tk.First, at(3500*time.Millisecond)))
		wantGate(t, "a line ticket after a scheduled start", err, slot.Early)
		// The line ticket 2, whose slot the line's Front passed, is
		// passed; scheduled 3 is not, whatever current is.
		r2 := gateReq(name, 2, at(time.Hour))
		r2.SlotAt = at(interval)
		_, err = st.Gate(ctx, r2)
		wantGate(t, "a line ticket the line overtook", err, slot.Passed)

		if _, err := st.Pause(ctx, name, time.Time{}); err != nil {
			t.Fatal(err)
		}
		_, err = st.Gate(ctx, sched(at(time.Hour)))
		wantGate(t, "a scheduled ticket on a paused queue", err, slot.Paused)
		if _, err := st.Unpause(ctx, name, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Purge(ctx, name); err != nil {
			t.Fatal(err)
		}
		_, err = st.Gate(ctx, sched(at(time.Hour)))
		wantGate(t, "a purged scheduled ticket", err, slot.Purged)
	})

	t.Run("Paused", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, _ := lineUp(t, st, 1)
		if _, err := st.Pause(ctx, name, at(time.Hour)); err != nil {
			t.Fatal(err)
		}
		_, err := st.Gate(ctx, gateReq(name, 1, base))
		ge := wantGate(t, "Gate on a paused queue", err, slot.Paused)
		if !ge.State.Paused {
			t.Errorf("GateError.State.Paused = false")
		}
		if ok, err := st.Unpause(ctx, name, time.Time{}); err != nil || !ok {
			t.Fatalf("Unpause = %v, %v", ok, err)
		}
		if _, err := st.Gate(ctx, gateReq(name, 1, base)); err != nil {
			t.Errorf("Gate after Unpause: %v", err)
		}
	})

	t.Run("Purged", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, _ := lineUp(t, st, 3)
		s, err := st.Purge(ctx, name)
		if err != nil {
			t.Fatalf("Purge: %v", err)
		}
		if s.Purged != 3 {
			t.Errorf("Purge's state: Purged = %d, want 3 (the last ticket)", s.Purged)
		}
		_, err = st.Gate(ctx, gateReq(name, 2, base))
		wantGate(t, "Gate of a purged ticket", err, slot.Purged)
		tk := take(t, st, name, 1, 1, base)
		if _, err := st.Gate(ctx, gateReq(name, tk.First, base)); err != nil {
			t.Errorf("Gate of a ticket taken after the purge: %v", err)
		}
		_, err = st.Purge(ctx, queueName(t))
		wantErr(t, "Purge of a missing queue", err, engine.ErrQueueNotFound)
	})

	// Many workers hold envelopes of one queue at once: the gate lets one
	// through, whichever tickets they carry.
	concurrent := func(t *testing.T, st engine.State, name string, tickets []int64) {
		t.Helper()
		errs := make([]error, len(tickets))
		var wg sync.WaitGroup
		ready := make(chan struct{})
		for i := range tickets {
			wg.Go(func() {
				<-ready
				_, errs[i] = st.Gate(t.Context(), gateReq(name, tickets[i], base))
			})
		}
		close(ready)
		wg.Wait()
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
		var wg sync.WaitGroup
		ready := make(chan struct{})
		for i := range copies {
			wg.Go(func() {
				<-ready
				errs[i] = claim(t.Context(), st, jobs[0], base)
			})
		}
		close(ready)
		wg.Wait()
		wins := 0
		for i, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, engine.ErrConflict):
				t.Errorf("copy %d: got %v, want ErrConflict", i, err)
			}
		}
		if wins != 1 {
			t.Errorf("%d copies claimed the job, want 1", wins)
		}
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

	testCap(t, newState)
}

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
		name := queueName(t)
		generation(t, st, name, 7)
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
			var wg sync.WaitGroup
			ready := make(chan struct{})
			for i, ticket := range tickets {
				wg.Go(func() {
					<-ready
					r := engine.GateRequest{Queue: name, Ticket: ticket, Limits: ls, Now: now,
						Scheduled: true, MaxRunning: max, Until: until, Seen: seen}
					_, errs[i] = st.Gate(ctx, r)
				})
			}
			close(ready)
			wg.Wait()
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
