package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// stallClaims stalls a worker right after its claim landed, with
// probability rate, for stall: the worker wakes past its reserved start
// and gives the start up (the job's start is handed back after its
// claim), as a descheduled Lambda would. It wraps the watch, so that it
// stalls outside the watch's lock.
type stallClaims struct {
	engine.State
	rate  float64
	stall time.Duration

	mu      sync.Mutex
	rnd     *rand.Rand
	stalled int
}

func (s *stallClaims) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	err := s.State.UpdateJob(ctx, j, from)
	if err != nil || j.Status != job.Running || from.Status != job.Queued {
		return err
	}
	s.mu.Lock()
	stall := s.rnd.Float64() < s.rate
	if stall {
		s.stalled++
	}
	s.mu.Unlock()
	if stall {
		time.Sleep(s.stall)
	}
	return nil
}

// promiseSim is a waiting-room simulation whose jobs take ms each
// ("slow"), checked strictly: every start of a booked job comes under the
// slot its booking was told (no excuse for a job that waited on a lane)
// and within late of it.
type promiseSim struct {
	*roomSim
	stall *stallClaims
}

func newPromiseSim(t *testing.T, o simOptions, queue string, cfg slot.Config, stallRate float64, ms time.Duration) *promiseSim {
	p := &promiseSim{stall: &stallClaims{rate: stallRate, stall: 40 * time.Millisecond, rnd: rand.New(rand.NewPCG(o.Seed, 13))}}
	o.Wrap = func(st engine.State) engine.State { p.stall.State = st; return p.stall }
	p.roomSim = newRoomSim(t, o, queue, cfg, 0)
	r := p.roomSim
	r.mux.HandleFunc("slow", func(ctx context.Context, j *api.Job) error {
		r.mu.Lock()
		r.starts = append(r.starts, roomStart{ID: j.ID, Booking: j.Booking, Attempt: j.Attempt, SlotAt: j.SlotAt, At: time.Now(), Detached: j.Detached, Retickets: j.Retickets})
		r.mu.Unlock()
		time.Sleep(ms)
		return nil
	})
	return p
}

// enqueueSlow enqueues n "slow" jobs of each of keys, one call a key.
func (p *promiseSim) enqueueSlow(queue string, keys []string, n int) {
	p.t.Helper()
	for _, k := range keys {
		req := job.EnqueueRequest{Queue: queue}
		for range n {
			req.Jobs = append(req.Jobs, job.Spec{Kind: "slow", Key: k})
		}
		if _, err := p.eng.Enqueue(context.Background(), req); err != nil {
			p.t.Fatalf("enqueue: %v", err)
		}
	}
}

