package engine_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/pkg/engine"
	"github.com/slotq/slotq/pkg/job"
	"github.com/slotq/slotq/pkg/slot"
)

// Appointments booked in any order: 5,000 jobs with not_before spread at
// random over the next two days, on one queue, with the resume function
// once a minute and its budget as shipped. The resume function finds each
// by its due time, not by its ticket: every job is released once, before
// its not_before, and starts at it (or at the first gap the spacing
// allows) on its first ticket. Walking parked jobs by ticket, a budget a
// minute, re-ticketed 456 of them, up to 46 h late.
func TestResumeScheduledInAnyOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, interval = 5000, time.Second
		s := newSim(t, simOptions{Workers: 4, Seed: 16})
		defer s.stop()
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

// A pause in the middle of a release round (design.md §5.6): the round's
// first pass re-tickets a and b (budget 2) and sends them; the queue is
// paused again before they start, so they park again, under their new
// tickets. The next round releases a, b, c, d in the order they were
// accepted: order comes from the line order a job took at enqueue, which
// no re-ticket rewrites. Listed by ticket, it came out c, d, a, b.
func TestResumeRepauseKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 2, ResumeBudget: 2, Seed: 6})
		defer s.stop()
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
			if j, err := s.eng.Job(ctx, job.Key{Queue: "rp", ID: id}); err != nil || !engine.JobHeld(j) {
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
			j, err := s.eng.Job(ctx, job.Key{Queue: "rp", ID: id})
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
