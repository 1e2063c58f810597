package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// The waiting room books by its rule: a queue that holds 2 bookings at
// once, three keys with a backlog (A of weight 2) and, later, three jobs
// of priority 1. Workers get each message with jitter, some twice. The
// priority-1 jobs are booked before any other waiting job; while all
// three keys wait, every round books A twice and B and C once; within a
// key, ticket order; no booked job moves; each job runs once.
func TestWaitingRoomBooksByRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Keys that may run any number of jobs at once (no lanes),
		// under a loose limit of their own: book_ahead alone bounds a
		// key's bookings (a key that runs one at a time holds one:
		// TestWaitingRoomLanesKeepPromises).
		keyTick := 3 * time.Millisecond
		cfg := slot.Config{Interval: 10 * time.Millisecond, BookAhead: 2, KeyMaxRunning: slot.NoKeyCap, KeyLimits: []api.Limit{{Interval: keyTick}}}
		r := newRoomSim(t, simOptions{Workers: 2, Seed: 3, Transport: memstore.TransportOptions{Jitter: time.Millisecond, DuplicateRate: 0.1}}, "fair", cfg, 0)
		defer r.stop()
		ctx := context.Background()
		two := 2
		if _, err := r.eng.SetKeyLimits(ctx, "fair", []engine.KeyLimit{{Key: "A", Weight: &two}}); err != nil {
			t.Fatal(err)
		}
		first := r.enqueueRoom("fair", "A", 0, 12)
		for i, a := range first.Jobs {
			if waits := a.Status == api.StatusWaiting; waits != (i >= 2) {
				t.Fatalf("job %d of A answered %+v: want the first 2 booked, the rest waiting", i, a)
			}
			if i >= 2 && (a.Waiting != int64(i-1) || a.EstimatedStartAt == nil || !a.SlotAt.IsZero()) {
				t.Fatalf("waiting job %d of A answered %+v: want its place %d among its key's, an estimate, no slot", i, a, i-1)
			}
		}
		r.enqueueRoom("fair", "B", 0, 6)
		r.enqueueRoom("fair", "C", 0, 6)
		time.Sleep(55 * time.Millisecond)
		r.enqueueRoom("fair", "D", 1, 3)
		r.waitFinished("fair", time.Minute)
		// A keyed job passes its key's gate after the queue's, up to
		// its key's tick late (TestWaitingRoomKeyedLimits).
		r.verify(cfg.WithDefaults().Skew + keyTick)

		r.mu.Lock()
		runs := map[string]int{}
		for _, s := range r.starts {
			runs[s.ID]++
		}
		r.mu.Unlock()
		if len(runs) != 27 {
			t.Fatalf("%d jobs ran, want 27", len(runs))
		}
		for id, n := range runs {
			if n != 1 {
				t.Errorf("job %s ran %d times", id, n)
			}
		}
		r.w.mu.Lock()
		booked := r.w.booked
		r.w.mu.Unlock()
		var order string
		for _, b := range booked {
			order += b.Key
		}
		t.Logf("booked from the room: %s", order)
		// The three of D, one after the other: once they came, each
		// booking was theirs (the watch checks each against the room).
		firstD, lastD := -1, -1
		for i, b := range booked {
			if b.Key == "D" {
				lastD = max(lastD, i)
				if firstD < 0 {
					firstD = i
				}
			}
		}
		if firstD < 0 || lastD-firstD != 2 {
			t.Fatalf("the jobs of priority 1 were not booked one after the other: %s", order)
		}
		// While A, B and C all wait: A twice, B once, C once a round.
		left := map[string]int{"A": 10, "B": 6, "C": 6}
		var rr []string
		for _, b := range booked {
			if b.Key == "D" {
				continue
			}
			rr = append(rr, b.Key)
			if left[b.Key]--; left[b.Key] == 0 {
				break
			}
		}
		for i := 0; i+4 <= len(rr)-1; i++ {
			n := map[string]int{}
			for _, k := range rr[i : i+4] {
				n[k]++
			}
			if n["A"] != 2 || n["B"] != 1 || n["C"] != 1 {
				t.Fatalf("bookings %d–%d while all keys waited are %v, want A twice, B and C once (weights 2, 1, 1): %s", i+1, i+4, rr[i:i+4], order)
			}
		}
	})
}

