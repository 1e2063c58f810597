package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
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

	testGateConcurrent(t, newState)
	testCap(t, newState)
}
