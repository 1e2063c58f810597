package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// roomWatch wraps the simulation's state and checks the waiting room's
// rules as the engine writes: after every job write, the jobs that hold
// a booking (booked, not started) keep the queue's bounds; every booking
// written to the horizon chose, among the jobs the room held then, by
// priority and, within a priority and key, by ticket; a booked job's slot
// is recorded as it is told, to compare with the slot it starts at. With
// crash set it also "crashes" a booker after a horizon write landed.
type roomWatch struct {
	engine.State
	s     *sim
	queue string
	cfg   slot.Config
	crash float64

	mu  sync.Mutex
	rnd *rand.Rand
	// told is the slot each booking (id#booking) was told first, and the
	// job's re-tickets then.
	told map[string]toldSlot
	// booked is the room's bookings in horizon order: id, key, priority.
	booked     []roomBooking
	violations []string
	maxBooked  int
}

type toldSlot struct {
	SlotAt    time.Time
	Retickets int
}

type roomBooking struct {
	ID, Key  string
	Priority int
}

func (w *roomWatch) violate(format string, args ...any) {
	if len(w.violations) < 20 {
		w.violations = append(w.violations, fmt.Sprintf(format, args...))
	}
}

// holding reports whether j holds a slot of the horizon: booked, not
// started, not ended.
func holding(j job.Job) bool {
	return j.Booking != 0 && (j.Status == job.Queued || j.Status == job.Parked && j.ParkReason != job.Room)
}

// check counts the jobs that hold a booking against the bounds, and
// records the slot each booking is told.
func (w *roomWatch) check() {
	n, byKey := 0, map[string]int{}
	for _, j := range w.s.store.Jobs(w.queue) {
		if j.Status == job.Running && j.Booking != 0 && j.Key != "" && w.cfg.KeyCap() > 0 {
			byKey[j.Key]++ // its booking holds its key's place to its attempt's end
			continue
		}
		if !holding(j) {
			continue
		}
		n++
		byKey[j.Key]++
		if k := fmt.Sprintf("%s#%d", j.ID, j.Booking); !j.SlotAt.IsZero() {
			if _, ok := w.told[k]; !ok {
				w.told[k] = toldSlot{j.SlotAt, j.Retickets}
			}
		}
	}
	w.maxBooked = max(w.maxBooked, n)
	if b := w.cfg.BookAhead; b > 0 && n > b {
		w.violate("%d jobs hold a booking, book_ahead %d", n, b)
	}
	for k, c := range byKey {
		if b := w.cfg.KeyBound(k); b > 0 && c > b {
			w.violate("%d jobs of key %q hold a booking, its bound %d", c, k, b)
		}
	}
}

func (w *roomWatch) CreateJobs(ctx context.Context, jobs []job.Job) ([]bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	created, err := w.State.CreateJobs(ctx, jobs)
	if err == nil {
		w.check()
	}
	return created, err
}

func (w *roomWatch) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.State.UpdateJob(ctx, j, from)
	if err == nil {
		w.check()
	}
	return err
}

