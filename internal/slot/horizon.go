package slot

import (
	"maps"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// Horizon is a bounded queue's booking horizon as stored (Config.Bounded):
// the jobs that hold a slot and have not started yet, where the room's
// round-robin stands, and how many jobs wait in the room. It is one
// record per queue, apart from the queue's hot state, and every change is
// a compare-and-set of its Version.
//
// Each booking has a number of its own (Seq), kept on the job's record
// (its booking), and Booked holds the bookings not yet started or ended.
// Freeing a booking is removing its number, so it is idempotent: a
// duplicate delivery, a crash and a retry of the write, or two paths that
// both see the job leave, free it once. The bounds are checked against
// Booked alone, and a booking is entered in it before its job is written,
// so the bounds hold at every moment; a job written for a booking it
// does not hold is found by the resume function (a booking whose job is
// not booked by it is freed; a job still waiting under a booking is
// booked by it).
type Horizon struct {
	Queue   string `json:"-"`
	Gen     int64  `json:"-"`
	Version int64  `json:"-"`
	// Seq is the last booking number handed out.
	Seq int64 `json:"seq,omitempty"`
	// Booked holds the bookings not yet started or ended, by number.
	Booked map[int64]Booking `json:"booked,omitempty"`
	// Turns is where the round-robin of each priority stands
	// (WaitRoom.Turns).
	Turns [api.MaxPriority]Turn `json:"turns"`
	// Waiting counts the jobs that went into the room and were not
	// booked from it: a hint that the room is not empty, never low but
	// for a crash the resume function repairs (a cancelled waiting job
	// leaves it high until then).
	Waiting int64 `json:"waiting,omitempty"`
	// Keys counts the same by priority (Keys[p-1]) and key: the keys a
	// booking reads the heads of (one small read each), without listing
	// the room. Like Waiting it is a hint, never low: a read that finds
	// fewer of a key's jobs than counted corrects it (Count).
	Keys [api.MaxPriority]map[string]int64 `json:"keys"`
	// LastIn is when the last job went into the room: a look at the room
	// counts what it lists only once every record written by then shows.
	LastIn time.Time `json:"last_in,omitzero"`
	// CheckAt is when the resume function looks at the room next (zero:
	// never): an entry of the due index while jobs wait.
	CheckAt time.Time `json:"check_at,omitzero"`
}

// Booking is one job that holds a slot of the horizon.
type Booking struct {
	Key string    `json:"key,omitempty"`
	ID  string    `json:"id"`
	At  time.Time `json:"at"`
	// Running: the job started, and holds its key's place (Config.KeyBound:
	// a key whose jobs run a bounded number at once) until its attempt
	// ends; it no longer counts against BookAhead.
	Running bool `json:"running,omitempty"`
}

// Clone returns h with maps of its own, each the size of what it holds:
// a map keeps the room it once needed (maps.Clone copies it), and a
// horizon that booked many keys at once would be copied at that size by
// every booking after.
func (h Horizon) Clone() Horizon {
	h.Booked = sized(h.Booked)
	for p := range h.Keys {
		h.Keys[p] = sized(h.Keys[p])
	}
	return h
}

// sized copies m into a map made for its length (nil stays nil).
func sized[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	c := make(map[K]V, len(m))
	maps.Copy(c, m)
	return c
}

// Counted reports whether h counts all its waiting jobs by priority and
// key (Keys): their counts add up to Waiting. A horizon written before
// it kept counts has only Waiting (and the counts of the jobs that came
// since), and its room is read whole until a look counts it (Recount).
func (h Horizon) Counted() bool {
	var n int64
	for _, m := range h.Keys {
		for _, c := range m {
			n += c
		}
	}
	return n == h.Waiting
}

// Enter counts a job of priority p (PriorityOf) and key k into the room.
// h must own its maps (Clone).
func (h *Horizon) Enter(p int, k string) {
	h.Count(p, k, h.Keys[PriorityOf(p)-1][k]+1)
}

// Leave counts a job of priority p and key k out of the room (booked, or
// gone); a count at 0 stays there. h must own its maps (Clone).
func (h *Horizon) Leave(p int, k string) {
	h.Count(p, k, h.Keys[PriorityOf(p)-1][k]-1)
}

// Count sets the count of priority p and key k to n (0 or less removes
// it) and moves Waiting by as much. h must own its maps (Clone).
func (h *Horizon) Count(p int, k string, n int64) {
	m := &h.Keys[PriorityOf(p)-1]
	n = max(0, n)
	h.Waiting = max(0, h.Waiting+n-(*m)[k])
	if n == 0 {
		delete(*m, k)
		return
	}
	if _, ok := (*m)[k]; !ok && h.countBytes()+countCost(k) > MaxCountBytes {
		// Counted in Waiting alone: the room is read whole while its
		// keys' counts would outgrow the record.
		return
	}
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[k] = n
}

// Spot is where the last job counted of priority p (PriorityOf) and key
// k stands in the room, by the room's rule and h's counts, without a list
// of the room: place, its place among its key's waiting jobs (1 first:
// those of a higher priority, then its priority's before it), and before,
// how many jobs the room books before it (every job of a higher
// priority; then, round-robin, its key's before it and, of each other key
// of its priority, as many as the turns give them before it: one more
// than its own, at most their count). ok is false when h counts the key
// in Waiting alone (MaxCountBytes): the caller falls back on Waiting.
func (h Horizon) Spot(p int, k string) (place, before int64, ok bool) {
	p = PriorityOf(p)
	n, ok := h.Keys[p-1][k]
	if !ok || n < 1 {
		return 0, 0, false
	}
	mine := n - 1 // its key's jobs of its priority before it
	place = mine + 1
	for q := 1; q < p; q++ {
		for key, c := range h.Keys[q-1] {
			before += c
			if key == k {
				place += c
			}
		}
	}
	for key, c := range h.Keys[p-1] {
		if key != k {
			before += min(c, mine+1)
		}
	}
	return place, before + mine, true
}

// MaxCountBytes bounds the room's counts by key (Keys) that a horizon
// keeps, about 40 KB with the record's other fields: the horizon is one
// item, written by each admission and each booking, which a room of many
// thousand keys would otherwise grow past DynamoDB's item size. A key
// beyond it is counted in Waiting alone, and while any is, a booking
// reads the room whole (Counted), as before the counts.
const MaxCountBytes = 32 << 10

// countCost is what a count of key k adds to the record: the key, its
// number, the JSON around them.
func countCost(k string) int { return len(k) + 24 }

// countBytes is what h's counts add to its record.
func (h Horizon) countBytes() int {
	n := 0
	for _, m := range h.Keys {
		for k := range m {
			n += countCost(k)
		}
	}
	return n
}

// Recount sets every count to what was counted (by priority, then key)
// and Waiting to their sum: a look that read the whole room.
func (h *Horizon) Recount(counted [api.MaxPriority]map[string]int64) {
	h.Keys, h.Waiting = [api.MaxPriority]map[string]int64{}, 0
	for p, m := range counted {
		for k, n := range m {
			h.Count(p+1, k, n)
		}
	}
}

// Room is what BookNext needs of h, with the keys' weights.
func (h Horizon) Room(weights map[string]int) WaitRoom {
	r := WaitRoom{Booked: h.Unstarted(), KeyBooked: h.KeyBooked(), Weights: weights, Turns: h.Turns}
	return r
}

// Unstarted counts h's bookings whose jobs have not started: those
// BookAhead bounds.
func (h Horizon) Unstarted() int {
	n := 0
	for _, b := range h.Booked {
		if !b.Running {
			n++
		}
	}
	return n
}

// KeyBooked counts h's bookings by key, started ones (Running) too.
func (h Horizon) KeyBooked() map[string]int {
	n := map[string]int{}
	for _, b := range h.Booked {
		n[b.Key]++
	}
	return n
}

// Holders is the set of the jobs h holds a booking for, by id.
func (h Horizon) Holders() map[string]bool {
	ids := make(map[string]bool, len(h.Booked))
	for _, b := range h.Booked {
		ids[b.ID] = true
	}
	return ids
}

// Book enters a booking of job id of key k at at, and returns its
// number. h must own its map (Clone).
func (h *Horizon) Book(k, id string, at time.Time) int64 {
	if h.Booked == nil {
		h.Booked = map[int64]Booking{}
	}
	h.Seq++
	h.Booked[h.Seq] = Booking{Key: k, ID: id, At: at}
	return h.Seq
}

// Free frees booking seq, and reports whether h held it. h must own its
// map (Clone).
func (h *Horizon) Free(seq int64) bool {
	if _, ok := h.Booked[seq]; !ok {
		return false
	}
	delete(h.Booked, seq)
	return true
}

// Hold marks booking seq Running: its job started and holds its key's
// place until its attempt ends. It reports whether h changed. h must own
// its map (Clone).
func (h *Horizon) Hold(seq int64) bool {
	b, ok := h.Booked[seq]
	if !ok || b.Running {
		return false
	}
	b.Running = true
	h.Booked[seq] = b
	return true
}
