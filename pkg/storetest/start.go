package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/engine"
	"github.com/slotq/slotq/pkg/job"
	"github.com/slotq/slotq/pkg/slot"
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
		jobs[i].SlotAt = tk.FirstSlot.Add(time.Duration(i) * interval)
	}
	createJobs(t, st, jobs...)
	return name, jobs
}

func gateReq(queue string, ticket int64, now time.Time) engine.GateRequest {
	return engine.GateRequest{Queue: queue, Ticket: ticket, Interval: interval, Now: now}
}

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

		// The theoretical last start: a start within skew of it moves it
		// by one interval, not to now.
		r := gateReq(name, 2, at(1100*time.Millisecond))
		r.Skew = 200 * time.Millisecond
		if s, err = st.Gate(t.Context(), r); err != nil {
			t.Fatalf("Gate within skew: %v", err)
		}
		wantState(t, "state after an early start", s, slot.State{Ticket: 3, Current: 2, Clock: at(2 * interval), LastStart: at(1200 * time.Millisecond)})

		// A late start moves it to now.
		late := at(9 * time.Second)
		if s, err = st.Gate(t.Context(), gateReq(name, 3, late)); err != nil {
			t.Fatalf("late Gate: %v", err)
		}
		wantState(t, "state after a late start", s, slot.State{Ticket: 3, Current: 3, Clock: at(2 * interval), LastStart: late})
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
		wantErr(t, "Gate with a stale interval", err, engine.ErrIntervalChanged)
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

		// With skew the gate opens at last start + interval − skew.
		r := gateReq(name, 2, at(600*time.Millisecond))
		r.Skew = 300 * time.Millisecond
		_, err = st.Gate(ctx, r)
		ge = wantGate(t, "Gate with skew", err, slot.Early)
		if want := at(700 * time.Millisecond); !ge.OpenAt.Equal(want) {
			t.Errorf("OpenAt with skew = %v, want %v", ge.OpenAt, want)
		}
		r.Now = at(700 * time.Millisecond)
		if _, err := st.Gate(ctx, r); err != nil {
			t.Errorf("Gate at OpenAt: %v", err)
		}
	})

	t.Run("Passed", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, _ := lineUp(t, st, 2)
		if _, err := st.Gate(ctx, gateReq(name, 2, base)); err != nil {
			t.Fatal(err)
		}
		_, err := st.Gate(ctx, gateReq(name, 1, at(time.Minute)))
		ge := wantGate(t, "Gate of a passed ticket", err, slot.Passed)
		if ge.State.Current != 2 {
			t.Errorf("GateError.State.Current = %d, want 2", ge.State.Current)
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
		if _, err := st.Gate(ctx, gateReq(name, tk.First, at(2*interval))); err != nil {
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
		want := slot.State{Ticket: 4, Current: 4, Clock: at(2 * interval), LastStart: at(3 * interval)}
		wantState(t, "state after a scheduled start", s, want)
		wantState(t, "stored state", getQueue(t, st, name).State, want)

		// The line goes on one interval after the scheduled start.
		tk = take(t, st, name, 1, 1, at(3*interval))
		_, err = st.Gate(ctx, gateReq(name, tk.First, at(3500*time.Millisecond)))
		wantGate(t, "a line ticket after a scheduled start", err, slot.Early)
		// The line ticket 2 is passed; scheduled 3 is not, whatever
		// current is.
		_, err = st.Gate(ctx, gateReq(name, 2, at(time.Hour)))
		wantGate(t, "a line ticket below current", err, slot.Passed)

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

	// design.md §5.3 in its window form, with real concurrency: workers
	// whose clocks run on their own try the gate over and over; whatever
	// the interleaving, any two passes i < j (in pass order) are at least
	// (j − i)·interval − skew apart.
	window := func(t *testing.T, scheduled bool) {
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
						passes = append(passes, now)
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
	t.Run("ConcurrentWindow", func(t *testing.T) { window(t, false) })
	// The same with scheduled tickets among the line's: their gate
	// leaves out ticket order, not the spacing.
	t.Run("ConcurrentWindowScheduled", func(t *testing.T) { window(t, true) })
}