// The waiting room under chaos: workers that die between any two steps
// (after the horizon's write too), deliveries late and twice, failed
// attempts retried through the room, a pause, a configure that lowers
// the bound, and cancels of waiting and booked jobs. The bounds hold
// after every write, no booked job moves, the room books by priority
// and ticket, and every job ends: succeeded, or cancelled on request.
func TestWaitingRoomChaos(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run("", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { waitingRoomChaos(t, seed) })
		})
	}
}

func waitingRoomChaos(t *testing.T, seed uint64) {
	cfg := slot.Config{Interval: 5 * time.Millisecond, BookAhead: 6, KeyBookAhead: 2}
	r := newRoomSim(t, simOptions{Workers: 4, Seed: seed, CrashRate: 0.02,
		Transport: memstore.TransportOptions{Jitter: 2 * time.Millisecond, DuplicateRate: 0.1}}, "chaos", cfg, 0.05)
	defer r.stop()
	ctx := context.Background()
	var ids []string
	for round := range 6 {
		for k := range 4 {
			// A producer whose call failed (its enqueue died after the
			// horizon's write) calls again.
			for {
				req := job.EnqueueRequest{Queue: "chaos"}
				for range 8 {
					req.Jobs = append(req.Jobs, job.Spec{Kind: "room", Key: string(rune('a' + k)), Priority: 1 + (round+k)%5})
				}
				res, err := r.eng.Enqueue(ctx, req)
				if err != nil {
					continue
				}
				for _, a := range res.Jobs {
					ids = append(ids, a.JobID)
				}
				break
			}
		}
		if round == 1 {
			r.sim.mu.Lock()
			for _, id := range ids[:10] {
				r.failFor[id] = 1
			}
			r.sim.mu.Unlock()
		}
		time.Sleep(40 * time.Millisecond)
	}
	// Cancel some: waiting ones and booked ones alike.
	cancelled := map[string]bool{}
	for _, id := range ids[len(ids)-40 : len(ids)-30] {
		if _, err := r.eng.CancelJob(ctx, job.Ref{Queue: "chaos", ID: id}); err == nil {
			cancelled[id] = true
		}
	}
	if _, err := r.eng.Pause(ctx, "chaos", time.Time{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	cfg.BookAhead = 4
	if _, err := r.eng.Configure(ctx, "chaos", cfg); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := r.eng.Unpause(ctx, "chaos"); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	r.w.mu.Lock()
	r.w.cfg.BookAhead = 6 // the jobs booked before the configure keep their bookings
	r.w.mu.Unlock()
	deadline := time.Now().Add(2 * time.Hour)
	for r.unfinished("chaos") > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
	if n := r.unfinished("chaos"); n > 0 {
		for _, j := range r.store.Jobs("chaos") {
			if !j.Status.Final() {
				t.Logf("unfinished: %+v", j)
			}
		}
		h, _ := r.store.GetHorizon(ctx, "chaos")
		t.Fatalf("%d jobs not finished after 2h; horizon %+v", n, h)
	}
	r.verify(0)

	ran := map[string]bool{}
	r.mu.Lock()
	for _, s := range r.starts {
		ran[s.ID] = true
	}
	r.mu.Unlock()
	for _, id := range ids {
		j, err := r.store.GetJob(ctx, job.Ref{Queue: "chaos", ID: id})
		switch {
		case err != nil:
			t.Fatalf("job %s: %v", id, err)
		case cancelled[id] && j.Status == job.Cancelled:
		case j.Status == job.Failed && j.LastError != "":
			// Its attempts ran out: the failures on purpose and
			// attempts lost with their workers count.
		case j.Status != job.Succeeded || !ran[id]:
			t.Errorf("job %s ended %s (ran %v), want succeeded", id, j.Status, ran[id])
		}
	}
	// A booking a crash left behind holds a place only until the room
	// needs it: a job that waits has the resume function look, and it
	// frees the bookings whose jobs left.
	h, _ := r.store.GetHorizon(ctx, "chaos")
	if len(h.Booked) > 0 {
		t.Logf("%d bookings left by crashes", len(h.Booked))
		keys := map[string]bool{}
		for _, b := range h.Booked {
			keys[b.Key] = true
		}
		for k := range keys {
			for {
				if _, err := r.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "chaos", Jobs: []job.Spec{{Kind: "room", Key: k}, {Kind: "room", Key: k}, {Kind: "room", Key: k}}}); err == nil {
					break
				}
			}
		}
		r.waitFinished("chaos", 10*time.Minute)
	}
	h, _ = r.store.GetHorizon(ctx, "chaos")
	for seq, b := range h.Booked {
		if j, err := r.store.GetJob(ctx, job.Ref{Queue: "chaos", ID: b.ID}); err == nil && !j.Status.Final() {
			t.Errorf("booking %d of job %s, %s, left in the horizon", seq, b.ID, j.Status)
		}
	}
	t.Logf("at most %d jobs held a booking at once", r.w.maxBooked)
}

