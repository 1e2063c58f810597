package startlog

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/pkg/api"
)

// Reader reads a queue's starts from since on, by start time, at most
// limit; more says there are others after them (ask again from the last
// one's StartedAt). The admin function's starts operation asks it.
type Reader interface {
	Starts(ctx context.Context, queue string, since time.Time, limit int) (starts []Start, more bool, err error)
}

var (
	_ Reader = (*Logs)(nil)
	_ Reader = (*Ring)(nil)
	_ Reader = Unavailable{}
)

// Unavailable answers every read with its Reason: the stack is set up so
// that the worker's start lines are not in its log.
type Unavailable struct {
	Reason string
}

// Starts returns an error saying why starts cannot be read.
func (u Unavailable) Starts(context.Context, string, time.Time, int) ([]Start, bool, error) {
	return nil, false, errors.New(u.Reason)
}

// Start is one start of a job's attempt, as the admin function's starts
// operation answers it: api.Start, the wire type users read it with, and
// the type every reader of a start line returns (ParseLine).
type Start = api.Start

// sortStarts orders starts by start time, then ticket.
func sortStarts(s []Start) {
	slices.SortStableFunc(s, func(a, b Start) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.Ticket, b.Ticket))
	})
}

// page keeps the first limit starts of sorted, and says whether there
// were more.
func page(sorted []Start, limit int) ([]Start, bool) {
	if len(sorted) > limit {
		return sorted[:limit], true
	}
	return sorted, false
}

// RingSize is how many starts a Ring keeps per queue by default.
const RingSize = 1000

// Ring keeps the last starts of each queue in memory: an engine.Observer
// for one process (the local runtime), whose memory is bounded by Size
// starts per queue.
type Ring struct {
	// Size is how many starts it keeps per queue. Default RingSize.
	Size int

	mu     sync.Mutex
	queues map[string]*ring
}

// ring is one queue's starts: buf holds them oldest first from next,
// once full.
type ring struct {
	buf  []Start
	next int
}

var _ engine.Observer = (*Ring)(nil)

// Observe keeps the start of an EventStarted.
func (r *Ring) Observe(_ context.Context, ev engine.Event) {
	if ev.Kind != engine.EventStarted || ev.Start == nil {
		return
	}
	s := ev.Start
	st := Start{JobID: s.JobID, Ticket: s.Ticket, Attempt: s.Attempt, SlotAt: s.SlotAt, StartedAt: s.At,
		LatenessMS: s.At.Sub(s.SlotAt).Milliseconds(), GateAt: s.GateAt, Key: s.Key}
	size := r.Size
	if size <= 0 {
		size = RingSize
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queues == nil {
		r.queues = map[string]*ring{}
	}
	q := r.queues[ev.Queue]
	if q == nil {
		q = &ring{}
		r.queues[ev.Queue] = q
	}
	if len(q.buf) < size {
		q.buf = append(q.buf, st)
		return
	}
	q.buf[q.next] = st
	q.next = (q.next + 1) % len(q.buf)
}

// Starts answers queue's kept starts from since on, by start time, at
// most limit; more says there were others after them. Starts older than
// the last Size are gone.
func (r *Ring) Starts(_ context.Context, queue string, since time.Time, limit int) ([]Start, bool, error) {
	var out []Start
	r.mu.Lock()
	if q := r.queues[queue]; q != nil {
		for i := range q.buf {
			if s := q.buf[(q.next+i)%len(q.buf)]; !s.StartedAt.Before(since) {
				out = append(out, s)
			}
		}
	}
	r.mu.Unlock()
	sortStarts(out)
	starts, more := page(out, limit)
	return starts, more, nil
}
