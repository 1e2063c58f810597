package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// The waiting room's settings: a queue's book_ahead and key_book_ahead,
// a job's priority, a key's weight. Bad values are typed errors naming
// the full path, and nothing is written; good ones are kept.
func TestFairShareSettings(t *testing.T) {
	inSim(t, simOptions{Workers: 1}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		field := func(err error) string {
			var in *input.Error
			if !errors.As(err, &in) {
				t.Fatalf("err = %v, want an input error", err)
			}
			return in.Field
		}
		for _, c := range []struct {
			cfg  slot.Config
			want string
		}{
			{slot.Config{BookAhead: slot.MaxBookAhead + 1}, "config.book_ahead"},
			{slot.Config{BookAhead: -1}, "config.book_ahead"},
			{slot.Config{KeyBookAhead: slot.MaxBookAhead + 1}, "config.key_book_ahead"},
		} {
			if _, err := s.eng.CreateQueue(ctx, "fair", c.cfg); field(err) != c.want {
				t.Fatalf("Create(%+v): field %q, want %q", c.cfg, field(err), c.want)
			}
			if _, err := s.eng.Queue(ctx, "fair"); !errors.Is(err, engine.ErrQueueNotFound) {
				t.Fatalf("a refused create wrote the queue: %v", err)
			}
		}
		s.createQueue("fair", slot.Config{Interval: 10 * time.Millisecond, BookAhead: 20, KeyBookAhead: 5})
		q, err := s.eng.Queue(ctx, "fair")
		if err != nil || q.Config.BookAhead != 20 || q.Config.KeyBookAhead != 5 {
			t.Fatalf("Queue = %+v, %v; want book_ahead 20, key_book_ahead 5", q.Config, err)
		}

		bad := job.EnqueueRequest{Queue: "fair", Jobs: []job.Spec{{Kind: "lane"}, {Kind: "lane"}, {Kind: "lane", Priority: 6}}}
		if _, err := s.eng.Enqueue(ctx, bad); field(err) != "jobs[2].priority" {
			t.Fatalf("Enqueue with priority 6: field %q", field(err))
		}
		if q, _ := s.eng.Queue(ctx, "fair"); q.State.Ticket != 0 {
			t.Fatalf("a refused enqueue took %d tickets", q.State.Ticket)
		}
		res, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "fair", Job: &job.Spec{ID: "p1", Kind: "lane", Priority: 1, Key: "a"}})
		if err != nil {
			t.Fatal(err)
		}
		j, err := s.eng.Job(ctx, job.Ref{Queue: "fair", ID: res.Jobs[0].JobID})
		if err != nil || j.Priority != 1 {
			t.Fatalf("Get = priority %d, %v; want 1", j.Priority, err)
		}

		w := func(n int) *int { return &n }
		for _, n := range []int{0, -2, 1001} {
			_, err := s.eng.SetKeyLimits(ctx, "fair", []engine.KeyLimit{{Key: "a", Weight: w(2)}, {Key: "b", Weight: w(n)}})
			if field(err) != "keys[1].weight" {
				t.Fatalf("weight %d: field %q", n, field(err))
			}
		}
		if k, err := s.eng.Key(ctx, "fair", "a"); err != nil || k.Weight != 0 {
			t.Fatalf("a refused call set key a's weight: %+v, %v", k, err)
		}
		// A queue without key_limits takes weights (and only weights).
		keys, err := s.eng.SetKeyLimits(ctx, "fair", []engine.KeyLimit{{Key: "a", Weight: w(3)}})
		if err != nil || len(keys) != 1 || keys[0].Weight != 3 {
			t.Fatalf("SetKeyLimits(weight 3) = %+v, %v", keys, err)
		}
		if k, err := s.eng.Key(ctx, "fair", "a"); err != nil || k.Weight != 3 {
			t.Fatalf("Key(a) = %+v, %v; want weight 3", k, err)
		}
	})
}
