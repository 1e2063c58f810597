package slot

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// The booking horizon and the waiting room. A queue may bound how many of
// its jobs hold a slot at once (Config.BookAhead) and how many of one
// key's jobs do (Config.KeyBookAhead). A job beyond a bound is accepted
// into the waiting room without a slot; as booked jobs start (or end
// without starting), the room books its next jobs by one rule, BookNext:
//
//  1. the highest priority first (api.MinPriority, 1, first);
//  2. within a priority, round-robin across keys: each key in turn, in
//     the order of their names, takes as many bookings as its weight
//     (WaitRoom.Weights, 1 by default) before the next key's turn; jobs
//     without a key form one key, "";
//  3. within a key and a priority, ticket order.
//
// A key at its own bound is passed over (its turn goes to the next key),
// and so is a job whose NotBefore lies ahead of now: booking it would
// hold a place of the horizon for nothing until then. A booked job's slot
// is a promise: BookNext only chooses among the waiting, and never names a
// booked job.

// WaitingJob is one job of the waiting room, as BookNext sees it.
type WaitingJob struct {
	Ticket int64
	// Key is the job's key ("" for none) and Priority its priority (0 is
	// api.DefaultPriority).
	Key      string
	Priority int
	// NotBefore, if set, is the earliest start the job's producer asked
	// for: the job is not booked before it.
	NotBefore time.Time
}

// Prio is w's priority, 1 to api.MaxPriority.
func (w WaitingJob) Prio() int { return PriorityOf(w.Priority) }

// PriorityOf is priority p as the room orders it: 0 is
// api.DefaultPriority.
func PriorityOf(p int) int {
	if p == 0 {
		return api.DefaultPriority
	}
	return p
}

// Turn is where the round-robin of one priority stands: the key that
// took the last booking and how many bookings it took in its turn.
type Turn struct {
	Key  string `json:"key,omitempty"`
	Used int    `json:"used,omitempty"`
}

// WaitRoom is what BookNext needs of a queue besides its waiting jobs: how many
// jobs hold a slot (Booked; KeyBooked by key), the keys' weights, and
// where the round-robin of each priority stands (Turns[p-1]).
type WaitRoom struct {
	Booked    int
	KeyBooked map[string]int
	Weights   map[string]int
	Turns     [api.MaxPriority]Turn
}

// Weight is key k's weight: its turns a round (at least 1).
func (r WaitRoom) Weight(k string) int { return max(1, r.Weights[k]) }

// BooksStarts reports whether a queue under c starts its line by its
// bookings: every limit an interval or a rate, no cap on attempts
// running at once, no limits of keys' own. Its take books each line
// ticket's moment with room to be late in (Take), so a line ticket on
// time for its slot passes the gate by a read (Admit) and writes nothing
// on the queue's state, while the queue is not gated (State.Gated:
// starts that cut in off the bookings are due). A window counts its
// starts at the gate, a cap its running places, and keys with limits of
// their own start out of line at their keys' openings: their queues pass
// every start by the gate's write.
func (c Config) BooksStarts() bool {
	if c.MaxRunning > 0 || c.Keyed() {
		return false
	}
	for _, l := range c.LimitList() {
		if !l.Window.IsZero() {
			return false
		}
	}
	return true
}

// Bounded reports whether c bounds its booking horizon: without a bound
// every job is booked at enqueue, and the waiting room stays empty.
func (c Config) Bounded() bool { return c.BookAhead > 0 || c.KeyBookAhead > 0 }

// Fits reports whether one more job of key k may be booked under c in
// room r: neither bound is reached.
func (c Config) Fits(r WaitRoom, k string) bool {
	if c.BookAhead > 0 && r.Booked >= c.BookAhead {
		return false
	}
	b := c.KeyBound(k)
	return b <= 0 || r.KeyBooked[k] < b
}

