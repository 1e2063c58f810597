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
	"github.com/slotq/slotq/internal/slot"
)

// A job the worker keeps sending back without starting (here: every
// invocation is too short for its budget, so it is handed back each
// time) fails after MaxSendsBack sends with a clear error, instead of
// circling through the slot queue for ever (on Lambda, a recursive loop
// of the worker through its own queue). Sends with a start between them
// do not add up.
func TestSentBackBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran := 0
		b := newWorkBench(t, engine.Options{MaxSendsBack: 3, Runner: runFunc(func(context.Context, *job.Job, slot.Config) error {
			ran++
			return nil
		})}, nil)
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
		if j.Status != job.Failed || !strings.Contains(j.LastError, engine.ErrSentBackTooOften.Error()) || ran != 0 {
			t.Fatalf("after %d sends: %s (%q), ran %d; want failed with %q, never run", j.SentBack, j.Status, j.LastError, ran, engine.ErrSentBackTooOften)
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