// What the waiting room shows: a waiting job's place among its key's
// waiting jobs (by priority, then ticket) and an estimate of its start;
// a queue's bookings and its room by priority. Nothing starts: the queue
// is paused, and its room waits with it.
func TestWaitingRoomShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 1})
		defer s.stop()
		ctx := context.Background()
		s.createQueue("shown", slot.Config{Interval: time.Second, BookAhead: 2, KeyMaxRunning: slot.MaxKeyRunning})
		if _, err := s.eng.Pause(ctx, "shown", time.Time{}); err != nil {
			t.Fatal(err)
		}
		a := s.enqueue("shown", 5, func(i int, sp *job.Spec) { sp.Key = "A" })
		b := s.enqueue("shown", 3, func(i int, sp *job.Spec) { sp.Key = "B"; sp.Priority = 4 - i })
		st, err := s.eng.Stats(ctx, "shown")
		if err != nil {
			t.Fatal(err)
		}
		if r := st.Room; r == nil || r.Booked != 2 || r.Waiting != 6 || r.ByPriority != [api.MaxPriority]int{0, 1, 4, 1, 0} {
			t.Fatalf("Stats.Room = %+v, want 2 booked, 6 waiting: 1 of priority 2, 4 of 3, 1 of 4", r)
		}
		// A's jobs 3 to 5 wait, 1st to 3rd of A; B's of priority 2 is
		// the first of B, before its ticket-earlier job of priority 4.
		for _, c := range []struct {
			id    string
			place int64
		}{{a.Jobs[2].JobID, 1}, {a.Jobs[4].JobID, 3}, {b.Jobs[2].JobID, 1}, {b.Jobs[0].JobID, 3}} {
			j, err := s.eng.Job(ctx, job.Ref{Queue: "shown", ID: c.id})
			if err != nil || j.Room == nil || j.Room.Place != c.place || j.Room.EstimatedStartAt.Before(time.Now()) {
				t.Fatalf("Job(%s).Room = %+v, %v; want place %d and an estimate ahead", c.id, j.Room, err, c.place)
			}
		}
		if j, _ := s.eng.Job(ctx, job.Ref{Queue: "shown", ID: a.Jobs[0].JobID}); j.Room != nil {
			t.Fatalf("a booked job shows a place in the room: %+v", j.Room)
		}
	})
}

// The same id sent again while its job waits in the waiting room answers
// as the first call did: waiting, with its place and an estimate, the
// place the job's record shows (not "parked" with neither).
func TestWaitingRoomSameIDAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 1})
		defer s.stop()
		ctx := context.Background()
		first := pausedRoom(t, s, "again", 1, "a1", "a2", "a3")
		if a := first.Jobs[2]; a.Status != api.StatusWaiting || a.Waiting != 2 {
			t.Fatalf("first answer of a3: %+v, want waiting 2nd", a)
		}
		again := s.enqueue("again", 1, func(_ int, sp *job.Spec) { sp.ID = "a3" })
		a := again.Jobs[0]
		if !a.Existing || a.Status != api.StatusWaiting || a.Waiting != 2 || a.EstimatedStartAt == nil || !a.SlotAt.IsZero() {
			t.Fatalf("a3 sent again: %+v, want existing, waiting 2nd with an estimate and no slot", a)
		}
		j, err := s.eng.Job(ctx, job.Ref{Queue: "again", ID: "a3"})
		if err != nil || j.Room == nil || j.Room.Place != a.Waiting {
			t.Fatalf("Job(a3).Room = %+v, %v; want the place the answer gave, %d", j.Room, err, a.Waiting)
		}
	})
}

