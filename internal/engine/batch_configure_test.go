package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// A configure that slows a batched queue while its batches wait books
// each batch again under the new interval, and each still starts as one:
// its joined jobs' watches, due a second after the slot their records
// were told, find the batch's start moved and wait for it, rather than
// take new tickets and leave their leader to start alone. Three batches
// of 10 on an interval of 1 s configured to 5 s, or of 10 min to 20 min:
// three calls
// of 10 jobs, the new interval apart, none before the start the queue
// showed for it, no job re-ticketed.
func TestBatchesMovedByConfigureStartAsOne(t *testing.T) {
	// 1 s to 5 s: the watches wait in their invocation; 10 min to 20
	// min: beyond it, and beyond the transport's reach, they come again,
	// in hops.
	for _, c := range []struct{ was, iv time.Duration }{{time.Second, 5 * time.Second}, {10 * time.Minute, 20 * time.Minute}} {
		t.Run(c.iv.String(), func(t *testing.T) { batchesMovedByConfigure(t, c.was, c.iv) })
	}
}

func batchesMovedByConfigure(t *testing.T, was, iv time.Duration) {
	// Each delivery has a worker's two minutes, as on Lambda.
	inSim(t, simOptions{Workers: 4, Invocation: 2 * time.Minute}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		calls := batchCalls(s)
		s.createQueue("b", slot.Config{Interval: was, BatchMax: 10, BatchWait: 500 * time.Millisecond})
		res := s.enqueue("b", 30, func(_ int, sp *job.Spec) { sp.Kind = "simb" })
		if _, err := s.eng.ChangeConfig(ctx, "b", slot.ConfigUpdate{Interval: &iv}); err != nil {
			t.Fatal(err)
		}
		shown := map[string]time.Time{}
		for _, a := range res.Jobs {
			j, err := s.eng.Job(ctx, job.Ref{Queue: "b", ID: a.JobID})
			if err != nil {
				t.Fatal(err)
			}
			shown[j.ID] = j.SlotAt
		}
		s.waitFinished("b", 12*iv+time.Hour)
		s.checkNoneFailed("b")
		got := calls()
		if len(got) != 3 {
			t.Fatalf("%d calls, want 3 batches of 10: %+v", len(got), got)
		}
		for i, c := range got {
			if len(c.IDs) != 10 {
				t.Errorf("call %d carried %d jobs, want 10", i, len(c.IDs))
			}
			if i > 0 && c.At.Sub(got[i-1].At) < iv {
				t.Errorf("call %d came %v after the one before, under the new interval %v", i, c.At.Sub(got[i-1].At), iv)
			}
			for _, id := range c.IDs {
				if c.At.Before(shown[id]) {
					t.Errorf("%s started at %v, before the slot %v its record showed after the configure", id, c.At, shown[id])
				}
			}
		}
		handedBack := 0
		for _, j := range s.jobs("b", job.Succeeded) {
			if j.Retickets != 0 {
				t.Errorf("%s took %d new tickets, want none", j.ID, j.Retickets)
			}
			for _, ev := range j.History {
				if ev.Kind == job.HandedBack {
					handedBack++
				}
			}
		}
		// Beyond an invocation's time, the watches came again.
		if far := iv > 2*time.Minute; far != (handedBack > 0) {
			t.Errorf("%d jobs came again for batches %v apart; want some exactly when that lies beyond an invocation's time", handedBack, iv)
		}
	})
}