// PutHorizon checks the bookings a write adds against the room as it is:
// no job left waiting, bookable now, comes first by priority, or by ticket
// within its key and priority. A job that went into the room at this very
// instant may not have been listed by the booker yet, and is left out.
func (w *roomWatch) PutHorizon(ctx context.Context, h slot.Horizon, from int64) (slot.Horizon, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, _ := w.s.store.GetHorizon(ctx, h.Queue)
	out, err := w.State.PutHorizon(ctx, h, from)
	if err != nil || h.Queue != w.queue {
		return out, err
	}
	now := time.Now()
	room := map[string]job.Job{}
	for _, j := range w.s.store.Jobs(w.queue) {
		if j.Status == job.Parked && j.ParkReason == job.Room && !prev.Holders()[j.ID] {
			room[j.ID] = j
		}
	}
	var seqs []int64
	for seq := range h.Booked {
		if _, ok := prev.Booked[seq]; !ok {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	var chosen []job.Job
	for _, seq := range seqs {
		if j, ok := room[h.Booked[seq].ID]; ok {
			chosen = append(chosen, j)
			w.booked = append(w.booked, roomBooking{ID: j.ID, Key: j.Key, Priority: slot.PriorityOf(j.Priority)})
			delete(room, j.ID)
		}
	}
	for _, c := range chosen {
		for _, o := range room {
			settled := o.History[len(o.History)-1].At.Before(now) && !o.Earliest().After(now.Add(15*time.Minute))
			if !settled || o.Ticket <= w.qPurged() {
				continue
			}
			po, pc := slot.PriorityOf(o.Priority), slot.PriorityOf(c.Priority)
			if w.cfg.KeyBookAhead == 0 && po < pc {
				w.violate("booked %s (priority %d) while %s (priority %d) waited", c.ID, pc, o.ID, po)
			}
			if o.Key == c.Key && po == pc && o.Ticket < c.Ticket {
				w.violate("booked %s (ticket %d) while %s of its key and priority (ticket %d) waited", c.ID, c.Ticket, o.ID, o.Ticket)
			}
		}
	}
	if w.crash > 0 && w.rnd.Float64() < w.crash {
		return out, errCrash // wrote the horizon, died before acting on it
	}
	return out, nil
}

func (w *roomWatch) qPurged() int64 {
	q, err := w.s.store.GetQueue(context.Background(), w.queue)
	if err != nil {
		return 0
	}
	return q.State.Purged
}

// roomStart is one run of a "room" job.
type roomStart struct {
	ID      string
	Booking int64
	Attempt int
	SlotAt  time.Time
	At      time.Time
	// Detached: it waited on a lane (its key held by another job, or
	// every running place taken) and starts at the queue's next opening
	// after it, as any job that waits on a lane does.
	Detached  bool
	Retickets int
}

// roomSim is a simulation whose queue has a booking horizon, watched.
type roomSim struct {
	*sim
	w *roomWatch

	mu     sync.Mutex
	starts []roomStart
}

func newRoomSim(t *testing.T, o simOptions, queue string, cfg slot.Config, crash float64) *roomSim {
	w := &roomWatch{queue: queue, cfg: cfg, crash: crash, rnd: rand.New(rand.NewPCG(o.Seed, 11)), told: map[string]toldSlot{}}
	outer := o.Wrap // the test's own wrapper, around the watch
	o.Wrap = func(st engine.State) engine.State {
		w.State = st
		if outer != nil {
			return outer(w)
		}
		return w
	}
	r := &roomSim{w: w}
	r.sim = newSim(t, o)
	w.s = r.sim
	r.mux.HandleFunc("room", func(ctx context.Context, j *api.Job) error {
		r.mu.Lock()
		r.starts = append(r.starts, roomStart{ID: j.ID, Booking: j.Booking, Attempt: j.Attempt, SlotAt: j.SlotAt, At: time.Now(), Detached: j.Detached, Retickets: j.Retickets})
		r.mu.Unlock()
		r.sim.mu.Lock()
		fail := j.Attempt <= r.sim.failFor[j.ID]
		r.sim.mu.Unlock()
		if fail {
			return fmt.Errorf("attempt %d of %s fails on purpose", j.Attempt, j.ID)
		}
		return nil
	})
	r.createQueue(queue, cfg)
	return r
}

// enqueueRoom enqueues one call of n "room" jobs of key and priority.
func (r *roomSim) enqueueRoom(queue, key string, prio, n int) engine.EnqueueResult {
	r.t.Helper()
	req := job.EnqueueRequest{Queue: queue}
	for range n {
		req.Jobs = append(req.Jobs, job.Spec{Kind: "room", Key: key, Priority: prio})
	}
	res, err := r.eng.Enqueue(context.Background(), req)
	if err != nil {
		r.t.Fatalf("enqueue: %v", err)
	}
	return res
}

// verify checks what the watch saw, and that every start of a booked job
// came at the slot its booking was told (unless a pause re-ticketed it,
// or it waited on a lane: a pause moves what it holds, and a lane sends
// on a job it held at the next opening), within room of it if room is set (a worker
// that died after the gate is redelivered later than that).
func (r *roomSim) verify(room time.Duration) {
	r.t.Helper()
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	for _, v := range r.w.violations {
		r.t.Error(v)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	moved := 0
	for _, s := range r.starts {
		if s.Booking == 0 || s.Detached {
			continue
		}
		told, ok := r.w.told[fmt.Sprintf("%s#%d", s.ID, s.Booking)]
		if !ok {
			r.t.Errorf("job %s started under booking %d, which no write told", s.ID, s.Booking)
			continue
		}
		if !told.SlotAt.Equal(s.SlotAt) && s.Retickets == told.Retickets {
			moved++
			if moved < 5 {
				r.t.Errorf("job %s: booked for %v, started for %v: a booked job moved", s.ID, told.SlotAt, s.SlotAt)
			}
		}
		if room > 0 && (s.At.Before(s.SlotAt.Add(-room)) || s.At.After(s.SlotAt.Add(room))) {
			r.t.Errorf("job %s started at %v, its slot %v (room %v)", s.ID, s.At, s.SlotAt, room)
		}
	}
}