// A cancelled waiting job run again goes through the waiting room as a
// new job does, and its answer says so: waiting, its place, an estimate.
func TestWaitingRoomRetryAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 1})
		defer s.stop()
		ctx := context.Background()
		pausedRoom(t, s, "rerun", 1, "b1", "b2", "b3")
		if _, err := s.eng.CancelJob(ctx, job.Ref{Queue: "rerun", ID: "b3"}); err != nil {
			t.Fatal(err)
		}
		res, err := s.eng.Retry(ctx, engine.RetryRequest{Queue: "rerun", IDs: []string{"b3"}})
		if err != nil || len(res.Jobs) != 1 {
			t.Fatalf("Retry(b3) = %+v, %v", res, err)
		}
		a := res.Jobs[0]
		if a.Status != api.StatusWaiting || a.Waiting != 2 || a.EstimatedStartAt == nil || !a.SlotAt.IsZero() {
			t.Fatalf("b3 run again: %+v, want waiting 2nd (behind b2) with an estimate and no slot", a)
		}
	})
}

// A cancelled waiting job leaves the room at once: a queue with nothing
// left waiting and its bound free books the next job it is given, and
// does not send it to the room until the resume function's next look.
func TestWaitingRoomCancelLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 1, ResumeEvery: time.Hour})
		defer s.stop()
		ctx := context.Background()
		pausedRoom(t, s, "leave", 1, "c1", "c2")
		for _, id := range []string{"c2", "c1"} { // the waiting one, then the booked one
			if _, err := s.eng.CancelJob(ctx, job.Ref{Queue: "leave", ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		a := s.enqueue("leave", 1, func(_ int, sp *job.Spec) { sp.ID = "c3" }).Jobs[0]
		if a.Status == api.StatusWaiting || a.SlotAt.IsZero() {
			t.Fatalf("c3 on a queue with nothing waiting and its bound free: %+v, want booked, with a slot", a)
		}
	})
}

// A purge of a bounded queue answers how many jobs it cancelled, booked
// and waiting alike, and leaves their bookings and places free: the next
// job is booked at once, not sent to the room behind jobs that are gone.
func TestWaitingRoomPurgeFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 1, ResumeEvery: time.Hour})
		defer s.stop()
		ctx := context.Background()
		first := pausedRoom(t, s, "purged", 2, "p1", "p2", "p3", "p4", "p5", "p6", "p7")
		if w := first.Jobs[6]; w.Status != api.StatusWaiting {
			t.Fatalf("the 7th job: %+v, want waiting", w)
		}
		n, err := s.eng.Purge(ctx, "purged")
		if err != nil || n != 7 {
			t.Fatalf("Purge = %d, %v; want 7 cancelled (2 booked, 5 waiting)", n, err)
		}
		a := s.enqueue("purged", 1, nil).Jobs[0]
		if a.Status == api.StatusWaiting || a.SlotAt.IsZero() {
			t.Fatalf("a job after the purge: %+v, want booked, with a slot", a)
		}
		st, err := s.eng.Stats(ctx, "purged")
		if err != nil {
			t.Fatal(err)
		}
		if r := st.Room; r == nil || r.Booked != 1 || r.Waiting != 0 {
			t.Fatalf("Stats.Room after the purge and one job = %+v, want 1 booked, none waiting", r)
		}

		// A queue that ran: the waiting jobs' tickets lie before the
		// last start (each takes a new one when it is booked). 5 jobs, one
		// booked at a time: by 1.5s two have started and one is booked.
		s.createQueue("ran", slot.Config{Interval: time.Second, BookAhead: 1})
		s.enqueue("ran", 5, nil)
		time.Sleep(1500 * time.Millisecond)
		if got := len(s.startsOf("ran")); got != 2 {
			t.Fatalf("%d starts by 1.5s, want 2", got)
		}
		if n, err := s.eng.Purge(ctx, "ran"); err != nil || n != 3 {
			t.Fatalf("Purge = %d, %v; want 3 cancelled (1 booked, 2 waiting)", n, err)
		}
	})
}

