package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Appointments booked in any order: 5,000 jobs with not_before spread at
// random over the next two days, on one queue, with the resume function
// once a minute and its budget as shipped. The resume function finds each
// by its due time, not by its ticket: every job is released once, before
// its not_before, and starts at it (or at the first gap the spacing
// allows) on its first ticket. Walking parked jobs by ticket, a budget a
// minute, re-ticketed 456 of them, up to 46 h late.
func TestResumeScheduledInAnyOrder(t *testing.T) {
	inSim(t, simOptions{Workers: 4, Seed: 16}, func(t *testing.T, s *sim) {
		const n, interval = 5000, time.Second
		s.createQueue("appts", slot.Config{Interval: interval})
		r := rand.New(rand.NewPCG(16, 1))
		notBefore := map[string]time.Time{}
		now := time.Now()
		// Booked one at a time, as appointments are.
		for range n {
			nb := now.Add(20*time.Minute + time.Duration(r.Int64N(int64(48*time.Hour)))).Truncate(time.Millisecond)
			a := s.enqueue("appts", 1, func(_ int, sp *job.Spec) { sp.NotBefore = &nb }).Jobs[0]
			notBefore[a.JobID] = nb
			if a.Status != job.Parked || !a.SlotAt.Equal(nb) {
				t.Fatalf("job %s is %s at %v; want parked (its not_before is beyond the transport's reach) at %v", a.JobID, a.Status, a.SlotAt, nb)
			}
		}
		time.Sleep(48*time.Hour + 30*time.Minute)

		starts := s.startsOf("appts")
		if len(starts) != n {
			t.Errorf("%d starts of %d jobs", len(starts), n)
		}
		var late []time.Duration
		reticketed := 0
		for _, st := range starts {
			nb := notBefore[st.ID]
			delete(notBefore, st.ID)
			late = append(late, st.At.Sub(nb))
			if st.At.Before(nb) || st.At.After(nb.Add(5*interval)) {
				t.Errorf("job %s started at %v, %v after its not_before %v", st.ID, st.At, st.At.Sub(nb), nb)
			}
		}
		for _, j := range s.store.Jobs("appts") {
			released := 0
			for _, ev := range j.History {
				if ev.Kind == job.Released {
					released++
				}
			}
			if j.Retickets != 0 || released != 1 || j.Status != job.Succeeded {
				reticketed += min(1, j.Retickets)
				t.Errorf("job %s: %s, retickets %d, released %d times; want succeeded, released once on its first ticket", j.ID, j.Status, j.Retickets, released)
			}
		}
		if len(notBefore) > 0 {
			t.Errorf("%d jobs never started", len(notBefore))
		}
		slices.Sort(late)
		if len(late) > 0 {
			t.Logf("%d jobs: start − not_before p50 %v, p99 %v, max %v; re-ticketed %d", len(late), late[len(late)/2], late[len(late)*99/100], late[len(late)-1], reticketed)
		}
	})
}