// KeyBound is how many jobs of key k may hold a booking at once on a
// bounded queue under c (0: no bound): KeyBookAhead, and for a key whose
// jobs run a bounded number at once (KeyCap) no more than that. Such a
// key's booking is held from its job's booking to the end of its attempt
// (Booking.Running): a job of the key is booked only when a place of the
// key is free for it, so its lane never holds it past the slot it was
// told, whatever the run time of the jobs before it. Jobs without a key
// have no lane: KeyBookAhead alone bounds them.
func (c Config) KeyBound(k string) int {
	b := c.KeyBookAhead
	if m := c.KeyCap(); k != "" && m > 0 && (b <= 0 || m < b) {
		b = m
	}
	return b
}

// BookNext chooses, by the room's rule, up to n jobs of waiting to book now
// under c's bounds, in the order they are booked, and returns the room
// as it is after booking them (counts and turns moved on). It does not
// change its arguments. Waiting jobs may come in any order; a job is
// chosen once at most.
func BookNext(c Config, now time.Time, r WaitRoom, waiting []WaitingJob, n int) ([]WaitingJob, WaitRoom) {
	r.KeyBooked = maps.Clone(r.KeyBooked)
	if r.KeyBooked == nil {
		r.KeyBooked = map[string]int{}
	}
	// Due jobs, by priority, key and ticket.
	due := make([]WaitingJob, 0, len(waiting))
	for _, w := range waiting {
		if w.NotBefore.IsZero() || !w.NotBefore.After(now) {
			due = append(due, w)
		}
	}
	slices.SortFunc(due, func(a, b WaitingJob) int {
		return cmp.Or(cmp.Compare(a.Prio(), b.Prio()), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Ticket, b.Ticket))
	})
	taken := make([]bool, len(due))
	var out []WaitingJob
	for len(out) < n {
		i := r.next(c, due, taken)
		if i < 0 {
			break
		}
		w := due[i]
		taken[i] = true
		out = append(out, w)
		r.Booked++
		r.KeyBooked[w.Key]++
		t := &r.Turns[w.Prio()-1]
		if t.Key == w.Key && t.Used > 0 && t.Used < r.Weight(w.Key) {
			t.Used++
		} else {
			*t = Turn{Key: w.Key, Used: 1}
		}
	}
	return out, r
}

// next is the index in due (sorted by priority, key, ticket) of the job
// to book next, or -1 for none: the first priority with a job that fits,
// in it the key whose turn it is, in that key its first ticket.
func (r WaitRoom) next(c Config, due []WaitingJob, taken []bool) int {
	if c.BookAhead > 0 && r.Booked >= c.BookAhead {
		return -1
	}
	for i := 0; i < len(due); {
		p := due[i].Prio()
		j := i
		for j < len(due) && due[j].Prio() == p {
			j++
		}
		if k := r.turn(c, p, due[i:j], taken[i:j]); k >= 0 {
			return i + k
		}
		i = j
	}
	return -1
}

// turn picks within the jobs of one priority p (sorted by key, ticket):
// the key of the last turn again while it has turns left, else the next
// key after it in name order (cyclically) with a job that fits.
func (r WaitRoom) turn(c Config, p int, due []WaitingJob, taken []bool) int {
	// first[k] is the index of key k's first job not taken, keys in order.
	var keys []string
	first := map[string]int{}
	for i, w := range due {
		if taken[i] {
			continue
		}
		if _, ok := first[w.Key]; !ok {
			first[w.Key] = i
			keys = append(keys, w.Key)
		}
	}
	t := r.Turns[p-1]
	if i, ok := first[t.Key]; ok && t.Used > 0 && t.Used < r.Weight(t.Key) && c.Fits(r, t.Key) {
		return i
	}
	// The keys after t.Key, then from the start round to it.
	at, _ := slices.BinarySearch(keys, t.Key)
	if at < len(keys) && keys[at] == t.Key && t.Used > 0 {
		at++
	}
	for s := range keys {
		k := keys[(at+s)%len(keys)]
		if c.Fits(r, k) {
			return first[k]
		}
	}
	return -1
}