// The enqueue's answer for a job that waits tells its place and estimate
// by the room's rule, as the job's record does: priority first, then the
// keys' turns, then ticket order, from the room's counts (no listing of
// the room per enqueue). A job of priority 1, first of its key, behind a
// backlog of priority 3, waits first, about a tick away.
func TestWaitingRoomAnswerByRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 1, ResumeEvery: time.Hour})
		defer s.stop()
		ctx := context.Background()
		pausedRoom(t, s, "rule", 1)
		var h api.Accepted
		for _, c := range []struct {
			key     string
			n, prio int
		}{{"A", 6, 0}, {"B", 3, 0}, {"H", 1, 1}, {"B", 1, 2}} {
			res := s.enqueue("rule", c.n, func(_ int, sp *job.Spec) { sp.Key, sp.Priority = c.key, c.prio })
			if c.key == "H" {
				h = res.Jobs[0]
			}
			// The last of the call: what its record says right after.
			a := res.Jobs[len(res.Jobs)-1]
			j, err := s.eng.Job(ctx, job.Ref{Queue: "rule", ID: a.JobID})
			if err != nil || j.Room == nil {
				t.Fatalf("Job(%s): %+v, %v", a.JobID, j.Room, err)
			}
			if a.Status != api.StatusWaiting || a.Waiting != j.Room.Place || a.EstimatedStartAt == nil || !a.EstimatedStartAt.Equal(j.Room.EstimatedStartAt) {
				t.Errorf("the last job of key %s, priority %d: answered %s %d, estimate %v; its record says %d, %v",
					c.key, c.prio, a.Status, a.Waiting, a.EstimatedStartAt, j.Room.Place, j.Room.EstimatedStartAt)
			}
		}
		if h.Waiting != 1 || h.EstimatedStartAt.After(time.Now().Add(3*time.Second)) {
			t.Errorf("a job of priority 1, first of its key: waiting %d, estimate +%v; want first, a tick or so away",
				h.Waiting, h.EstimatedStartAt.Sub(time.Now()))
		}
	})
}

// A configure that changes the queue's limit moves the booked jobs as a
// limit change does (§12b), and leaves the waiting room's jobs waiting,
// without a slot; one that changes a bound moves nothing. All run after.
func TestWaitingRoomConfigure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 2})
		defer s.stop()
		ctx := context.Background()
		cfg := slot.Config{Interval: time.Second, BookAhead: 2}
		s.createQueue("conf", cfg)
		// Paused, nothing starts and nothing is booked meanwhile.
		if _, err := s.eng.Pause(ctx, "conf", time.Time{}); err != nil {
			t.Fatal(err)
		}
		res := s.enqueue("conf", 6, nil)
		cfg.Interval = 500 * time.Millisecond
		if _, err := s.eng.Configure(ctx, "conf", cfg); err != nil {
			t.Fatal(err)
		}
		booked := map[string]time.Time{}
		for _, a := range res.Jobs {
			j, err := s.eng.Job(ctx, job.Ref{Queue: "conf", ID: a.JobID})
			if err != nil {
				t.Fatal(err)
			}
			waits := j.Status == job.Parked && j.ParkReason == job.Room
			if waits != (a.Status == api.StatusWaiting) || waits && !j.SlotAt.IsZero() {
				t.Fatalf("after a configure, job %s is %s (%s) with slot %v; it was answered %s", a.JobID, j.Status, j.ParkReason, j.SlotAt, a.Status)
			}
			if !waits {
				booked[j.ID] = j.SlotAt
			}
		}
		cfg.BookAhead = 3
		if _, err := s.eng.Configure(ctx, "conf", cfg); err != nil {
			t.Fatal(err)
		}
		for id, at := range booked {
			if j, _ := s.eng.Job(ctx, job.Ref{Queue: "conf", ID: id}); !j.SlotAt.Equal(at) {
				t.Fatalf("a change of book_ahead moved booked job %s from %v to %v", id, at, j.SlotAt)
			}
		}
		for {
			if _, err := s.eng.Unpause(ctx, "conf"); err == nil {
				break
			}
			time.Sleep(time.Second)
		}
		s.waitFinished("conf", time.Minute)
		if n := len(s.jobs("conf", job.Succeeded)); n != 6 {
			t.Fatalf("%d of 6 jobs succeeded", n)
		}
	})
}