// A pause in the middle of a release round (parked jobs keep their order
// through any pause, resume and partial round): the round's
// first pass re-tickets a and b (budget 2) and sends them; the queue is
// paused again before they start, so they park again, under their new
// tickets. The next round releases a, b, c, d in the order they were
// accepted: order comes from the line order a job took at enqueue, which
// no re-ticket rewrites. Listed by ticket, it came out c, d, a, b.
func TestResumeRepauseKeepsOrder(t *testing.T) {
	inSim(t, simOptions{Workers: 2, ResumeBudget: 2, Seed: 6}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("rp", slot.Config{Interval: time.Second})
		if _, err := s.eng.Pause(ctx, "rp", time.Time{}); err != nil {
			t.Fatal(err)
		}
		ids := []string{"a", "b", "c", "d"}
		s.enqueue("rp", 4, func(i int, sp *job.Spec) { sp.ID = ids[i] })
		rep, err := s.eng.Unpause(ctx, "rp")
		if err != nil {
			t.Fatal(err)
		}
		if rep.Reticketed != 2 {
			t.Fatalf("first pass: %+v; want 2 re-ticketed (the budget)", rep)
		}
		// Paused again before a and b start: they park again.
		if _, err := s.eng.Pause(ctx, "rp", time.Time{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		for _, id := range []string{"a", "b"} {
			if j, err := s.eng.Job(ctx, job.Ref{Queue: "rp", ID: id}); err != nil || !engine.JobHeld(j) {
				t.Fatalf("job %s: %+v, %v; want it held by the second pause", id, j, err)
			}
		}
		if _, err := s.eng.Unpause(ctx, "rp"); err != nil {
			t.Fatal(err)
		}
		s.waitFinished("rp", 10*time.Minute)
		var order []string
		for _, st := range s.startsOf("rp") {
			order = append(order, st.ID)
		}
		if !slices.Equal(order, ids) {
			t.Fatalf("start order %v, want %v: parked order not kept", order, ids)
		}
		var last int64
		for _, id := range ids {
			j, err := s.eng.Job(ctx, job.Ref{Queue: "rp", ID: id})
			if err != nil {
				t.Fatal(err)
			}
			if j.Ticket <= last {
				t.Fatalf("job %s ends on ticket %d after ticket %d: order inverted", id, j.Ticket, last)
			}
			last = j.Ticket
		}
	})
}

// The figures of docs/costs.md: 100,000 jobs booked one at a time with
// not_before at random over the next 7 days, across 100 queues, resume
// once a minute (budget as shipped), 8 workers. It reports release
// lateness (released at − due, due being 15 min before the slot), start
// − not_before, and re-tickets, which must be 0. make bench runs it
// (SLOTQ_SIM_WEEK=1); it takes a minute or so.
func TestResumeScheduledWeek(t *testing.T) {
	if os.Getenv("SLOTQ_SIM_WEEK") == "" {
		t.Skip("set SLOTQ_SIM_WEEK=1 (make bench) to run the week's simulation")
	}
	inSim(t, simOptions{Workers: 8, Seed: 7}, func(t *testing.T, s *sim) {
		const queues, perQueue, interval = 100, 1000, time.Second
		r := rand.New(rand.NewPCG(7, 7))
		now := time.Now()
		notBefore := map[job.Ref]time.Time{}
		for q := range queues {
			s.createQueue(fmt.Sprintf("week%03d", q), slot.Config{Interval: interval})
		}
		for range queues * perQueue {
			q := fmt.Sprintf("week%03d", r.IntN(queues))
			nb := now.Add(20*time.Minute + time.Duration(r.Int64N(int64(7*24*time.Hour)))).Truncate(time.Millisecond)
			a := s.enqueue(q, 1, func(_ int, sp *job.Spec) { sp.NotBefore = &nb }).Jobs[0]
			notBefore[job.Ref{Queue: q, ID: a.JobID}] = nb
		}
		time.Sleep(7*24*time.Hour + time.Hour)

		var release, start []time.Duration
		reticketed, unfinished := 0, 0
		for q := range queues {
			name := fmt.Sprintf("week%03d", q)
			for _, j := range s.store.Jobs(name) {
				nb := notBefore[j.Ref()]
				reticketed += j.Retickets
				if j.Status != job.Succeeded {
					unfinished++
					continue
				}
				for _, ev := range j.History {
					if ev.Kind == job.Released {
						release = append(release, ev.At.Sub(nb.Add(-15*time.Minute)))
					}
				}
				start = append(start, j.StartedAt.Sub(nb))
			}
		}
		slices.Sort(release)
		slices.Sort(start)
		pct := func(ds []time.Duration, p int) time.Duration { return ds[min(len(ds)-1, len(ds)*p/100)] }
		t.Logf("figures: %d jobs over 7 days across %d queues: release lateness p99 %v, max %v; start − not_before p50 %v, p99 %v, max %v; re-tickets %d; unfinished %d",
			len(start), queues, pct(release, 99), release[len(release)-1], pct(start, 50), pct(start, 99), start[len(start)-1], reticketed, unfinished)
		if reticketed != 0 || unfinished != 0 || len(release) != queues*perQueue {
			t.Errorf("re-tickets %d, unfinished %d, releases %d of %d jobs; want 0, 0 and one each", reticketed, unfinished, len(release), queues*perQueue)
		}
		if m := release[len(release)-1]; m >= time.Minute {
			t.Errorf("a release %v after its due time; want within the schedule's minute", m)
		}
	})
}

// A job parked far ahead that a purge's listing missed (the purge covered
// its ticket, but it was not cancelled), whose slot then passed: the
// resume function cancels it instead of giving it a new ticket, so it
// never starts after the purge.
func TestResumeCancelsPurgedTickets(t *testing.T) {
	inSim(t, simOptions{Workers: 1, Seed: 3}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("pg", slot.Config{Interval: time.Second})
		nb := time.Now().Add(20 * time.Minute)
		id := s.enqueue("pg", 1, func(_ int, sp *job.Spec) { sp.NotBefore = &nb }).Jobs[0].JobID
		// The queue's purge, without the listing that cancels its
		// parked jobs: the one a purge can miss.
		if _, err := s.store.Purge(ctx, "pg"); err != nil {
			t.Fatal(err)
		}
		// The resume function misses the release (say it failed for
		// 40 minutes): the job's slot passes while it is parked.
		s.stop()
		time.Sleep(40 * time.Minute)
		eng := engine.New(engine.Options{State: s.store, Transport: s.tr})
		if _, err := eng.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		j, err := s.store.GetJob(ctx, job.Ref{Queue: "pg", ID: id})
		if err != nil || j.Status != job.Cancelled || j.Retickets != 0 {
			t.Fatalf("job %s: %s, retickets %d (%v); want cancelled on its purged ticket", id, j.Status, j.Retickets, err)
		}
	})
}
