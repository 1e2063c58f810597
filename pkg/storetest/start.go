package storetest

import (
	"errors"
	"fmt"
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

func startReq(j job.Job, now time.Time) engine.StartRequest {
	return engine.StartRequest{Key: job.Key{Queue: j.Queue, ID: j.ID}, From: j.Version(), Interval: interval, Now: now}
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
		t.Errorf("job %s changed by a refused start: %s", j.ID, d)
	}
}

func testStart(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("Starts", func(t *testing.T) {
		st := newState(t)
		name, jobs := lineUp(t, st, 2) // slots base, base+1s; clock base+1s
		now := at(200 * time.Millisecond)
		s, err := st.Start(t.Context(), startReq(jobs[0], now))
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		want := slot.State{Ticket: 2, Current: 1, Clock: at(interval), LastStart: now}
		wantState(t, "Start's state", s, want)
		wantState(t, "stored state", getQueue(t, st, name).State, want)
		running := jobs[0]
		running.Status, running.StartedAt = job.Running, now
		if d := diffJob(getJob(t, st, name, running.ID), running); d != "" {
			t.Errorf("started job: %s", d)
		}

		// A late start raises a lagging clock to now.
		late := at(5 * time.Second)
		s, err = st.Start(t.Context(), startReq(jobs[1], late))
		if err != nil {
			t.Fatalf("late Start: %v", err)
		}
		wantState(t, "late Start's state", s, slot.State{Ticket: 2, Current: 2, Clock: late, LastStart: late})
	})

	t.Run("ConflictBeatsGate", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, jobs := lineUp(t, st, 1)
		if _, err := st.Pause(ctx, name, time.Time{}); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			from job.Version
		}{
			{"OtherTicket", job.Version{Status: job.Queued, Ticket: 9, Attempt: 1}},
			{"OtherAttempt", job.Version{Status: job.Queued, Ticket: 1, Attempt: 2}},
			{"OtherStatus", job.Version{Status: job.Parked, Ticket: 1, Attempt: 1}},
		}
		for _, c := range cases {
			r := startReq(jobs[0], base)
			r.From = c.from
			_, err := st.Start(ctx, r)
			wantErr(t, c.name, err, engine.ErrConflict)
		}
		wantUnchanged(t, st, jobs[0])
		if s := getQueue(t, st, name).State; s.Current != 0 || !s.LastStart.IsZero() {
			t.Errorf("queue moved by refused starts: %+v", s)
		}

		r := startReq(jobs[0], base)
		r.Key.ID = "missing"
		_, err := st.Start(ctx, r)
		wantErr(t, "missing job", err, engine.ErrJobNotFound)
	})

	t.Run("NotQueued", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		take(t, st, name, 1, 1, base)
		parked := newJob(name, "parked", 1, job.Parked)
		createJobs(t, st, parked)
		_, err := st.Start(t.Context(), startReq(parked, base))
		wantErr(t, "Start of a parked job at its version", err, engine.ErrConflict)
		wantUnchanged(t, st, parked)
	})

	t.Run("IntervalChanged", func(t *testing.T) {
		st := newState(t)
		_, jobs := lineUp(t, st, 1)
		r := startReq(jobs[0], base)
		r.Interval = 2 * interval
		_, err := st.Start(t.Context(), r)
		wantErr(t, "Start with a stale interval", err, engine.ErrIntervalChanged)
		wantUnchanged(t, st, jobs[0])
	})

	t.Run("Early", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, jobs := lineUp(t, st, 3)
		if _, err := st.Start(ctx, startReq(jobs[0], base)); err != nil {
			t.Fatal(err)
		}
		_, err := st.Start(ctx, startReq(jobs[1], at(400*time.Millisecond)))
		ge := wantGate(t, "Start 400ms after the last", err, slot.Early)
		if !ge.OpenAt.Equal(at(interval)) {
			t.Errorf("OpenAt = %v, want %v", ge.OpenAt, at(interval))
		}
		if ge.State.Current != 1 || !ge.State.LastStart.Equal(base) {
			t.Errorf("GateError.State = %+v, want current 1, last start %v", ge.State, base)
		}
		wantUnchanged(t, st, jobs[1])
		if s := getQueue(t, st, name).State; s.Current != 1 || !s.LastStart.Equal(base) {
			t.Errorf("queue moved by an early start: %+v", s)
		}

		// With skew the gate opens at last start + interval − skew.
		r := startReq(jobs[1], at(600*time.Millisecond))
		r.Skew = 300 * time.Millisecond
		_, err = st.Start(ctx, r)
		ge = wantGate(t, "Start with skew", err, slot.Early)
		if want := at(700 * time.Millisecond); !ge.OpenAt.Equal(want) {
			t.Errorf("OpenAt with skew = %v, want %v", ge.OpenAt, want)
		}
		r.Now = at(700 * time.Millisecond)
		if _, err := st.Start(ctx, r); err != nil {
			t.Errorf("Start at OpenAt: %v", err)
		}
	})

	t.Run("Passed", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		_, jobs := lineUp(t, st, 2)
		if _, err := st.Start(ctx, startReq(jobs[1], base)); err != nil {
			t.Fatal(err)
		}
		_, err := st.Start(ctx, startReq(jobs[0], at(time.Minute)))
		ge := wantGate(t, "Start of a passed ticket", err, slot.Passed)
		if ge.State.Current != 2 {
			t.Errorf("GateError.State.Current = %d, want 2", ge.State.Current)
		}
		wantUnchanged(t, st, jobs[0])
	})

	t.Run("Paused", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name, jobs := lineUp(t, st, 1)
		if _, err := st.Pause(ctx, name, at(time.Hour)); err != nil {
			t.Fatal(err)
		}
		_, err := st.Start(ctx, startReq(jobs[0], base))
		ge := wantGate(t, "Start on a paused queue", err, slot.Paused)
		if !ge.State.Paused {
			t.Errorf("GateError.State.Paused = false")
		}
		wantUnchanged(t, st, jobs[0])
		if ok, err := st.Unpause(ctx, name, time.Time{}); err != nil || !ok {
			t.Fatalf("Unpause = %v, %v", ok, err)
		}
		if _, err := st.Start(ctx, startReq(jobs[0], base)); err != nil {
			t.Errorf("Start after Unpause: %v", err)
		}
	})

	// Many workers hold envelopes of one queue at once: the gate lets one
	// through, whichever tickets they carry.
	concurrent := func(t *testing.T, st engine.State, name string, jobs []job.Job) {
		t.Helper()
		errs := make([]error, len(jobs))
		var wg sync.WaitGroup
		ready := make(chan struct{})
		for i := range jobs {
			wg.Go(func() {
				<-ready
				_, errs[i] = st.Start(t.Context(), startReq(jobs[i], base))
			})
		}
		close(ready)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			var ge *engine.GateError
			switch {
			case err == nil && winner >= 0:
				t.Errorf("jobs %s and %s both started", jobs[winner].ID, jobs[i].ID)
			case err == nil:
				winner = i
			case !errors.As(err, &ge):
				t.Errorf("job %s: got %v, want a gate error", jobs[i].ID, err)
			}
		}
		if winner < 0 {
			t.Fatalf("no start won")
		}
		if s := getQueue(t, st, name).State; s.Current != jobs[winner].Ticket || !s.LastStart.Equal(base) {
			t.Errorf("state after the race: %+v, want current %d", s, jobs[winner].Ticket)
		}
		running := 0
		for _, j := range jobs {
			if getJob(t, st, j.Queue, j.ID).Status == job.Running {
				running++
			}
		}
		if running != 1 {
			t.Errorf("%d jobs running, want 1", running)
		}
	}

	t.Run("ConcurrentTickets", func(t *testing.T) {
		st := newState(t)
		name, jobs := lineUp(t, st, 50)
		concurrent(t, st, name, jobs)
	})

	t.Run("ConcurrentSameTicket", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		take(t, st, name, 1, 1, base)
		jobs := make([]job.Job, 50)
		for i := range jobs {
			jobs[i] = newJob(name, fmt.Sprintf("j%03d", i), 1, job.Queued)
		}
		createJobs(t, st, jobs...)
		concurrent(t, st, name, jobs)
	})

	t.Run("DuplicateDelivery", func(t *testing.T) {
		st := newState(t)
		name, jobs := lineUp(t, st, 1)
		const copies = 20
		errs := make([]error, copies)
		var wg sync.WaitGroup
		ready := make(chan struct{})
		for i := range copies {
			wg.Go(func() {
				<-ready
				_, errs[i] = st.Start(t.Context(), startReq(jobs[0], base))
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
			t.Errorf("%d copies started the job, want 1", wins)
		}
		if s := getQueue(t, st, name).State; s.Current != 1 {
			t.Errorf("Current = %d, want 1", s.Current)
		}
	})
}
