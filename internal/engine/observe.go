package engine

import (
	"context"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Observer hears what Work and Resume did, one Event at a time, for
// metrics (internal/metrics writes them in CloudWatch's Embedded Metric
// Format). Observe is called on the goroutine doing the work, after the
// write the event reports succeeded; it must be quick, must not fail and
// must be safe for concurrent use.
type Observer interface {
	Observe(ctx context.Context, ev Event)
}

// EventKind names what happened. An event that a job's history records
// has the history's name (api.EventKind: "handed_back", "slot_missed"),
// the one name of it slotq writes on the wire and keeps in records;
// key_held, lifted and figures are the engine's alone. The metric that
// counts an event is named for the count (internal/metrics: HandedBack,
// MissedSlots). internal/metrics/vocabulary_test.go holds the lists.
type EventKind string

// What the engine reports to its Observer.
const (
	// EventStarted: a job passed the gate and its attempt starts
	// (api.Started). Lateness, Start and (when HasGap) Gap are set.
	EventStarted EventKind = "started"
	// EventReticketed: Count jobs took new tickets (passed at the gate, or
	// stale when resume looked at them; api.Reticketed).
	EventReticketed EventKind = "reticketed"
	// EventSlotMissed: a job's worker came too late for its start, and the
	// job gave its slot up (api.SlotMissed); Lateness says by how much.
	EventSlotMissed EventKind = "slot_missed"
	// EventKeyHeld: a job's key refused the start the queue's gate had
	// reserved (its own limit was not open yet): the queue's opening went
	// unused.
	EventKeyHeld EventKind = "key_held"
	// EventParked: a job was parked at the gate (its queue is paused), or on
	// a lane (its key is held, or every running place is taken;
	// api.ParkedEvent).
	EventParked EventKind = "parked"
	// EventReleased: Count parked jobs were sent to the transport: by the
	// resume function, or by a lane's hand-off (api.Released).
	EventReleased EventKind = "released"
	// EventHandedBack: a message was sent again unstarted: its slot lies
	// beyond what the invocation has left (api.HandedBack).
	EventHandedBack EventKind = "handed_back"
	// EventAttemptFailed: an attempt ended with an error (retried or not;
	// api.AttemptFailed).
	EventAttemptFailed EventKind = "attempt_failed"
	// EventRetried: a failed attempt's job took a new ticket for another
	// (api.Retried).
	EventRetried EventKind = "retried"
	// EventFailed: a job failed for good (api.FailedEvent); its record is
	// the dead-letter record, and metrics count it as DeadLetters.
	EventFailed EventKind = "failed"
	// EventSucceeded: an attempt succeeded (api.SucceededEvent).
	EventSucceeded EventKind = "succeeded"
	// EventSlowedDown: a job's target answered "slow down"
	// (attempt.RetryAfterError; api.SlowedDown): its queue, or its key,
	// waits until the time asked, and the job runs again first then.
	EventSlowedDown EventKind = "slowed_down"
	// EventLifted: resume lifted a pause whose time had come.
	EventLifted EventKind = "lifted"
	// EventBooked: a job of the waiting room was booked (waitroom.go;
	// api.BookedEvent).
	EventBooked EventKind = "booked"
	// EventFigures: resume looked at a queue; Figures holds what it saw.
	EventFigures EventKind = "figures"
)

// Event is one thing the engine did to a queue's jobs.
type Event struct {
	Kind  EventKind
	Queue string
	// Count is how many jobs the event is about (EventReticketed,
	// EventReleased); 1 for the others.
	Count int
	// Jobs is, for EventStarted on a queue that starts its jobs in
	// batches (slot.Config.Batched), how many jobs the start carried;
	// 0 on other queues.
	Jobs int
	// Lateness is, for EventStarted, the start minus the job's slot
	// (negative for a start within the skew before it).
	Lateness time.Duration
	// Gap is, for EventStarted with HasGap, the start minus the previous
	// start's theoretical time (slot.State.LastStart before this start):
	// the interval when the queue keeps its rate, at least interval −
	// skew, more after an idle spell or while the queue fell behind. A
	// queue's first start has none.
	Gap    time.Duration
	HasGap bool
	// Start is, for EventStarted, the job that starts: what the worker's
	// "start" log line says of it, for an observer that lists a queue's
	// recent starts (the local runtime's admin starts).
	Start *Start
	// Figures is set for EventFigures.
	Figures *Figures
}

// Start is one start of a job's attempt.
type Start struct {
	JobID   string
	Ticket  int64
	Attempt int
	SlotAt  time.Time
	// GateAt is the start the gate reserved for the attempt (the
	// record's StartedAt): the time the spacing guarantee counts by.
	GateAt time.Time
	// At is when the attempt started: SlotAt plus the event's Lateness,
	// after GateAt by the worker's wake-up (within the queue's skew).
	At time.Time
	// Key is the job's key ("" for a job without one): a key's starts
	// are judged by the key's own limits.
	Key string
}

// Figures are a queue's figures that resume reads on each run when
// Options.Figures is on, from the queue's counters, the parked jobs'
// count and its lanes.
type Figures struct {
	// Waiting is Stats.Waiting: jobs in line that have not reached the
	// gate (an upper bound; jobs out of line are not counted).
	Waiting int64
	// Parked counts the queue's parked jobs (State.CountJobs); -1 if
	// the count failed.
	Parked int
	// Lag is Stats.Lag: how far the queue's starts trail its line.
	Lag time.Duration
	// Paused is the queue's pause flag after the run.
	Paused bool
	// Lanes is what the queue's lanes showed (Running -1 and zeros if
	// they could not be read).
	Lanes LaneFigures
}

// observe reports ev to the Observer, if there is one.
func (e *core) observe(ctx context.Context, ev Event) {
	if e.opts.Observer == nil {
		return
	}
	if ev.Count == 0 {
		ev.Count = 1
	}
	e.opts.Observer.Observe(ctx, ev)
}

// startGap is the time from the previous start's theoretical time to a
// start at now that moved the queue's state from seen (read before the
// gate) to after. A start that followed the schedule set LastStart to the
// previous one plus interval, which is after now, so the previous is
// exact; otherwise LastStart became now, and the previous lies between
// seen.LastStart and now − interval: seen's is used (an upper bound; it
// is exact unless another start slipped between the read and the gate).
// A start of a burst (a rate's B+1 at once) comes before the previous
// start's theoretical time, which runs ahead of the clock by up to the
// burst: its gap is 0, as it started together with the one before.
func startGap(seen, after slot.State, interval time.Duration, now time.Time) (time.Duration, bool) {
	if after.LastStart.After(now) {
		return max(0, now.Sub(after.LastStart.Add(-interval))), true
	}
	if seen.LastStart.IsZero() {
		return 0, false
	}
	return now.Sub(seen.LastStart), true
}

// bookedGap is startGap for a start that passed by a read (a booked
// start), which moved no state to tell it: the line booked the previous
// start a tick (interval) before j's slot, at the least, so the gap is
// that tick and j's lateness. The queue's first ticket has none.
func bookedGap(j *job.Job, tick time.Duration, now time.Time) (time.Duration, bool) {
	if j.Ticket <= 1 {
		return 0, false
	}
	return max(0, now.Sub(j.SlotAt.Add(-tick))), true
}

// waiting is Stats.Waiting of a queue at state st.
func waiting(st slot.State) int64 { return slot.Waiting(st) }

// lag is how far q's starts trail its line at now (Stats.Lag).
func lag(q Queue, now time.Time) time.Duration {
	st := q.Settled(now)
	open := slot.Opens(st, q.Config.LimitList())
	if waiting(st) <= 0 || open.IsZero() {
		return 0
	}
	due := now
	if st.Clock.Before(due) {
		due = st.Clock
	}
	return max(0, due.Sub(open))
}

// Observers is an Observer that reports each event to every one of its
// observers, in order.
type Observers []Observer

// Observe reports ev to each observer.
func (os Observers) Observe(ctx context.Context, ev Event) {
	for _, o := range os {
		o.Observe(ctx, ev)
	}
}
