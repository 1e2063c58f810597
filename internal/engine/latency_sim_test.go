package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// slowStore answers every call of the queue's state (and every job write)
// after DynamoDB's median latency, applying it halfway, and counts the
// worker's reads of the queue apart from the enqueue's.
type slowStore struct {
	engine.State
	latency time.Duration

	mu           sync.Mutex
	workerReads  int
	enqueueReads int
	gates        int
	refused      int
	admits       int
}

// enqueueCall marks an enqueue's context: its reads of the queue are not
// a worker's.
type enqueueCall struct{}

func (s *slowStore) call(f func()) {
	time.Sleep(s.latency / 2)
	f()
	time.Sleep(s.latency - s.latency/2)
}

func (s *slowStore) GetQueue(ctx context.Context, name string) (q engine.Queue, err error) {
	s.mu.Lock()
	if ctx.Value(enqueueCall{}) != nil {
		s.enqueueReads++
	} else {
		s.workerReads++
	}
	s.mu.Unlock()
	s.call(func() { q, err = s.State.GetQueue(ctx, name) })
	return q, err
}

func (s *slowStore) Gate(ctx context.Context, r engine.GateRequest) (st slot.State, err error) {
	s.call(func() { st, err = s.State.Gate(ctx, r) })
	s.mu.Lock()
	s.gates++
	var ge *engine.GateError
	if errors.As(err, &ge) {
		s.refused++
	}
	s.mu.Unlock()
	return st, err
}

// Admit is the gate of a booked start: a worker's read of the queue.
func (s *slowStore) Admit(ctx context.Context, r engine.AdmitRequest) (q engine.Queue, err error) {
	s.mu.Lock()
	s.workerReads++
	s.admits++
	s.mu.Unlock()
	s.call(func() { q, err = s.State.Admit(ctx, r) })
	return q, err
}

func (s *slowStore) Take(ctx context.Context, r engine.TakeRequest) (t engine.Taken, err error) {
	s.call(func() { t, err = s.State.Take(ctx, r) })
	return t, err
}

func (s *slowStore) CreateJobs(ctx context.Context, jobs []job.Job) (c []bool, err error) {
	s.call(func() { c, err = s.State.CreateJobs(ctx, jobs) })
	return c, err
}

func (s *slowStore) UpdateJob(ctx context.Context, j job.Job, from job.Version) (err error) {
	s.call(func() { err = s.State.UpdateJob(ctx, j, from) })
	return err
}

// TestStoreLatencyNoPolling runs one queue at 500 starts a second (burst
// 10) fed by 8 producers of single jobs, on a store that answers each
// call in 5 ms, as DynamoDB does from a Lambda, with workers that go to
// the gate 50 ms ahead. Workers of neighbouring tickets must not wait
// for each other's starts by reading the queue again and again (a
// worker that holds for a lower ticket goes to the gate a lead before
// that ticket's start, not at it, which the store's latency would make
// late): about one read of the queue per start, and, since the take
// booked each start's moment with room to be late in, no write on the
// queue's state for a start on time (the gate of a booked start is that
// read); few re-tickets, and the limit kept.
func TestStoreLatencyNoPolling(t *testing.T) {
	const (
		producers = 8
		perProd   = 50
		latency   = 5 * time.Millisecond
	)
	var slow *slowStore
	o := simOptions{Workers: 64, Lead: 50 * time.Millisecond, Seed: 5, Wrap: func(st engine.State) engine.State {
		slow = &slowStore{State: st, latency: latency}
		return slow
	}}
	inSim(t, o, func(t *testing.T, s *sim) {
		cfg := slot.Config{Rate: api.Rate{N: 500, Per: time.Second}, Burst: 10}
		s.createQueue("hot", cfg)
		ctx := context.WithValue(context.Background(), enqueueCall{}, true)
		produce(ctx, producers, perProd, 5, 1, func(p, c int, rnd *rand.Rand) time.Duration {
			req := job.EnqueueRequest{Queue: "hot", Job: &job.Spec{Kind: "sim", Payload: json.RawMessage(fmt.Sprintf(`{"p":%d,"c":%d}`, p, c))}}
			if _, err := s.eng.Enqueue(ctx, req); err != nil {
				t.Errorf("enqueue: %v", err)
			}
			return time.Duration(rnd.Int64N(int64(2 * time.Millisecond)))
		})
		s.waitFinished("hot", time.Hour)
		starts := s.startsOf("hot")
		if len(starts) != producers*perProd {
			t.Fatalf("%d starts of %d jobs", len(starts), producers*perProd)
		}
		q, err := s.eng.Queue(context.Background(), "hot")
		if err != nil {
			t.Fatal(err)
		}
		checkLimits(t, q.Config.LimitList(), q.Config.Skew, starts)
		retickets := 0
		for _, j := range s.jobs("hot", job.Succeeded) {
			retickets += j.Retickets
		}
		n := float64(len(starts))
		slow.mu.Lock()
		defer slow.mu.Unlock()
		t.Logf("per start: %.2f worker reads of the queue (%.2f admitted booked starts), %.2f gates (%.2f refused), %.3f re-tickets",
			float64(slow.workerReads)/n, float64(slow.admits)/n, float64(slow.gates)/n, float64(slow.refused)/n, float64(retickets)/n)
		if g := float64(slow.gates) / n; g > 0.05 {
			t.Errorf("%.2f gate writes a start, want at most 0.05: a booked start on time passes by the queue's read, not by a write on it", g)
		}
		if r := float64(slow.workerReads) / n; r > 1.5 {
			t.Errorf("workers read the queue %.2f times a start, want at most 1.5: a worker waiting for its moment polls the queue", r)
		}
		if r := float64(slow.refused) / n; r > 0.1 {
			t.Errorf("%.2f refused gates a start, want at most 0.1", r)
		}
		if r := float64(retickets) / n; r > 0.05 {
			t.Errorf("%.3f re-tickets a start, want at most 0.05", r)
		}
	})
}
