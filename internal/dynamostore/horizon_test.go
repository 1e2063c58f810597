package dynamostore_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// itemLimit is DynamoDB's largest item.
const itemLimit = 400 * 1024

// TestManyBookings runs bounded queues whose bookings outgrow one
// DynamoDB item (400 KB) on DynamoDB Local: the documented book_ahead
// maximum with 100-character ids and keys (about 530 KB of bookings),
// and 10,000 busy keys under key_book_ahead with UUID-sized ids and keys
// (about 1.3 MB). Every enqueue is answered, the horizon holds more than
// an item would, the bounds hold in every horizon written, and the jobs
// run: the first sample of them (the whole backlog would take DynamoDB
// Local many minutes), each once, its booking freed.
func TestManyBookings(t *testing.T) {
	cases := []struct {
		name        string
		cfg         slot.Config
		jobs, keys  int
		idLen       int
		minBookings int // at once, at the most
	}{
		{"BookAhead2000", slot.Config{Interval: 60 * time.Millisecond, BookAhead: api.MaxBookAhead}, api.MaxBookAhead, api.MaxBookAhead, 100, 1600},
		{"BusyKeys10000", slot.Config{Interval: 60 * time.Millisecond, KeyBookAhead: 1}, 10000, 10000, 36, 4000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := runLarge(t, c.cfg, c.jobs, c.keys, c.idLen)
			if w.mostHeld < c.minBookings || w.mostBytes <= itemLimit {
				t.Errorf("the horizon held %d bookings at most (%d bytes of JSON), want %d and above %d bytes: the test did not outgrow an item", w.mostHeld, w.mostBytes, c.minBookings, itemLimit)
			}
		})
	}
}

// sample is how many jobs of a large queue TestManyBookings waits to run.
const sample = 20

// pad makes s n characters long.
func pad(s string, n int) string { return s + strings.Repeat("x", max(0, n-len(s))) }

// runLarge enqueues jobs (ids and keys of idLen characters, keys of
// them, in turn) in calls of api.MaxBatch to a queue under cfg, with
// workers and the resume function running, and waits for sample of them
// to run.
func runLarge(t *testing.T, cfg slot.Config, jobs, keys, idLen int) *bookWatch {
	ctx := t.Context()
	sim := newLocalSim(t, memstore.TransportOptions{VisibilityTimeout: 30 * time.Second})
	meter := awsmeter.NewDynamoDB(sim.api)
	w := &bookWatch{State: dynamostore.New(meter, sim.table, dynamostore.Options{}), cfg: cfg,
		booked: map[string]int{}, missed: map[string]map[int64]bool{}, told: map[string]time.Time{}}
	var mu sync.Mutex
	runs := map[string]int{}
	runner := runFunc(func(ctx context.Context, j *job.Job, _ slot.Config) error {
		mu.Lock()
		defer mu.Unlock()
		runs[j.ID]++
		return nil
	})
	eng := engine.New(engine.Options{State: w, Transport: sim.tr, Runner: runner, Lead: time.Second})
	if _, err := eng.CreateQueue(ctx, "large", cfg); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var ids []string
	for i := 0; i < jobs; i += api.MaxBatch {
		req := job.EnqueueRequest{Queue: "large"}
		for n := i; n < min(jobs, i+api.MaxBatch); n++ {
			id := pad(fmt.Sprintf("job-%06d-", n), idLen)
			req.Jobs = append(req.Jobs, job.Spec{ID: id, Kind: "k", Key: pad(fmt.Sprintf("key-%06d-", n%keys), idLen)})
			ids = append(ids, id)
		}
		if _, err := eng.Enqueue(ctx, req); err != nil {
			t.Fatalf("enqueue of jobs %d to %d: %v", i, i+len(req.Jobs), err)
		}
	}
	enqueued := time.Since(began)
	// The workers start once every call is in: an admit of a whole call
	// into a large horizon, a compare-and-set of its head, loses to the
	// workers' frees of single bookings beside it, try after try, on a
	// loaded host (issue 54, item 2: one item's compare-and-set carries
	// the queue).
	sim.work(8, eng, nil)
	sim.resumeEvery(time.Second, eng, nil)
	ran := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(runs)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	patience := testenv.Patience
	for deadline := time.Now().Add(patience); ran() < sample; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs ran after %v; calls: %s", ran(), sample, patience, callsOf(meter))
		}
	}
	// Each job that ran frees its booking as its attempt ends (or, a
	// free left undone, the resume function's look does): wait for them
	// before the stop cuts off the frees under way.
	mu.Lock()
	sampled := maps.Clone(runs)
	mu.Unlock()
	for deadline := time.Now().Add(patience); ; <-tick.C {
		h, err := w.GetHorizon(ctx, "large")
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, b := range h.Booked {
			if sampled[b.ID] > 0 {
				held++
			}
		}
		if held == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d jobs that ran hold their bookings still after %v", held, len(sampled), patience)
		}
	}
	sim.stop()
	mu.Lock()
	defer mu.Unlock()
	h, err := w.GetHorizon(ctx, "large")
	if err != nil {
		t.Fatal(err)
	}
	held := h.Holders()
	for _, id := range ids {
		switch n := runs[id]; {
		case n > 1:
			t.Errorf("job %s ran %d times", id, n)
		case sampled[id] > 0 && held[id]:
			t.Errorf("job %s ran, and its booking is held still", id)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		t.Error(v)
	}
	t.Logf("%d jobs enqueued in %v, %d run in %v; at most %d bookings at once (%d bytes of JSON); %d held after; calls: %s",
		jobs, enqueued, len(runs), time.Since(began), w.mostHeld, w.mostBytes, len(h.Booked), callsOf(meter))
	return w
}

// callsOf sums m's calls by operation and item kind (a transaction's
// by its first item).
func callsOf(m *awsmeter.DynamoDB) string {
	by := map[string]int64{}
	for op, c := range m.Counts() {
		op, _, _ = strings.Cut(op, ",")
		by[op] += c.Calls
	}
	return fmt.Sprint(by)
}
