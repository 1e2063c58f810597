package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Keyed limits: a queue may give each key of its jobs a limit of its own
// (slot.Config.KeyLimits, or a key's own in its slot.Meter), kept beside
// the queue's limit. A keyed job of such a queue is out of line
// (scheduled): its slot is the later of its key's clock (slot.KeySlot)
// and the queue's, and at the gate it takes an opening of the queue, then
// the key's side of the start (keyGate), so that a key at its limit holds
// up only its own jobs while the other keys take the queue's openings.

// meterTries bounds the compare-and-set tries of one key's meter: only
// jobs of that key write it, so a conflict is rare.
const meterTries = 20

// readMeter reads q's meter of key, as a meter of q's generation kept
// under the limits the key has now (slot.Meter.Under): a configure that
// changed the queue's key_limits seeds each key's meter for them when
// the key is next read, with no write at the configure.
func (e *keyLanes) readMeter(ctx context.Context, q Queue, key string) (slot.Meter, error) {
	m, err := e.state.GetMeter(ctx, q.Name, key)
	if err != nil {
		return slot.Meter{}, fmt.Errorf("key %s: %w", key, err)
	}
	m = m.Fresh(q.Gen)
	return m.Under(q.Config.LimitsOf(m), q.Config.Skew), nil
}

// keyed reports whether j's start is recorded on its key's meter under
// q: when the key has a limit of its own, or when more than one job of
// the key may run at once (the meter's highest ticket started keeps the
// key's starts in ticket order: two holders of the key go to the gate
// at once, and the lower ticket must not start after the higher).
func keyed(q Queue, j *job.Job) bool {
	return j.Key != "" && (q.Config.Keyed() || q.Config.KeyCap() > 1)
}

// keySlots is the earliest start each keyed job of jobs may have by its
// key's clock (slot.KeySlot), with ahead[i] jobs of its key before job i,
// at now; zero for a job without a keyed limit. The pending count behind
// ahead also counts a holder that started (lanes[key], as the count left
// it): the meter has its start already, so it is not counted twice. With ahead nil (a job that
// takes a new ticket) a job's place is behind every job of its key not
// ended but itself (its lane's pending count): a new ticket is the
// highest of its key, and booked before the others it would overtake
// them all. One read per key (two with ahead nil).
func (e *keyLanes) keySlots(ctx context.Context, q Queue, jobs []*job.Job, ahead []int64, lanes map[string]slot.Lane, now time.Time) ([]time.Time, error) {
	if !q.Config.Keyed() {
		return nil, nil
	}
	meters := map[string]slot.Meter{}
	others := map[string]int64{}
	out := make([]time.Time, len(jobs))
	for i, j := range jobs {
		if j.Key == "" || j.ParkReason == job.Room {
			continue
		}
		m, ok := meters[j.Key]
		if !ok {
			var err error
			if m, err = e.readMeter(ctx, q, j.Key); err != nil {
				return nil, err
			}
			meters[j.Key] = m
			if ahead == nil {
				l, err := e.state.GetLane(ctx, q.Name, j.Key)
				if err != nil {
					return nil, fmt.Errorf("key %s: %w", j.Key, err)
				}
				if l.Gen == q.Gen {
					others[j.Key] = max(0, l.Pending-1)
				}
			}
		}
		n := others[j.Key]
		if ahead != nil {
			n = ahead[i]
			if h := lanes[j.Key].Holder.Ticket; h > 0 && h == m.State.Current {
				n = max(0, n-1) // the holder started: its start is on the meter
			}
		} else {
			others[j.Key]++
		}
		out[i] = slot.KeySlot(m, q.Config.LimitsOf(m), n, now)
	}
	return out, nil
}

// keyOpen is when j's key lets its next start through at the earliest
// (zero when it holds nothing back; a key's slow-down counts, see
// slot.SlowOpen), and the meter it read.
func (e *keyLanes) keyOpen(ctx context.Context, q Queue, j *job.Job) (time.Time, slot.Meter, error) {
	m, err := e.readMeter(ctx, q, j.Key)
	if err != nil {
		return time.Time{}, m, err
	}
	ls := q.Config.LimitsOf(m)
	return laterOf(slot.KeyOpen(m, ls, 0), slot.SlowOpen(m.State, j.Ticket, e.now())), m, nil
}

// keyGate is the key's side of j's start at at, which the queue's gate
// reserved with its worker's deadline: one compare-and-set of the key's
// meter (slot.KeyGateBy). The key lets no start through before its limits
// open, and records the deadline, so a key's starts keep its limit
// wherever up to its deadline the worker calls the target. On
// KeyStart it returns the meter as it was before (prev) and as written.
//
// m is the meter as the caller read it (awaitKey), the base of the first
// try; a try that meets a newer one reads it again.
func (e *keyLanes) keyGate(ctx context.Context, q Queue, j *job.Job, at, deadline time.Time, m slot.Meter) (v slot.KeyVerdict, open time.Time, prev, put slot.Meter, err error) {
	for try := 0; ; try++ {
		if try > 0 {
			if m, err = e.readMeter(ctx, q, j.Key); err != nil {
				return 0, time.Time{}, prev, put, err
			}
		}
		ls := q.Config.LimitsOf(m)
		gate := slot.KeyGateBy
		if answeredAtTicket(j) {
			gate = slot.KeyResumeBy // it keeps its place (slowdown.go)
		}
		next, v, open := gate(m, j.Ticket, ls, 0, at, deadline)
		if v != slot.KeyStart {
			return v, open, prev, put, nil
		}
		put, err = e.state.PutMeter(ctx, next, m.Version, next.Keep(ls))
		if err == nil {
			return v, open, m, put, nil
		}
		if !errors.Is(err, ErrConflict) || try >= meterTries {
			return 0, time.Time{}, prev, put, fmt.Errorf("key %s: %w", j.Key, err)
		}
	}
}

// unstartKey takes back the start keyGate recorded as put on j's key,
// which j gave up before its target began (its worker woke too late): the
// meter goes back to prev, if no start was recorded on it since (it is
// still at put's version). Else the start stays counted: stricter, never
// looser. A meter of a later generation (j's queue was deleted and
// created again) is the new queue's: the store leaves it alone.
func (e *keyLanes) unstartKey(ctx context.Context, q Queue, prev, put slot.Meter) {
	if put.Version == 0 {
		return
	}
	ls := q.Config.LimitsOf(prev)
	_, err := e.state.PutMeter(ctx, prev, put.Version, prev.Keep(ls))
	if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrQueueNotFound) {
		e.log.WarnContext(ctx, "key's unused start left counted", "queue", q.Name, "key", put.Key, "error", err.Error())
	}
}
