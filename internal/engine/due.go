package engine

import (
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// The table's schema mark and the due index: what the resume function
// reads to know what to rebuild and what to look at when.

// Schema is the table's schema mark: the layout version its records
// were last brought to, and how far a rebuild to a newer one got.
type Schema struct {
	// Version is the layout the records are in; 0 for a table without a
	// mark (created before marks were kept, or new and empty).
	Version int
	// Rebuild says a rebuild of the records at Version was asked
	// (Reindex) and is under way. A mark older than SchemaVersion needs
	// one without asking.
	Rebuild bool
	// After is the name of the last queue a rebuild brought to the
	// current layout: the next run goes on after it.
	After string
	// Queue, if set, is the queue after After that the rebuild is
	// inside of: its parked jobs up to ticket Ticket are rewritten and,
	// once Lanes, its lanes up to key Key. A run killed at its timeout
	// loses no more than the page it was writing.
	Queue  string
	Ticket int64
	Lanes  bool
	Key    string
	// Queues, Jobs and LanesDone count what the rebuild rewrote so far,
	// over all its runs.
	Queues    int
	Jobs      int64
	LanesDone int64
	// Seq counts the mark's writes: PutSchema's compare-and-set is on
	// it, so of two runs stepping the same rebuild one writes each page.
	Seq int64
}

// Pending reports whether the mark asks for a rebuild: it is older than
// SchemaVersion, or a rebuild was asked at it.
func (s Schema) Pending() bool { return s.Version < SchemaVersion || s.Rebuild }

// Cursor is what a queue's resume lease keeps between passes: whether a
// round of releases of the jobs a pause held is due (see Resume).
type Cursor struct {
	// Round, if not zero, is when the queue's next release round is due:
	// its held jobs (State.ListHeld) are re-ticketed in order and sent.
	// It is an entry of the due index (DueRound).
	Round time.Time
	// Until keeps the round due, run after run, until then, though it
	// finds nothing held: a worker that found the queue paused, or an
	// enqueue that took its tickets while it was, may park a job after
	// the unpause that started the round.
	Until time.Time
	// Reslot says a configure changed the queue's limits and may not
	// have finished moving the jobs already booked (its budget ran out,
	// or it died midway): the pass that takes the lease next moves them
	// to the places the change recorded (finishReslot), within the same
	// budget, and keeps it while some remain. A configure stores it, due
	// at once (Round), before its atomic step, and takes it off once its
	// moves are all written.
	Reslot bool
}

// DueKind says what an entry of the due index asks the resume function
// to do.
type DueKind string

// The kinds of due entries, each standing for one record.
const (
	// DueJob: a parked job's DueAt came (JobDue): its slot came within
	// the transport's reach, or its message was refused, or it waits for
	// a running place and is checked against its lane. ID is the job id.
	DueJob DueKind = "job"
	// DueLift: a queue's timed pause ends (QueueDue).
	DueLift DueKind = "lift"
	// DueRound: a queue's release round is due (Cursor.Round).
	DueRound DueKind = "round"
	// DueLane: a lane's holder's lease ends with jobs waiting for the
	// key, or jobs wait on the queue's own lane for a running place
	// (LaneDue). ID is the lane's key.
	DueLane DueKind = "lane"
	// DueRoom: jobs wait in a queue's waiting room, and the resume
	// function looks at it (HorizonDue): it books what a crash left
	// waiting and frees what a crash left booked (waitroom.go).
	DueRoom DueKind = "room"
)

// DueEntry is one entry of the due index: something the resume function
// must act on at At. The stores derive entries from the records they
// keep (JobDue, QueueDue, LaneDue, Cursor.Round), in the same write: an
// entry is never without its record, nor a record due without its entry.
type DueEntry struct {
	At    time.Time
	Kind  DueKind
	Queue string
	ID    string
}

// JobDue is when the resume function must look at j: a parked job's
// DueAt, unless a pause holds it (JobHeld). Zero: never (not in the
// index).
func JobDue(j job.Job) time.Time {
	if j.Status != job.Parked || JobHeld(j) {
		return time.Time{}
	}
	return j.DueAt
}

// JobHeld reports whether j waits for its queue's pause to end: it is
// released by the next release round, in line order (job.Job.LineOrder),
// not by time.
func JobHeld(j job.Job) bool { return j.Status == job.Parked && j.ParkReason == job.PausedQueue }

// JobInRoom reports whether j waits in its queue's waiting room: parked
// with job.Room, with a ticket for its place and no slot. The stores keep
// such jobs in an index by queue, generation, priority
// (slot.PriorityOf) and key, in ticket order (State.ListRoom).
func JobInRoom(j job.Job) bool { return j.Status == job.Parked && j.ParkReason == job.Room }

// QueueDue is when the resume function lifts a queue's timed pause (zero:
// never).
func QueueDue(s slot.State) time.Time {
	if !s.Paused {
		return time.Time{}
	}
	return s.PausedUntil
}

// LaneDue is when the resume function must look at lane l: for a key's
// lane, when its holder's lease ends while jobs wait for the key (the
// holder's worker may have died, or a hand-off may not have sent the job
// it named); for the queue's own lane (key ""), at its Until while jobs
// wait on it for a running place (the engine sets it as the first one
// enters, and moves it as it looks). Zero: never. A key held with nobody
// waiting is not due: the next job of the key takes it once the lease
// ends, and a holder that was handed the key but never sent is found by
// its own entry (JobDue, a job parked on a lane).
func LaneDue(l slot.Lane) time.Time {
	if len(l.Waiting) == 0 {
		return time.Time{}
	}
	until := l.FirstUntil()
	if until.IsZero() {
		return time.Unix(0, 0).UTC() // at once: written before it was kept
	}
	return until
}

// HorizonDue is when the resume function looks at a queue's waiting room
// (slot.Horizon.CheckAt; zero: never).
func HorizonDue(h slot.Horizon) time.Time { return h.CheckAt }
