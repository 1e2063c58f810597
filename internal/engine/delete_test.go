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

// Deleting a queue removes its jobs: a queue created again under the name
// starts clean. An id enqueued again is a new job that runs; the old
// job's message does not touch it; the old jobs read as not found, are not
// listed, and expire — also a running one whose worker died.
func TestDeleteQueueStartsClean(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, ran := newCountingBench(t, engine.Options{}, nil)
		ctx := context.Background()
		cfg := slot.Config{Interval: time.Second}
		oldEnv := b.enqueue("gone", cfg) // j1, queued

		// j2 ran out its attempts: a dead letter of the old queue.
		_, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "gone", Jobs: []job.Spec{{ID: "j2", Kind: "k"}, {ID: "j3", Kind: "k"}}})
		if err != nil {
			t.Fatal(err)
		}
		j2 := b.job("gone", "j2")
		from := j2.Version()
		j2.Status, j2.StartedAt = job.Running, time.Now()
		if err := b.store.UpdateJob(ctx, j2, from); err != nil {
			t.Fatal(err)
		}
		from = j2.Version()
		j2.Status, j2.FinishedAt, j2.ExpiresAt = job.Failed, time.Now(), time.Now().Add(24*time.Hour)
		if err := b.store.UpdateJob(ctx, j2, from); err != nil {
			t.Fatal(err)
		}
		// j3 is running, and its worker is about to die.
		j3 := b.job("gone", "j3")
		from = j3.Version()
		j3.Status, j3.StartedAt = job.Running, time.Now()
		if err := b.store.UpdateJob(ctx, j3, from); err != nil {
			t.Fatal(err)
		}

		if _, err := b.eng.DeleteQueue(ctx, "gone"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.CreateQueue(ctx, "gone", cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.Job(ctx, job.Ref{Queue: "gone", ID: "j2"}); !errors.Is(err, engine.ErrJobNotFound) {
			t.Errorf("old dead letter j2 of the new queue: %v, want not found", err)
		}
		if failed, err := b.eng.Jobs(ctx, engine.ListRequest{Queue: "gone", Status: job.Failed}); err != nil || len(failed) != 0 {
			t.Errorf("the new queue lists failed jobs %v, %v; want none", failed, err)
		}
		if st, err := b.eng.Stats(ctx, "gone"); err != nil || st.Failed != 0 {
			t.Errorf("the new queue's stats count %d failed jobs (%v); want 0", st.Failed, err)
		}

		again, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "gone", Job: &job.Spec{ID: "j1", Kind: "k"}})
		if err != nil {
			t.Fatal(err)
		}
		if a := again.Jobs[0]; a.Existing || a.Ticket != 1 || a.Status != job.Queued {
			t.Fatalf("j1 enqueued again on the new queue: %+v; want a new job, ticket 1", a)
		}
		newJ1 := b.job("gone", "j1")

		// The old j1's message comes: it must leave the new j1 alone.
		if err := b.eng.Work(ctx, oldEnv); err != nil {
			t.Fatalf("Work(old j1): %v", err)
		}
		if *ran != 0 {
			t.Fatalf("the old j1's message ran a job")
		}
		if got := b.job("gone", "j1"); got.Version() != newJ1.Version() {
			t.Fatalf("the old j1's message moved the new j1 to %+v", got.Version())
		}
		if err := b.eng.Work(ctx, newJ1.Envelope()); err != nil {
			t.Fatalf("Work(new j1): %v", err)
		}
		if got := b.job("gone", "j1"); got.Status != job.Succeeded || *ran != 1 {
			t.Fatalf("the new j1 ended %s after %d runs; want succeeded, once", got.Status, *ran)
		}

		// j3's message comes back after the lease: its attempt is lost, and
		// its queue gone, so it expires rather than stay running.
		time.Sleep(17 * time.Minute)
		if err := b.eng.Work(ctx, j3.Envelope()); err != nil {
			t.Fatalf("Work(j3): %v", err)
		}
		if got, err := b.store.GetJob(ctx, job.Ref{Queue: "gone", ID: "j3"}); !errors.Is(err, engine.ErrJobNotFound) {
			t.Errorf("running job of the deleted queue is %s, want expired", got.Status)
		}
	})
}

// A queued job whose queue is deleted expires when its message comes.
func TestDeletedQueueJobExpires(t *testing.T) {
	b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error { return nil })}, nil)
	ctx := context.Background()
	env := b.enqueue("gone", slot.Config{Interval: time.Second})
	if _, err := b.eng.DeleteQueue(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := b.eng.Work(ctx, env); err != nil {
		t.Fatalf("Work: %v", err)
	}
	if got, err := b.store.GetJob(ctx, job.Ref{Queue: "gone", ID: "j1"}); !errors.Is(err, engine.ErrJobNotFound) {
		t.Errorf("queued job of the deleted queue is %s, want expired", got.Status)
	}
}
