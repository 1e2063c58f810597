package slot

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/input"
)

// MaxKeyLen is the longest job key.
const MaxKeyLen = 200

// MaxLaneWaiting is the most jobs one lane keeps waiting (parked on it): a
// key's, or a queue's own for its running places. A job that finds its
// lane this full is handed back to the transport and comes again later
// (racing writers may take a lane a little past it). It bounds the lane's record, whose every write costs
// its size (about 40 bytes a waiter).
const MaxLaneWaiting = 1000

var keyRE = regexp.MustCompile(`^[A-Za-z0-9_.:/@-]{1,200}$`)

// ValidateKey reports whether key is a legal job key
// ([A-Za-z0-9_.:/@-]{1,200}). field names it in the error.
func ValidateKey(field, key string) *input.Error {
	if !keyRE.MatchString(key) {
		return input.Invalid("invalid_key", field, fmt.Sprintf("key %q must match [A-Za-z0-9_.:/@-]{1,200}", input.Truncate(key, 100)))
	}
	return nil
}

// Lane is the shared state of one key of a queue: the job that holds it
// and the jobs that wait for it, in ticket order. Jobs of one key run one
// at a time (docs/guarantees.md §12): a job takes the key before the gate and
// gives it up when its attempt ends, handing it to the first waiter. The
// lane of the empty key is the queue's own lane, where jobs wait for a
// running place when the queue has a MaxRunning (it has no holder: the
// places are counted in State.Running, by the gate).
//
// Every change but Pending's is a compare-and-set on Version, so the
// rules below are plain functions of the lane and the time, like the
// gate's. Pending is counted apart, by adds that need no version
// (engine.State.AddPending), so a stream of enqueues of one key does not
// make those compare-and-sets fail.
type Lane struct {
	Queue string `json:"queue"`
	Key   string `json:"key,omitempty"`
	// Gen is the generation of the queue the lane belongs to; a lane of
	// another generation is a deleted queue's, and counts as empty
	// (Fresh).
	Gen int64 `json:"gen,omitempty"`
	// Version moves on by one with each write of the lane but for the
	// adds to Pending, which leave it; 0 is a lane not stored (never
	// written, or deleted). A lane created anew starts
	// above every version an earlier lane of its queue and key had, so
	// versions never repeat across deletes (the store's contract).
	Version int64 `json:"version"`
	// Holder is the job that holds the key (Ticket 0: nobody), until
	// Until: its lease, after which the key counts as free (its worker
	// died) and the next job takes it.
	Holder Waiter    `json:"holder,omitzero"`
	Until  time.Time `json:"until,omitzero"`
	// Last is the highest ticket that reached the lane. A lower ticket that
	// reaches it later was overtaken by a later job of its key and takes a
	// new ticket, so the key's jobs start in ticket order.
	Last int64 `json:"last,omitempty"`
	// Waiting are the jobs parked on the lane, in ticket order.
	Waiting []Waiter `json:"waiting,omitempty"`
	// Pending counts the key's accepted jobs that have not ended
	// (succeeded, failed or cancelled): the jobs an enqueue finds ahead of
	// its own. A crash between a job's end and its lane's update leaves
	// it one too high, never too low, so it is an upper bound.
	Pending int64 `json:"pending,omitempty"`
}

// Waiter names a job in a lane: its ticket and id.
type Waiter struct {
	Ticket int64  `json:"ticket"`
	JobID  string `json:"job_id"`
}

// Held reports whether somebody holds the lane at now.
func (l Lane) Held(now time.Time) bool { return l.Holder.Ticket != 0 && now.Before(l.Until) }

// Idle reports whether nobody holds the lane and nobody waits on it: a
// lane that is idle and has no pending jobs may be deleted.
func (l Lane) Idle() bool { return l.Holder.Ticket == 0 && len(l.Waiting) == 0 }

// Equal reports whether l and o are the same lane state: times compared
// as instants, an empty waiting list the same as none.
func (l Lane) Equal(o Lane) bool {
	return l.Queue == o.Queue && l.Key == o.Key && l.Gen == o.Gen && l.Version == o.Version &&
		l.Holder == o.Holder && l.Until.Equal(o.Until) && l.Last == o.Last && l.Pending == o.Pending &&
		slices.Equal(l.Waiting, o.Waiting)
}

// rest returns ws without its first element, as a new slice (nil when
// nothing is left).
func rest(ws []Waiter) []Waiter {
	if len(ws) <= 1 {
		return nil
	}
	return slices.Clone(ws[1:])
}

// without returns ws without w, as a new slice (nil when nothing is left).
func without(ws []Waiter, w Waiter) []Waiter {
	out := slices.DeleteFunc(slices.Clone(ws), func(x Waiter) bool { return x == w })
	if len(out) == 0 {
		return nil
	}
	return out
}

// Fresh returns the lane as a new one of generation gen, if it belongs to
// another generation (a deleted queue's): its identity and version, and
// its holder, at ticket DeletedQueueTicket, until the holder's lease ends.
// The deleted queue's attempt may still run; the new queue's jobs of the key wait for
// its lease, so two runs of one key never overlap across a delete, and
// nothing of the old generation hands the key on (its attempt touches no
// lane of the new queue). Its waiters and pending count are dropped.
func (l Lane) Fresh(gen int64) Lane {
	if l.Gen == gen {
		return l
	}
	f := Lane{Queue: l.Queue, Key: l.Key, Gen: gen, Version: l.Version}
	if l.Holder.Ticket != 0 {
		f.Holder, f.Until = Waiter{Ticket: DeletedQueueTicket, JobID: l.Holder.JobID}, l.Until
	}
	return f
}

