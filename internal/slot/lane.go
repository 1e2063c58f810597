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
// (racing writers may take a lane a little past it). It bounds what a
// read of the lane returns: a store may keep the lane's record small, as
// DynamoDB's does, but a read still carries every waiter.
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
	// More are the key's other holders, each until its lease, under a
	// key_max_running above one: the key runs up to that many jobs at
	// once, Holder and More together. Empty under the default of one.
	More []Hold `json:"more,omitempty"`
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

// Hold is one of a key's holders beyond the first (Lane.More): the job,
// and the end of its lease.
type Hold struct {
	Waiter
	Until time.Time `json:"until"`
}

// Held reports whether somebody holds the lane at now.
func (l Lane) Held(now time.Time) bool { return l.Holding(now) > 0 }

// Holding is how many jobs hold the lane at now (their leases running).
func (l Lane) Holding(now time.Time) int {
	n := 0
	if l.Holder.Ticket != 0 && now.Before(l.Until) {
		n++
	}
	for _, h := range l.More {
		if now.Before(h.Until) {
			n++
		}
	}
	return n
}

// Expired reports whether a holder's lease has run out at now.
func (l Lane) Expired(now time.Time) bool {
	return l.Holder.Ticket != 0 && !now.Before(l.Until) || slices.ContainsFunc(l.More, func(h Hold) bool { return !now.Before(h.Until) })
}

// Holds reports whether w is among the lane's holders (its lease running
// or not).
func (l Lane) Holds(w Waiter) bool {
	return l.Holder == w || slices.ContainsFunc(l.More, func(h Hold) bool { return h.Waiter == w })
}

// FirstUntil is the earliest end of a holder's lease, or of the Until
// of the queue's own lane (zero: neither).
func (l Lane) FirstUntil() time.Time {
	first := l.Until // the queue's own lane keeps it without a holder
	for _, h := range l.More {
		if first.IsZero() || h.Until.Before(first) {
			first = h.Until
		}
	}
	return first
}

// Idle reports whether nobody holds the lane and nobody waits on it: a
// lane that is idle and has no pending jobs may be deleted.
func (l Lane) Idle() bool { return l.Holder.Ticket == 0 && len(l.More) == 0 && len(l.Waiting) == 0 }

// Equal reports whether l and o are the same lane state: times compared
// as instants, an empty waiting list the same as none.
func (l Lane) Equal(o Lane) bool {
	return l.Queue == o.Queue && l.Key == o.Key && l.Gen == o.Gen && l.Version == o.Version &&
		l.Holder == o.Holder && l.Until.Equal(o.Until) && l.Last == o.Last && l.Pending == o.Pending &&
		slices.Equal(l.Waiting, o.Waiting) &&
		slices.EqualFunc(l.More, o.More, func(a, b Hold) bool { return a.Waiter == b.Waiter && a.Until.Equal(b.Until) })
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
	for _, h := range l.More {
		f.More = append(f.More, Hold{Waiter: Waiter{Ticket: DeletedQueueTicket, JobID: h.JobID}, Until: h.Until})
	}
	return f
}

// DeletedQueueTicket is the Ticket of a lane's holder from a deleted
// queue, an older generation of the lane's (Fresh): no job of the lane's
// own generation has it, so none takes the hold for its own, and the key
// is free once Until has passed.
const DeletedQueueTicket int64 = -1