// Keys under limits of their own and a key bound: a waiting job, once
// booked, gets its key's slot as an enqueue gives it (after the key's
// bookings ahead of it, not after every job of its key accepted before
// it), starts there, and every key's starts keep its limit.
func TestWaitingRoomKeyedLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := slot.Config{Interval: 5 * time.Millisecond, KeyBookAhead: 2, KeyLimits: []api.Limit{{Interval: 40 * time.Millisecond}}}
		r := newRoomSim(t, simOptions{Workers: 3, Seed: 5, Transport: memstore.TransportOptions{Jitter: time.Millisecond, DuplicateRate: 0.1}}, "keyed", cfg, 0)
		defer r.stop()
		for _, k := range []string{"A", "B", "C"} {
			r.enqueueRoom("keyed", k, 0, 8)
		}
		r.waitFinished("keyed", time.Minute)
		// A keyed job passes its key's gate after the queue's: it starts
		// a little after its slot (without the bound, jobs of a key
		// waiting on its lane start far later); it is not moved.
		skew := cfg.WithDefaults().Skew
		r.verify(0)
		r.mu.Lock()
		defer r.mu.Unlock()
		last := map[string]time.Time{}
		for _, s := range r.starts {
			j, _ := r.store.GetJob(context.Background(), job.Ref{Queue: "keyed", ID: s.ID})
			if prev, ok := last[j.Key]; ok && s.At.Sub(prev) < 40*time.Millisecond-skew {
				t.Errorf("key %s started %v after its last start, its limit 40ms", j.Key, s.At.Sub(prev))
			}
			last[j.Key] = s.At
		}
		if len(r.starts) != 24 {
			t.Fatalf("%d starts, want 24", len(r.starts))
		}
		// 8 jobs a key one every 40 ms: about 280 ms, not a key's whole
		// backlog of waits per booking.
		if end := r.starts[len(r.starts)-1].At; end.Sub(r.starts[0].At) > 400*time.Millisecond {
			t.Errorf("the last start came %v after the first, want about 280ms", end.Sub(r.starts[0].At))
		}
	})
}

// purgeOnTake lands a purge's write on the queue just before the first
// take armed picks: between a booker's read of the room and its take.
type purgeOnTake struct {
	engine.State
	mu    sync.Mutex
	armed func(engine.TakeRequest) bool
}

func (p *purgeOnTake) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	p.mu.Lock()
	fire := p.armed != nil && p.armed(r)
	if fire {
		p.armed = nil
	}
	p.mu.Unlock()
	if fire {
		if _, err := p.State.Purge(ctx, r.Queue); err != nil {
			return engine.Taken{}, err
		}
	}
	return p.State.Take(ctx, r)
}

// A purge whose write lands between the room's read and its booking's
// take covers the job being booked: the job is cancelled, not booked past
// the purge's mark with a new ticket (docs/guarantees.md §13), as a
// re-ticket's job is.
func TestWaitingRoomBookingAfterPurge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p *purgeOnTake
		s := newSim(t, simOptions{Workers: 2, ResumeEvery: time.Hour, Wrap: func(st engine.State) engine.State {
			p = &purgeOnTake{State: st}
			return p
		}})
		defer s.stop()
		s.createQueue("race", slot.Config{Interval: 100 * time.Millisecond, BookAhead: 1})
		ids := []string{"r1", "r2", "r3"}
		s.enqueue("race", len(ids), func(i int, sp *job.Spec) { sp.ID = ids[i] })
		p.mu.Lock()
		p.armed = func(r engine.TakeRequest) bool { return r.Queue == "race" } // the next take: r1's start books r2
		p.mu.Unlock()
		// The purge's own pass, which cancels the parked jobs it lists,
		// is not run here: r3 stays in the room, behind the purge's
		// mark, where the room's booking does not read (and the pass
		// would cancel it).
		time.Sleep(10 * time.Second)
		for _, st := range s.startsOf("race") {
			if st.ID != "r1" {
				t.Errorf("%s started (ticket %d) after a purge that covered it", st.ID, st.Ticket)
			}
		}
		if j, err := s.eng.Job(context.Background(), job.Ref{Queue: "race", ID: "r2"}); err != nil || j.Status != api.Cancelled {
			t.Errorf("r2, booked as the purge landed: %s, %v; want cancelled", j.Status, err)
		}
	})
}