// verifyPromises checks what the watch saw (the bounds after every job
// write) and that each booked job started under the slot its booking
// was told (within late of it, if late is set), every job once.
func (p *promiseSim) verifyPromises(want int, late time.Duration) {
	t := p.t
	t.Helper()
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	for _, v := range p.w.violations {
		t.Error(v)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	once := map[string]int{}
	bad, missed, passed := 0, 0, 0
	for _, s := range p.starts {
		once[s.ID]++
		told, ok := p.w.told[fmt.Sprintf("%s#%d", s.ID, s.Booking)]
		switch {
		case s.Booking == 0:
			t.Errorf("job %s started without a booking", s.ID)
		case !ok:
			t.Errorf("job %s started under booking %d, which no write told", s.ID, s.Booking)
		case !told.SlotAt.Equal(s.SlotAt) && s.Retickets > told.Retickets && missedOnce(p.store, p.w.queue, s.ID):
			// Its worker came too late for a slot (a missed slot; a
			// job that missed one takes the openings it finds after,
			// and may be passed): a new ticket at the end of the line,
			// as on a queue without a bound, not a move by the room.
			missed++
		case !told.SlotAt.Equal(s.SlotAt) && s.Retickets > told.Retickets:
			// Passed at its key's gate by a later ticket of its key
			// whose worker came first (the key's starts keep ticket
			// order): a new ticket, as on a queue without a bound, not
			// a move by the room. Rare: workers of one key reach the
			// gate in ticket order but for a scheduler's hiccup (the
			// race detector's, say); more than a few is a defect.
			if passed++; passed > 2 {
				t.Errorf("job %s: re-ticketed after its booking, %d such: %s", s.ID, passed, historyOfRef(p.store, p.w.queue, s.ID))
			}
		case !told.SlotAt.Equal(s.SlotAt) || late > 0 && (s.At.Before(s.SlotAt.Add(-late)) || s.At.After(s.SlotAt.Add(late))):
			if bad++; bad <= 5 {
				j, _ := p.store.GetJob(context.Background(), job.Ref{Queue: p.w.queue, ID: s.ID})
				t.Errorf("job %s (booking %d, detached %v): told %v, started for %v at %v: a booked job moved; %s",
					s.ID, s.Booking, s.Detached, told.SlotAt.Format("05.000"), s.SlotAt.Format("05.000"), s.At.Format("05.000"), historyOf(j))
			}
		}
	}
	if bad > 5 {
		t.Errorf("%d starts in all moved from their booking", bad)
	}
	if missed > 0 {
		t.Logf("%d starts re-ticketed after a missed slot", missed)
	}
	if len(once) != want {
		t.Errorf("%d jobs started, want %d", len(once), want)
	}
	for id, n := range once {
		if n > 1 {
			t.Errorf("job %s started %d times", id, n)
		}
	}
}

// A start handed back after its claim: workers stall after their claim,
// wake past the start the gate reserved and give it up. The job's booking
// ended as it started; it is booked again through the waiting room (or
// waits there), so at no moment does a key or the queue hold more
// bookings than its bound, and it starts at the slot its new booking
// told.
func TestWaitingRoomMissedStart(t *testing.T) {
	for _, c := range []struct {
		name string
		seed uint64
		keys []api.Limit // keys with limits of their own start out of line
	}{{"line", 1, nil}, {"line", 2, nil}, {"keyed", 1, []api.Limit{{Interval: 5 * time.Millisecond}}}} {
		t.Run(c.name, func(t *testing.T) {
			seed := c.seed
			synctest.Test(t, func(t *testing.T) {
				cfg := slot.Config{Interval: 5 * time.Millisecond, BookAhead: 4, KeyBookAhead: 2, KeyMaxRunning: slot.MaxKeyRunning, KeyLimits: c.keys}
				p := newPromiseSim(t, simOptions{Workers: 16, Seed: seed,
					Transport: memstore.TransportOptions{Jitter: time.Millisecond, DuplicateRate: 0.1}}, "missed", cfg, 0.2, time.Millisecond)
				defer p.stop()
				p.enqueueSlow("missed", []string{"a", "b", "c"}, 12)
				p.waitFinished("missed", time.Hour)
				if p.stall.stalled == 0 {
					t.Fatal("no worker stalled after its claim")
				}
				// A stalled worker's start, given up, is spent: the
				// starts after it may come late (their slots stay).
				p.verifyPromises(36, 0)
				t.Logf("%d claims stalled; most bookings at once %d", p.stall.stalled, p.w.maxBooked)
			})
		})
	}
}

var _ = errors.New

// missedOnce reports whether job id's worker came too late for a slot
// (job.SlotMissed in its history).
func missedOnce(store *memstore.Store, queue, id string) bool {
	j, _ := store.GetJob(context.Background(), job.Ref{Queue: queue, ID: id})
	for _, ev := range j.History {
		if ev.Kind == job.SlotMissed {
			return true
		}
	}
	return false
}

// historyOfRef is historyOf the job of id in queue, as store holds it.
func historyOfRef(store *memstore.Store, queue, id string) string {
	j, _ := store.GetJob(context.Background(), job.Ref{Queue: queue, ID: id})
	return historyOf(j)
}

func historyOf(j job.Job) string {
	out := ""
	for _, ev := range j.History {
		out += fmt.Sprintf(" %s@%s(t%d←%d %s)", ev.Kind, ev.At.Format("05.000"), ev.Ticket, ev.OldTicket, ev.Reason)
	}
	return out
}

// One-at-a-time keys (key_max_running, 1 by default) under a key bound
// above it, with jobs that run longer than the queue's interval: a key's
// next job is booked only when its key has a free place for it, so no
// lane holds a booked job past the slot it was told (no start is
// detached), and each starts under its told slot.
func TestWaitingRoomLanesKeepPromises(t *testing.T) {
	keyEvery := []api.Limit{{Interval: 5 * time.Millisecond}}
	for _, c := range []struct {
		name string
		cfg  slot.Config
	}{
		{"key bound", slot.Config{Interval: 5 * time.Millisecond, KeyBookAhead: 3}},
		{"key bound, keyed", slot.Config{Interval: 5 * time.Millisecond, KeyBookAhead: 3, KeyLimits: keyEvery}},
		{"queue bound", slot.Config{Interval: 5 * time.Millisecond, BookAhead: 4, KeyMaxRunning: 2, KeyLimits: keyEvery}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPromiseSim(t, simOptions{Workers: 16, Seed: 4,
					Transport: memstore.TransportOptions{Jitter: time.Millisecond, DuplicateRate: 0.1}}, "lanes", c.cfg, 0, 20*time.Millisecond)
				defer p.stop()
				p.enqueueSlow("lanes", []string{"a", "b", "c"}, 8)
				p.waitFinished("lanes", time.Hour)
				// Its start's time is the gate's (a keyed job passes
				// its key's gate after the queue's, a little late:
				// TestWaitingRoomKeyedLimits); what a lane does is
				// seen as the job waiting on it (detached).
				p.verifyPromises(24, 0)
				p.mu.Lock()
				defer p.mu.Unlock()
				for _, s := range p.starts {
					if s.Detached {
						t.Errorf("job %s waited on its key's lane after its booking", s.ID)
					}
				}
			})
		})
	}
}
