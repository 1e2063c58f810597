package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// A job whose not_before lies beyond the line is scheduled: it starts at
// its not_before, or at the first moment after it the spacing allows,
// even with a backlog enqueued after it (whose later tickets start
// first). It is never passed nor re-ticketed: not at the gate, and not
// when the resume function releases it from far away.
func TestScheduledStartsAtNotBefore(t *testing.T) {
	inSim(t, simOptions{Workers: 4}, func(t *testing.T, s *sim) {
		const interval = time.Second
		s.createQueue("sched", slot.Config{Interval: interval})
		ctx := context.Background()

		near := time.Now().Add(20 * time.Second)
		far := time.Now().Add(time.Hour)
		sched := s.enqueue("sched", 2, func(i int, sp *job.Spec) {
			sp.NotBefore = &[]time.Time{near, far}[i]
		}).Jobs
		s.enqueue("sched", 60, nil) // a backlog at near, behind in tickets
		time.Sleep(58 * time.Minute)
		s.enqueue("sched", 180, nil) // a backlog at far
		s.waitFinished("sched", 2*time.Hour)

		sent := map[string]time.Time{sched[0].JobID: near, sched[1].JobID: far}
		for _, st := range s.startsOf("sched") {
			nb, ok := sent[st.ID]
			if !ok {
				continue
			}
			delete(sent, st.ID)
			if st.At.Before(nb) || st.At.After(nb.Add(interval+10*time.Millisecond)) {
				t.Errorf("scheduled job %s started at %v; want at its not_before %v or the first gap after it", st.ID, st.At, nb)
			}
			j, err := s.eng.Job(ctx, job.Ref{Queue: "sched", ID: st.ID})
			if err != nil {
				t.Fatal(err)
			}
			if j.Retickets != 0 || j.Ticket != st.Ticket || !j.Scheduled {
				t.Errorf("scheduled job %s: retickets %d, ticket %d (started as %d), scheduled %v; want it started on its first ticket",
					st.ID, j.Retickets, j.Ticket, st.Ticket, j.Scheduled)
			}
		}
		if len(sent) > 0 {
			t.Fatalf("scheduled jobs never started: %v", sent)
		}
		checkSpacing(t, s.startsOf("sched"), interval, slot.DefaultSkew)
	})
}

// A batch of a line job followed by scheduled ones (a schedule's
// occurrences made ahead, the first of them due now) counts only the line
// job as waiting in line: Stats.Waiting is 1 until it starts, then 0,
// while the scheduled jobs wait for their times. It counted the whole
// batch, for good: a deleted schedule's queue showed 119 waiting.
func TestStatsWaitingLineBeforeScheduled(t *testing.T) {
	inSim(t, simOptions{Workers: 4}, func(t *testing.T, s *sim) {
		s.createQueue("mixed", slot.Config{Interval: 100 * time.Millisecond})
		ctx := context.Background()
		// Paused, so the line job cannot start before the first look.
		if _, err := s.eng.Pause(ctx, "mixed", time.Time{}); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Hour)
		s.enqueue("mixed", 30, func(i int, sp *job.Spec) {
			if i > 0 {
				at := later.Add(time.Duration(i) * time.Second)
				sp.NotBefore = &at
			}
		})
		waiting := func() int64 {
			st, err := s.eng.Stats(ctx, "mixed")
			if err != nil {
				t.Fatal(err)
			}
			return st.Waiting
		}
		if w := waiting(); w != 1 {
			t.Fatalf("one line job and 29 scheduled ones: waiting %d, want 1", w)
		}
		if _, err := s.eng.Unpause(ctx, "mixed"); err != nil {
			t.Fatal(err)
		}
		s.waitStarts("mixed", 1, time.Minute)
		if w := waiting(); w != 0 {
			t.Fatalf("the line job started, the scheduled ones wait: waiting %d, want 0", w)
		}
	})
}
