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
}

// Clone returns h with a map of its own.
func (h Horizon) Clone() Horizon {
	h.Booked = maps.Clone(h.Booked)
	return h
}

// Room is what BookNext needs of h, with the keys' weights.
func (h Horizon) Room(weights map[string]int) WaitRoom {
	r := WaitRoom{Booked: len(h.Booked), KeyBooked: h.KeyBooked(), Weights: weights, Turns: h.Turns}
	return r
}

// KeyBooked counts h's bookings by key.
func (h Horizon) KeyBooked() map[string]int {
	n := map[string]int{}
	for _, b := range h.Booked {
		n[b.Key]++
	}
	return n
}

// Holds reports whether a booking of h is job id's.
func (h Horizon) Holds(id string) bool {
	for _, b := range h.Booked {
		if b.ID == id {
			return true
		}
	}
	return false
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