// DeletedQueueTicket is the Ticket of a lane's holder from a deleted
// queue, an older generation of the lane's (Fresh): no job of the lane's
// own generation has it, so none takes the hold for its own, and the key
// is free once Until has passed.
const DeletedQueueTicket int64 = -1

// Ahead is how many jobs of the lane wait before w: the holder (if it is
// not w) and the waiters with a lower ticket.
func (l Lane) Ahead(w Waiter, now time.Time) int {
	n := 0
	if l.Held(now) && l.Holder != w {
		n++
	}
	for _, x := range l.Waiting {
		if x.Ticket < w.Ticket {
			n++
		}
	}
	return n
}

// LaneVerdict is Arrive's answer.
type LaneVerdict int

// Arrive's answers.
const (
	// Acquired: the job holds the key; it goes on to the gate.
	Acquired LaneVerdict = iota
	// Wait: the key is held; the job parks until it is handed the key.
	Wait
	// Overtaken: a later ticket of the key reached the lane first; the
	// job takes a new ticket.
	Overtaken
	// LaneFull: MaxLaneWaiting jobs wait already; the job comes again
	// later.
	LaneFull
)

func (v LaneVerdict) String() string {
	switch v {
	case Acquired:
		return "acquired"
	case Wait:
		return "wait"
	case Overtaken:
		return "overtaken"
	case LaneFull:
		return "full"
	}
	return "unknown"
}

// Arrive is the rule for a job w that reaches its key's lane at now, its
// slot come. lease is how long a holder keeps the key without ending
// (the worker's lease). It returns the lane after, the verdict and, when
// the key passed from an expired holder to the first waiter, that waiter:
// the caller hands the key to it (releases its parked job).
//
// The holder arriving again (a duplicate delivery, a hand-back, the hand
// off's own message) keeps the key, its lease renewed unless nearly all
// of it is left (a hand-off's message that comes at once): from each
// arrival on, the holder has about the whole lease, and a worker's lease
// outlasts the worker's own timeout, so a holder that runs is never
// taken for dead. A free key goes to the first waiter, or,
// with nobody waiting, to w if no later ticket reached the lane before it.
func Arrive(l Lane, w Waiter, now time.Time, lease time.Duration) (next Lane, v LaneVerdict, handed *Waiter) {
	if l.Holder == w {
		if l.Until.Sub(now) < lease-lease/64 {
			l.Until = now.Add(lease)
		}
		return l, Acquired, nil
	}
	if !l.Held(now) && len(l.Waiting) > 0 {
		head := l.Waiting[0]
		l.Holder, l.Until, l.Waiting = head, now.Add(lease), rest(l.Waiting)
		if head == w {
			return l, Acquired, nil
		}
		handed = &head
	}
	switch {
	case slices.Contains(l.Waiting, w):
		return l, Wait, handed
	case w.Ticket <= l.Last:
		return l, Overtaken, handed
	case !l.Held(now):
		l.Holder, l.Until, l.Last = w, now.Add(lease), w.Ticket
		return l, Acquired, handed
	case len(l.Waiting) >= MaxLaneWaiting:
		return l, LaneFull, handed
	}
	l.Waiting = append(slices.Clone(l.Waiting), w)
	l.Last = w.Ticket
	return l, Wait, handed
}

// Leave is the rule for a job w whose attempt ended (or that gave up its
// key: it was paused, passed or cancelled) at now. If w held the key, the
// first waiter takes it with a fresh lease and is returned: the caller
// hands it the key. A waiter that leaves is taken off the list. Leave
// also hands on a key whose holder's lease has run out.
func Leave(l Lane, w Waiter, now time.Time, lease time.Duration) (next Lane, handed *Waiter) {
	if l.Holder == w {
		l.Holder, l.Until = Waiter{}, time.Time{}
	}
	if slices.Contains(l.Waiting, w) {
		l.Waiting = without(l.Waiting, w)
	}
	if !l.Held(now) {
		l.Holder, l.Until = Waiter{}, time.Time{}
		if len(l.Waiting) > 0 {
			head := l.Waiting[0]
			l.Holder, l.Until, l.Waiting = head, now.Add(lease), rest(l.Waiting)
			return l, &head
		}
	}
	return l, nil
}

// Enter puts w among the lane's waiters in ticket order, unless it is
// there already: the rule for a job waiting for a running place on the
// queue's own lane, where order is by ticket and nobody holds anything.
func Enter(l Lane, w Waiter) Lane {
	if slices.Contains(l.Waiting, w) {
		return l
	}
	i, _ := slices.BinarySearchFunc(l.Waiting, w.Ticket, func(x Waiter, t int64) int { return cmp.Compare(x.Ticket, t) })
	l.Waiting = slices.Insert(slices.Clone(l.Waiting), i, w)
	return l
}

// Remove takes w off the lane's waiters, if it is there.
func Remove(l Lane, w Waiter) Lane {
	if slices.Contains(l.Waiting, w) {
		l.Waiting = without(l.Waiting, w)
	}
	return l
}

// Pop takes the first waiter off the lane (ok false if none).
func Pop(l Lane) (next Lane, head Waiter, ok bool) {
	if len(l.Waiting) == 0 {
		return l, Waiter{}, false
	}
	head = l.Waiting[0]
	l.Waiting = rest(l.Waiting)
	return l, head, true
}
