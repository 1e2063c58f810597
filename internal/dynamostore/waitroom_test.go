package dynamostore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// bookWatch wraps the store and records what the waiting room writes:
// every horizon it stores (checked against the queue's bounds), each
// job's bookings (the write that took it out of the room) and the slot
// each booking was told.
type bookWatch struct {
	engine.State
	cfg slot.Config

	mu         sync.Mutex
	violations []string
	booked     map[string]int            // job id → bookings from the room
	missed     map[string]map[int64]bool // job id → the tickets its given-up starts took
	told       map[string]time.Time      // id#booking → slot
	maxBooked  int
	// The most bookings a horizon held, started ones too, and their
	// size as JSON.
	mostHeld, mostBytes int
}

func (w *bookWatch) PutHorizon(ctx context.Context, h slot.Horizon, from int64) (slot.Horizon, error) {
	out, err := w.State.PutHorizon(ctx, h, from)
	if err != nil {
		return out, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// A started booking held for its key (slot.Booking.Running) counts
	// against its key's bound only.
	w.maxBooked = max(w.maxBooked, h.Unstarted())
	if n := len(h.Booked); n > w.mostHeld {
		text, _ := json.Marshal(h.Booked)
		w.mostHeld, w.mostBytes = n, len(text)
	}
	if w.cfg.BookAhead > 0 && h.Unstarted() > w.cfg.BookAhead {
		w.violations = append(w.violations, fmt.Sprintf("horizon at version %d holds %d bookings, book_ahead %d", out.Version, h.Unstarted(), w.cfg.BookAhead))
	}
	for k, n := range h.KeyBooked() {
		if b := w.cfg.KeyBound(k); b > 0 && n > b {
			w.violations = append(w.violations, fmt.Sprintf("horizon at version %d holds %d bookings of key %q, its bound %d", out.Version, n, k, b))
		}
	}
	return out, nil
}

func (w *bookWatch) tell(j job.Job) {
	if j.Booking == 0 || j.SlotAt.IsZero() || j.ParkReason == job.Room {
		return
	}
	k := fmt.Sprintf("%s#%d", j.ID, j.Booking)
	if _, ok := w.told[k]; !ok {
		w.told[k] = j.SlotAt
	}
}

func (w *bookWatch) CreateJobs(ctx context.Context, jobs []job.Job) ([]bool, error) {
	created, err := w.State.CreateJobs(ctx, jobs)
	if err == nil {
		w.mu.Lock()
		for i, j := range jobs {
			if created[i] {
				w.tell(j)
			}
		}
		w.mu.Unlock()
	}
	return created, err
}

func (w *bookWatch) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	err := w.State.UpdateJob(ctx, j, from)
	if err == nil {
		w.mu.Lock()
		if n := len(j.History); n > 0 && j.History[n-1].Kind == job.BookedEvent {
			w.booked[j.ID]++
		}
		// The starts it gave up, by the ticket each took: its record
		// keeps only its last job.MaxHistory events.
		for _, e := range j.History {
			if e.Kind == job.SlotMissed {
				if w.missed[j.ID] == nil {
					w.missed[j.ID] = map[int64]bool{}
				}
				w.missed[j.ID][e.Ticket] = true
			}
		}
		w.tell(j)
		w.mu.Unlock()
	}
	return err
}