// pausedRoom creates a paused queue of bookAhead at an interval of a
// second, the waiting room's tests' queue, and enqueues jobs of ids on it
// in one call: the first bookAhead booked, the others waiting. Nothing
// starts while it is paused.
func pausedRoom(t *testing.T, s *sim, queue string, bookAhead int, ids ...string) engine.EnqueueResult {
	t.Helper()
	s.createQueue(queue, slot.Config{Interval: time.Second, BookAhead: bookAhead})
	if _, err := s.eng.Pause(context.Background(), queue, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		return engine.EnqueueResult{}
	}
	return s.enqueue(queue, len(ids), func(i int, sp *job.Spec) { sp.ID = ids[i] })
}

// winsCreate makes a record of id exist just before the first CreateJobs
// that carries it: another call with the same id won the race.
type winsCreate struct {
	engine.State
	id   string
	once sync.Once
}

func (w *winsCreate) CreateJobs(ctx context.Context, jobs []job.Job) ([]bool, error) {
	for _, j := range jobs {
		if j.ID == w.id {
			w.once.Do(func() {
				other := j
				other.Booking, other.ParkReason, other.Status = 0, job.PausedQueue, job.Parked
				_, _ = w.State.CreateJobs(ctx, []job.Job{other})
			})
		}
	}
	return w.State.CreateJobs(ctx, jobs)
}

// Two enqueues of one id race on a bounded queue: the one whose record
// lost frees the booking it made (and the room's count it took), so the
// place is not held until the resume function's look.
func TestWaitingRoomLostRaceFreesBooking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 1, ResumeEvery: time.Hour, Wrap: func(st engine.State) engine.State {
			return &winsCreate{State: st, id: "dup"}
		}})
		defer s.stop()
		ctx := context.Background()
		pausedRoom(t, s, "lost", 2, "dup")
		h, err := s.store.GetHorizon(ctx, "lost")
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Booked) != 0 || h.Waiting != 0 {
			t.Fatalf("horizon after the lost enqueue: %d booked, %d waiting; want none: the winner holds no booking", len(h.Booked), h.Waiting)
		}
		a := s.enqueue("lost", 2, nil).Jobs
		if a[0].Status == api.StatusWaiting || a[1].Status == api.StatusWaiting {
			t.Fatalf("two jobs on a queue of book_ahead 2 with nothing booked: %+v", a)
		}
	})
}

// movesFirst moves the job of id (cancels it again, as another retry of
// it or a cancel would) just before the first UpdateJob that runs it
// again: this retry's write on it then fails.
type movesFirst struct {
	engine.State
	id   string
	once sync.Once
}

func (m *movesFirst) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if j.ID == m.id && j.Status != job.Cancelled {
		m.once.Do(func() {
			cur, err := m.State.GetJob(ctx, j.Ref())
			if err == nil {
				// The other retry ran it again first: parked for the
				// paused queue at a new attempt.
				moved := cur
				moved.Attempt++
				moved.Status, moved.ParkReason = job.Parked, job.PausedQueue
				if err := m.State.UpdateJob(ctx, moved, cur.Version()); err != nil {
					panic(err)
				}
			}
		})
	}
	return m.State.UpdateJob(ctx, j, from)
}

// Two retries of one job race on a bounded queue: the one whose write
// lost frees the booking it made, so the place is not held until the
// resume function's look.
func TestWaitingRoomLostRetryFreesBooking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m *movesFirst
		s := newSim(t, simOptions{Workers: 1, ResumeEvery: time.Hour, Wrap: func(st engine.State) engine.State {
			m = &movesFirst{State: st}
			return m
		}})
		defer s.stop()
		ctx := context.Background()
		pausedRoom(t, s, "rerun2", 2, "x1")
		if _, err := s.eng.CancelJob(ctx, job.Ref{Queue: "rerun2", ID: "x1"}); err != nil {
			t.Fatal(err)
		}
		m.id = "x1"
		if res, err := s.eng.Retry(ctx, engine.RetryRequest{Queue: "rerun2", IDs: []string{"x1"}}); err != nil || res.Skipped != 1 {
			t.Fatalf("Retry(x1) whose write lost: %+v, %v; want it skipped", res, err)
		}
		h, err := s.store.GetHorizon(ctx, "rerun2")
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Booked) != 0 {
			t.Fatalf("horizon after the lost retry: %d booked; want none", len(h.Booked))
		}
	})
}
