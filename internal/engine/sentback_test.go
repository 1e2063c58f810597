package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// A job the worker keeps sending back without starting (here: every
// invocation is too short for its budget, so it is handed back each
// time) fails after MaxSendsBack sends with a clear error, instead of
// circling through the slot queue for ever (on Lambda, a recursive loop
// of the worker through its own queue). Sends with a start between them
// do not add up.
func TestSentBackBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ran := newCountingBench(t, engine.Options{MaxSendsBack: 3}, nil)
		env := b.enqueue("circle", slot.Config{Interval: time.Second, TargetTimeout: 30 * time.Second})
		short := func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second) // never fits a 30s target
			t.Cleanup(cancel)
			return ctx
		}
		for i := 1; i <= 3; i++ {
			if err := b.eng.Work(short(), env); err != nil {
				t.Fatalf("Work %d: %v", i, err)
			}
			j := b.job("circle", "j1")
			if j.Status != job.Queued || j.SentBack != i {
				t.Fatalf("after hand-back %d: %s, sent back %d; want queued, %d", i, j.Status, j.SentBack, i)
			}
			env = j.Envelope()
		}
		sent := b.tr.Stats().Sent
		if err := b.eng.Work(short(), env); err != nil {
			t.Fatalf("Work: %v", err)
		}
		j := b.job("circle", "j1")
		if j.Status != job.Failed || !strings.Contains(j.LastError, engine.ErrSentBackTooOften.Error()) || *ran != 0 {
			t.Fatalf("after %d sends: %s (%q), ran %d; want failed with %q, never run", j.SentBack, j.Status, j.LastError, *ran, engine.ErrSentBackTooOften)
		}
		if b.tr.Stats().Sent != sent {
			t.Error("the failed job was sent again")
		}
	})
}

// A start clears the count: a job handed back, then started and retried,
// begins its retry with none.
func TestSentBackClearedByStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fail := errors.New("boom")
		b := newWorkBench(t, engine.Options{MaxSendsBack: 2, Runner: runFunc(func(context.Context, *job.Job, slot.Config) error {
			return fail
		})}, nil)
		env := b.enqueue("clear", slot.Config{Interval: time.Second, TargetTimeout: 30 * time.Second, MaxAttempts: 3})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.eng.Work(ctx, env); err != nil {
			t.Fatal(err)
		}
		if j := b.job("clear", "j1"); j.SentBack != 1 {
			t.Fatalf("sent back %d after a hand-back, want 1", j.SentBack)
		}
		long, cancel2 := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel2()
		j := b.job("clear", "j1")
		if err := b.eng.Work(long, j.Envelope()); err != nil {
			t.Fatal(err)
		}
		if j := b.job("clear", "j1"); j.Status != job.Queued || j.Attempt != 2 || j.SentBack != 0 {
			t.Fatalf("after a failed attempt: %s, attempt %d, sent back %d; want queued, attempt 2, 0", j.Status, j.Attempt, j.SentBack)
		}
	})
}

// No job fails for missing its slot, however often: a transport that
// delivers every message late, past the room of the queue's limit, makes
// jobs miss their slots, and each takes a new ticket once an attempt (then
// starts late, moving the line behind it, rather than circle the line), and
// a missed slot is no send-back toward MaxSendsBack's bound. Every job
// succeeds on its first attempt, re-ticketed at most twice.
func TestMissedSlotsNeverFail(t *testing.T) {
	forms := map[string]slot.Config{
		"interval": {Interval: 20 * time.Millisecond},
		"rate":     {Rate: api.Rate{N: 100, Per: time.Second}, Burst: 4},
		"window":   {Window: api.Rate{N: 5, Per: 100 * time.Millisecond}},
	}
	for name, cfg := range forms {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSim(t, simOptions{Workers: 8, Lead: time.Millisecond, MaxSendsBack: 1,
					Transport: memstore.TransportOptions{Jitter: 200 * time.Millisecond, DuplicateRate: 0.2, Seed: 9}})
				defer s.stop()
				s.createQueue("late", cfg)
				for range 10 {
					s.enqueue("late", 6, nil)
				}
				s.waitFinished("late", time.Hour)
				if failed := s.jobs("late", job.Failed); len(failed) > 0 {
					t.Fatalf("%d jobs failed for missing slots; first: %s (%s)", len(failed), failed[0].ID, failed[0].LastError)
				}
				done := s.jobs("late", job.Succeeded)
				if len(done) != 60 {
					t.Fatalf("%d of 60 jobs succeeded", len(done))
				}
				missed := 0
				for _, j := range done {
					if j.Attempt != 1 {
						t.Errorf("job %s ended at attempt %d: a missed slot is not an attempt", j.ID, j.Attempt)
					}
					if j.Retickets > 2 {
						t.Errorf("job %s was re-ticketed %d times, want at most 2", j.ID, j.Retickets)
					}
					missed += j.Retickets
				}
				if missed == 0 {
					t.Fatal("no job missed a slot: the transport's lateness tested nothing")
				}
			})
		})
	}
}
