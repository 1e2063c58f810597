package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// roomReads counts what bookings read of the waiting room: the jobs the
// per-key reads (ListRoom) answered, and those the listings of the
// queue's parked jobs (the whole room) answered.
type roomReads struct {
	engine.State
	mu            sync.Mutex
	heads, listed int
	headCalls     int
}

func (r *roomReads) ListRoom(ctx context.Context, q engine.RoomRequest) ([]job.Job, error) {
	got, err := r.State.ListRoom(ctx, q)
	r.mu.Lock()
	r.heads += len(got)
	r.headCalls++
	r.mu.Unlock()
	return got, err
}

func (r *roomReads) ListJobs(ctx context.Context, q engine.ListRequest) ([]job.Job, error) {
	got, err := r.State.ListJobs(ctx, q)
	if q.Status == job.Parked {
		r.mu.Lock()
		r.listed += len(got)
		r.mu.Unlock()
	}
	return got, err
}

// A booking reads the first jobs of the keys it may book from, never
// the whole room: a heavy key's backlog costs each booking the read of
// its first few jobs, however long it is. Waiting jobs cancelled under
// the room's counts (a hint that is then too high) leave the room
// booking the rest: every job left runs once, and the room's count
// ends at nothing.
func TestWaitingRoomReadsHeads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reads := &roomReads{}
		s := newSim(t, simOptions{Workers: 4, Seed: 9, Wrap: func(st engine.State) engine.State { reads.State = st; return reads }})
		defer s.stop()
		ctx := context.Background()
		const heavy, light = 400, 5
		s.createQueue("heads", slot.Config{Interval: time.Millisecond, KeyBookAhead: 2})
		if _, err := s.eng.Pause(ctx, "heads", time.Time{}); err != nil {
			t.Fatal(err)
		}
		a := s.enqueue("heads", heavy, func(_ int, sp *job.Spec) { sp.Key = "A" })
		for _, k := range []string{"B", "C", "D"} {
			s.enqueue("heads", light, func(_ int, sp *job.Spec) { sp.Key = k })
		}
		// Ten of A's waiting jobs cancelled while the queue is paused:
		// the room counts them still.
		for _, acc := range a.Jobs[100:110] {
			if _, err := s.eng.CancelJob(ctx, job.Ref{Queue: "heads", ID: acc.JobID}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.eng.Unpause(ctx, "heads"); err != nil {
			t.Fatal(err)
		}
		s.waitFinished("heads", 10*time.Minute)
		// The resume function's look counts the room afresh: nothing
		// waits, whatever the counts said.
		time.Sleep(3 * time.Minute)
		h, err := s.store.GetHorizon(ctx, "heads")
		if err != nil {
			t.Fatal(err)
		}
		counted := 0
		for _, m := range h.Keys {
			counted += len(m)
		}
		if h.Waiting != 0 || counted != 0 {
			t.Errorf("the room's counts after everything ran: %d waiting, %v", h.Waiting, h.Keys)
		}
		s.stop()
		runs := map[string]int{}
		s.mu.Lock()
		for _, st := range s.starts {
			runs[st.ID]++
		}
		s.mu.Unlock()
		if want := heavy + 3*light - 10; len(runs) != want {
			t.Fatalf("%d jobs ran, want %d", len(runs), want)
		}
		for id, n := range runs {
			if n != 1 {
				t.Errorf("job %s ran %d times", id, n)
			}
		}
		reads.mu.Lock()
		defer reads.mu.Unlock()
		// A booking step reads, of each of the four keys under its
		// bound, at most its bound and its bookings: 4 jobs. The whole
		// room, read once a booking, would be about heavy²/2.
		jobs := heavy + 3*light
		if reads.heads > 16*jobs || reads.listed > 4*jobs {
			t.Errorf("bookings read %d jobs by key (%d reads) and listed %d of the room for %d jobs: want at most %d and %d",
				reads.heads, reads.headCalls, reads.listed, jobs, 16*jobs, 4*jobs)
		}
		t.Logf("read %d jobs by key in %d reads, listed %d", reads.heads, reads.headCalls, reads.listed)
	})
}

// A job booked from the waiting room is told a slot its start can keep,
// even when the line runs late: workers come late (a delivery up to 1ms
// later than usual, the first starts later still), the queue's limit
// holds the jobs behind them back, and a booking that followed the
// line's clock alone would tell each next job a slot the line has
// already left behind, the lateness carried on from booking to booking.
// Every booked job, at enqueue or from the room, starts within that 1ms
// and the skew of the slot it was told, or takes a new ticket: the first
// ones booked from the room too, whose old tickets (their places in the
// room, handed out with the line's first) lie below their new ones and
// never come to the gate.
func TestWaitingRoomBooksReachableSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := slot.Config{Interval: 10 * time.Millisecond, KeyBookAhead: 3, KeyMaxRunning: 5}
		r := newRoomSim(t, simOptions{Workers: 4, Seed: 21, Lead: 2 * time.Millisecond,
			Transport: memstore.TransportOptions{Jitter: time.Millisecond}}, "late", cfg, 0)
		defer r.stop()
		r.enqueueRoom("late", "A", 0, 60)
		r.waitFinished("late", time.Minute)
		r.verify(0)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.w.mu.Lock()
		defer r.w.mu.Unlock()
		late, checked, room := 0, 0, time.Millisecond+cfg.WithDefaults().Skew
		for _, s := range r.starts {
			told, ok := r.w.told[fmt.Sprintf("%s#%d", s.ID, s.Booking)]
			if !ok || s.Retickets != told.Retickets {
				continue
			}
			checked++
			if s.At.After(told.SlotAt.Add(room)) {
				if late++; late <= 3 {
					t.Errorf("job %s (booking %d) started %v after the slot it was told", s.ID, s.Booking, s.At.Sub(told.SlotAt))
				}
			}
		}
		if late > 0 {
			t.Errorf("%d booked jobs started later than %v after the slot they were told", late, room)
		}
		if checked < len(r.starts)/2 {
			t.Errorf("%d of %d starts kept the ticket of their booking: too few to judge", checked, len(r.starts))
		}
		t.Logf("%d of %d starts checked", checked, len(r.starts))
	})
}

// A key whose first waiting jobs may not start for an hour (not_before)
// books its ready jobs behind them: a booking reads the key on until it
// finds a job it may book, as the rule over the whole room would.
func TestWaitingRoomReadsPastLaterJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 2, Seed: 4})
		defer s.stop()
		s.createQueue("later", slot.Config{Interval: time.Millisecond, KeyBookAhead: 1})
		first := s.enqueue("later", 1, func(_ int, sp *job.Spec) { sp.Key = "A" })
		hour := time.Now().Add(time.Hour)
		s.enqueue("later", 6, func(_ int, sp *job.Spec) { sp.Key, sp.NotBefore = "A", &hour })
		ready := s.enqueue("later", 3, func(_ int, sp *job.Spec) { sp.Key = "A" })
		// Well before the resume function's look (every minute), which
		// reads the whole room.
		time.Sleep(10 * time.Second)
		s.mu.Lock()
		ran := map[string]bool{}
		for _, st := range s.starts {
			ran[st.ID] = true
		}
		s.mu.Unlock()
		for _, a := range append(first.Jobs, ready.Jobs...) {
			if !ran[a.JobID] {
				t.Errorf("job %s, ready, has not run after 10s: the jobs of its key that wait for their time hold it back", a.JobID)
			}
		}
	})
}