// TestWaitingRoomConcurrent books from one queue's waiting room with real
// concurrency on DynamoDB Local: two engines (two Lambda instances) with
// eight workers between them, two producers at once, deliveries late and
// twice. Every horizon stored keeps the bounds; each job is booked from
// the room at most once, starts at the slot its booking told it, and
// runs once; every job ends, and the horizon holds nothing after.
func TestWaitingRoomConcurrent(t *testing.T) {
	ctx := t.Context()
	sim := newLocalSim(t, memstore.TransportOptions{VisibilityTimeout: 2 * time.Second, Jitter: 5 * time.Millisecond, DuplicateRate: 0.2, Seed: 7})
	cfg := slot.Config{Interval: 20 * time.Millisecond, BookAhead: 4, KeyBookAhead: 2}
	w := &bookWatch{State: sim.store, cfg: cfg, booked: map[string]int{}, missed: map[string]map[int64]bool{}, told: map[string]time.Time{}}
	var mu sync.Mutex
	runs := map[string]int{}
	var moved []string
	late := 0
	runner := runFunc(func(ctx context.Context, j *job.Job, _ slot.Config) error {
		mu.Lock()
		defer mu.Unlock()
		runs[j.ID]++
		w.mu.Lock()
		told, ok := w.told[fmt.Sprintf("%s#%d", j.ID, j.Booking)]
		w.mu.Unlock()
		switch {
		case slices.ContainsFunc(j.History, func(e job.Event) bool { return e.Kind == job.Reticketed || e.Kind == job.SlotMissed }):
			// Its worker came too late for its slot on a busy host:
			// the line moved it, as it moves any job passed at the
			// gate; the room did not.
			late++
		case !ok || !told.Equal(j.SlotAt):
			moved = append(moved, fmt.Sprintf("%s: booking %d told %v (%v), starts for %v", j.ID, j.Booking, told, ok, j.SlotAt))
		}
		return nil
	})
	var engines []*engine.Engine
	for range 2 {
		engines = append(engines, engine.New(engine.Options{State: w, Transport: sim.tr, Runner: runner, Lead: 300 * time.Millisecond}))
	}
	if _, err := engines[0].CreateQueue(ctx, "room", cfg); err != nil {
		t.Fatal(err)
	}
	for _, eng := range engines {
		sim.work(4, eng, nil)
		sim.resumeEvery(500*time.Millisecond, eng, nil)
	}
	var ids []string
	var wg sync.WaitGroup
	for p, eng := range engines {
		wg.Go(func() {
			for i := range 10 {
				req := job.EnqueueRequest{Queue: "room"}
				for k := range 2 {
					req.Jobs = append(req.Jobs, job.Spec{Kind: "k", Key: fmt.Sprintf("k%d", (p+i+k)%4), Priority: 1 + (i+k)%5})
				}
				res, err := eng.Enqueue(ctx, req)
				if err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
				mu.Lock()
				for _, a := range res.Jobs {
					ids = append(ids, a.JobID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	unfinished := func() []job.Job {
		mu.Lock()
		defer mu.Unlock()
		var left []job.Job
		for _, id := range ids {
			j, err := sim.store.GetJob(ctx, job.Ref{Queue: "room", ID: id})
			if err != nil || !j.Status.Final() {
				left = append(left, j)
			}
		}
		return left
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(testenv.Patience); len(unfinished()) > 0; <-tick.C {
		if time.Now().After(deadline) {
			for _, j := range unfinished() {
				t.Logf("not ended: %s %s %s ticket %d booking %d slot %v history %+v", j.ID, j.Status, j.ParkReason, j.Ticket, j.Booking, j.SlotAt, j.History)
			}
			h, _ := sim.store.GetHorizon(ctx, "room")
			t.Fatalf("jobs not ended after %v; horizon %+v", testenv.Patience, h)
		}
	}
	sim.stop()

	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		t.Error(v)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range moved {
		t.Errorf("a booked job moved: %s", m)
	}
	fromRoom := 0
	for _, id := range ids {
		if runs[id] != 1 {
			t.Errorf("job %s ran %d times", id, runs[id])
		}
		// Once, and once more after each start its worker gave up
		// (woke too late for it): such a job goes through the room again.
		if again := len(w.missed[id]); w.booked[id] > 1+again {
			t.Errorf("job %s was booked from the room %d times, and gave %d starts up", id, w.booked[id], again)
		}
		fromRoom += w.booked[id]
	}
	if fromRoom < len(ids)/2 {
		t.Errorf("%d of %d jobs were booked from the room: the bounds did not hold them", fromRoom, len(ids))
	}
	h, err := sim.store.GetHorizon(ctx, "room")
	if err != nil || len(h.Booked) != 0 || h.Waiting != 0 {
		t.Errorf("the horizon after every job ended: %+v, %v", h, err)
	}
	t.Logf("%d jobs, %d booked from the room; at most %d bookings at once; %d re-ticketed for a late worker", len(ids), fromRoom, w.maxBooked, late)
}
