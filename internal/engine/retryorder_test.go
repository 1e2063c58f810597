package engine_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// work runs the message of job id as it is now, with time to spare.
func (b *workBench) work(q, id string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	j := b.job(q, id)
	if err := b.eng.Work(ctx, j.Envelope()); err != nil {
		b.t.Fatalf("work %s: %v", id, err)
	}
}

// A retry is a new acceptance at the end of the line: once a pause parks
// the retried job behind a job accepted after its first acceptance, the
// release round gives that job its ticket first (parked jobs keep their
// order, and the retried one's place is its retry's).
func TestRetryKeepsLineOrderThroughPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		failed := false
		b := newWorkBench(t, engine.Options{Runner: runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
			if j.ID == "a" && !failed {
				failed = true
				return errors.New("first attempt fails")
			}
			return nil
		})}, nil)
		if _, err := b.eng.CreateQueue(ctx, "line", slot.Config{Interval: time.Second, MaxAttempts: 3, Backoff: time.Second}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "line", Jobs: []job.Spec{{ID: "a", Kind: "k"}, {ID: "b", Kind: "k"}}}); err != nil {
			t.Fatal(err)
		}
		b.work("line", "a") // fails: retried at a new ticket, after b's
		if a := b.job("line", "a"); a.Status != job.Queued || a.Attempt != 2 {
			t.Fatalf("a after its failed attempt: %s, attempt %d", a.Status, a.Attempt)
		}
		if _, err := b.eng.Pause(ctx, "line", time.Time{}); err != nil {
			t.Fatal(err)
		}
		b.work("line", "b") // parked by the pause
		b.work("line", "a") // parked by the pause
		for _, id := range []string{"a", "b"} {
			if j := b.job("line", id); j.Status != job.Parked {
				t.Fatalf("%s: %s, want parked by the pause", id, j.Status)
			}
		}
		if _, err := b.eng.Unpause(ctx, "line"); err != nil {
			t.Fatal(err)
		}
		a, bj := b.job("line", "a"), b.job("line", "b")
		if a.Status != job.Queued || bj.Status != job.Queued || bj.Ticket > a.Ticket {
			t.Errorf("released: a %s at ticket %d, b %s at ticket %d; want b (accepted before a's retry) first", a.Status, a.Ticket, bj.Status, bj.Ticket)
		}
	})
}

// A failed attempt's backoff is the job's: a pause that parks the retried
// job before its backoff ends, released at once, does not start it
// before the backoff's end.
func TestRetryBackoffSurvivesPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const backoff = 10 * time.Minute
		var b *workBench
		var failedAt time.Time
		b = newWorkBench(t, engine.Options{Runner: runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
			// The queue is paused while the attempt runs: the retry
			// is parked at once.
			if _, err := b.eng.Pause(ctx, "backoff", time.Time{}); err != nil {
				t.Error(err)
			}
			failedAt = time.Now()
			return errors.New("fails")
		})}, nil)
		if _, err := b.eng.CreateQueue(ctx, "backoff", slot.Config{Interval: time.Second, MaxAttempts: 3, Backoff: backoff, MaxBackoff: backoff}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "backoff", Job: &job.Spec{ID: "a", Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
		b.work("backoff", "a")
		if a := b.job("backoff", "a"); a.Status != job.Parked || a.Attempt != 2 {
			t.Fatalf("a after its failed attempt: %s, attempt %d; want parked by the pause, attempt 2", a.Status, a.Attempt)
		}
		if _, err := b.eng.Unpause(ctx, "backoff"); err != nil {
			t.Fatal(err)
		}
		a := b.job("backoff", "a")
		if a.Status == job.Parked && a.ParkReason == job.PausedQueue {
			t.Fatalf("a still held by the pause after resume")
		}
		if a.SlotAt.Before(failedAt.Add(backoff)) {
			t.Errorf("released to start at %s, %s after its failed attempt; want no earlier than its backoff (%s)",
				a.SlotAt.Format(time.TimeOnly), a.SlotAt.Sub(failedAt), backoff)
		}
	})
}