// Ahead is how many jobs of the lane wait before w: the holders (but w)
// and the waiters with a lower ticket.
func (l Lane) Ahead(w Waiter, now time.Time) int {
	n := l.Holding(now)
	if l.held(w, now) {
		n--
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
// slot come. places is how many jobs of the key may hold it at once (the
// queue's key_max_running, at least one); lease is how long a holder
// keeps its place without ending (the worker's lease). It returns the
// lane after, the verdict and the waiters that took places freed by
// expired holders: the caller hands each its place (releases its parked
// job).
//
// A holder arriving again (a duplicate delivery, a hand-back, the hand
// off's own message) keeps its place, its lease renewed unless nearly all
// of it is left (a hand-off's message that comes at once): from each
// arrival on, the holder has about the whole lease, and a worker's lease
// outlasts the worker's own timeout, so a holder that runs is never
// taken for dead. Free places go to the first waiters, then, with nobody
// waiting, to w if no later ticket reached the lane before it.
func Arrive(l Lane, w Waiter, now time.Time, places int, lease time.Duration) (next Lane, v LaneVerdict, handed []Waiter) {
	if l.Holds(w) {
		l = l.renew(w, now, lease)
		return l, Acquired, nil
	}
	l, handed = l.fill(now, places, lease)
	if i := slices.Index(handed, w); i >= 0 {
		if handed = slices.Delete(handed, i, i+1); len(handed) == 0 {
			handed = nil
		}
		return l, Acquired, handed
	}
	switch {
	case slices.Contains(l.Waiting, w):
		return l, Wait, handed
	case w.Ticket <= l.Last:
		return l, Overtaken, handed
	case l.Holding(now) < max(1, places):
		l = l.take(w, now, lease)
		l.Last = w.Ticket
		return l, Acquired, handed
	case len(l.Waiting) >= MaxLaneWaiting:
		return l, LaneFull, handed
	}
	l.Waiting = append(slices.Clone(l.Waiting), w)
	l.Last = w.Ticket
	return l, Wait, handed
}

// Leave is the rule for a job w whose attempt ended (or that gave up its
// key: it was paused, passed or cancelled) at now. If w held a place, the
// first waiter takes it with a fresh lease and is returned: the caller
// hands it the place. A waiter that leaves is taken off the list. Leave
// also hands on the places of holders whose leases have run out.
func Leave(l Lane, w Waiter, now time.Time, places int, lease time.Duration) (next Lane, handed []Waiter) {
	if l.Holder == w {
		l.Holder, l.Until = Waiter{}, time.Time{}
	}
	if i := slices.IndexFunc(l.More, func(h Hold) bool { return h.Waiter == w }); i >= 0 {
		l.More = slices.Delete(slices.Clone(l.More), i, i+1)
	}
	if slices.Contains(l.Waiting, w) {
		l.Waiting = without(l.Waiting, w)
	}
	return l.fill(now, places, lease)
}

// held reports whether w holds a place at now (its lease running).
func (l Lane) held(w Waiter, now time.Time) bool {
	if l.Holder == w {
		return now.Before(l.Until)
	}
	for _, h := range l.More {
		if h.Waiter == w {
			return now.Before(h.Until)
		}
	}
	return false
}

// Extend makes holder w's lease last until until at least.
func (l Lane) Extend(w Waiter, until time.Time) Lane {
	if l.Holder == w && l.Until.Before(until) {
		l.Until = until
	}
	l.More = slices.Clone(l.More)
	for i, h := range l.More {
		if h.Waiter == w && h.Until.Before(until) {
			l.More[i].Until = until
		}
	}
	return l
}

// renew gives holder w a fresh lease, unless nearly all of it is left.
func (l Lane) renew(w Waiter, now time.Time, lease time.Duration) Lane {
	if l.Holder == w {
		if l.Until.Sub(now) < lease-lease/64 {
			l.Until = now.Add(lease)
		}
		return l
	}
	l.More = slices.Clone(l.More)
	for i, h := range l.More {
		if h.Waiter == w && h.Until.Sub(now) < lease-lease/64 {
			l.More[i].Until = now.Add(lease)
		}
	}
	return l
}

// fill drops the holders whose leases ran out at now and gives the free
// places, up to places (at least one), to the first waiters, returned.
func (l Lane) fill(now time.Time, places int, lease time.Duration) (Lane, []Waiter) {
	if l.Holder.Ticket != 0 && !now.Before(l.Until) {
		l.Holder, l.Until = Waiter{}, time.Time{}
	}
	if slices.ContainsFunc(l.More, func(h Hold) bool { return !now.Before(h.Until) }) {
		l.More = slices.DeleteFunc(slices.Clone(l.More), func(h Hold) bool { return !now.Before(h.Until) })
	}
	if len(l.More) == 0 {
		l.More = nil
	}
	var handed []Waiter
	for len(l.Waiting) > 0 && l.Holding(now) < max(1, places) {
		head := l.Waiting[0]
		l.Waiting = rest(l.Waiting)
		l = l.take(head, now, lease)
		handed = append(handed, head)
	}
	return l, handed
}

// take gives w a place until now + lease: the first holder's if free,
// else one of More.
func (l Lane) take(w Waiter, now time.Time, lease time.Duration) Lane {
	if l.Holder.Ticket == 0 {
		l.Holder, l.Until = w, now.Add(lease)
		return l
	}
	l.More = append(slices.Clone(l.More), Hold{Waiter: w, Until: now.Add(lease)})
	return l
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
