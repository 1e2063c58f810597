package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// holdCreate is a State whose first CreateJobs waits for release: an
// enqueue that took its tickets and stalls before writing its records.
type holdCreate struct {
	engine.State
	first    atomic.Bool
	reached  chan struct{}
	released chan struct{}
}

func (h *holdCreate) CreateJobs(ctx context.Context, jobs []job.Job) ([]bool, error) {
	if h.first.CompareAndSwap(false, true) {
		close(h.reached)
		<-h.released
	}
	return h.State.CreateJobs(ctx, jobs)
}

// An enqueue of a queue's deleted generation that writes its record late
// never replaces the job of the same id that the queue, created again,
// accepted meanwhile: that job keeps its record and runs (nothing lost).
func TestLateEnqueueOfDeletedGeneration(t *testing.T) {
	ctx := context.Background()
	var hold *holdCreate
	b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error { return nil })},
		func(s engine.State) engine.State {
			hold = &holdCreate{State: s, reached: make(chan struct{}), released: make(chan struct{})}
			return hold
		})
	cfg := slot.Config{Interval: time.Millisecond}
	if _, err := b.eng.CreateQueue(ctx, "gens", cfg); err != nil {
		t.Fatal(err)
	}
	late := make(chan error, 1)
	go func() {
		_, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "gens", Job: &job.Spec{ID: "x", Kind: "old"}})
		late <- err
	}()
	select { // the old generation's enqueue has its ticket, not its record
	case <-hold.reached:
	case <-time.After(time.Minute):
		t.Fatal("the enqueue never came to its create")
	}
	if _, err := b.eng.DeleteQueue(ctx, "gens"); err != nil {
		t.Fatal(err)
	}
	q, err := b.eng.CreateQueue(ctx, "gens", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "gens", Job: &job.Spec{ID: "x", Kind: "new"}}); err != nil {
		t.Fatal(err)
	}
	close(hold.released)
	select { // an error (its queue is gone) or an answer: either way it must not have written over x
	case <-late:
	case <-time.After(time.Minute):
		t.Fatal("the late enqueue never returned")
	}
	x := b.job("gens", "x")
	if x.Gen != q.Gen || x.Kind != "new" {
		t.Fatalf("job x: generation %d, kind %q; want the new generation's (%d, new)", x.Gen, x.Kind, q.Gen)
	}
	b.work("gens", "x")
	if x := b.job("gens", "x"); x.Status != job.Succeeded {
		t.Errorf("the new generation's job x: %s, want succeeded", x.Status)
	}
}

func TestGenBefore(t *testing.T) {
	r1, r2 := engine.RandomGens+5, engine.RandomGens+9
	for _, tc := range []struct {
		old, gen int64
		want     bool
	}{
		{100, 200, true}, {200, 100, false}, {100, 100, false},
		{r1, 100, true},                                 // a random generation is before every ordered one
		{100, r1, false},                                // and never replaces one
		{r1, r2, true}, {r2, r1, true}, {r1, r1, false}, // random ones: as before, any other
	} {
		if got := engine.GenBefore(tc.old, tc.gen); got != tc.want {
			t.Errorf("GenBefore(%d, %d) = %v, want %v", tc.old, tc.gen, got, tc.want)
		}
	}
}

// An attempt of a deleted generation that is answered "slow down" leaves
// the key's meter of the queue created again under the same name alone:
// that queue's jobs of the key keep the key's limit, counted from their
// own starts.
func TestDeletedGenerationLeavesKeyMeter(t *testing.T) {
	inSim(t, simOptions{Workers: 4}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		const keyIv = 10 * time.Second
		// No cap on a key's running jobs: the new queue's job of k need
		// not wait for the old one's attempt to end.
		cfg := slot.Config{Interval: 10 * time.Millisecond, Skew: 5 * time.Millisecond,
			KeyLimits: []api.Limit{{Interval: keyIv}}, KeyMaxRunning: slot.NoKeyCap}
		s.createQueue("gens", cfg)
		started, release := make(chan struct{}), make(chan struct{})
		s.mux.HandleFunc("hold", func(context.Context, *api.Job) error {
			close(started)
			<-release
			return target.RetryAfter(50 * time.Millisecond)
		})
		// o0 runs; o1 (ticket 2 of key k) runs until the new queue's job
		// of k has started, and is answered "slow down".
		s.enqueue("gens", 2, func(i int, sp *job.Spec) {
			sp.Key, sp.ID = "k", fmt.Sprintf("o%d", i)
			if i == 1 {
				sp.Kind = "hold"
			}
		})
		<-started
		if _, err := s.eng.DeleteQueue(ctx, "gens"); err != nil {
			t.Fatal(err)
		}
		s.createQueue("gens", cfg)
		s.enqueue("gens", 1, func(_ int, sp *job.Spec) { sp.Key, sp.ID = "k", "n1" })
		s.waitStarts("gens", 2, time.Hour) // o0 and n1
		before, err := s.store.GetMeter(ctx, "gens", "k")
		if err != nil {
			t.Fatal(err)
		}
		close(release)
		time.Sleep(time.Second) // the old attempt's answer is recorded
		after, err := s.store.GetMeter(ctx, "gens", "k")
		if err != nil {
			t.Fatal(err)
		}
		if after.Gen != before.Gen || after.Version != before.Version || !after.State.LastStart.Equal(before.State.LastStart) {
			t.Fatalf("the new queue's meter of k changed under the deleted generation's slow-down:\nbefore %+v\nafter  %+v", before, after)
		}
		s.enqueue("gens", 1, func(_ int, sp *job.Spec) { sp.Key, sp.ID = "k", "n2" })
		s.waitFinished("gens", time.Hour)
		at := map[string]time.Time{}
		for _, st := range s.startsOf("gens") {
			at[st.ID] = st.At
		}
		if gap := at["n2"].Sub(at["n1"]); gap < keyIv-cfg.Skew {
			t.Fatalf("n2 started %v after n1: the key's limit is one start every %v", gap, keyIv)
		}
	})
}
