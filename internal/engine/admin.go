package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// ErrNotWaiting: the job cannot be cancelled because it started or ended.
var ErrNotWaiting = errors.New("job is not waiting: it has started or ended")

// NotFoundError is every use case's answer for a queue, or a job of a
// queue, that does not exist: a missing queue is a missing queue whatever
// the operation. errors.Is matches ErrQueueNotFound, or ErrJobNotFound when
// JobID is set.
type NotFoundError struct {
	Queue string
	// JobID is set when the queue exists but the job does not.
	JobID string
}

func (e *NotFoundError) Error() string {
	if e.JobID != "" {
		return fmt.Sprintf("job %s not found in queue %s", e.JobID, e.Queue)
	}
	return fmt.Sprintf("queue %s not found", e.Queue)
}

// Is reports whether target is the sentinel e stands for.
func (e *NotFoundError) Is(target error) bool {
	if e.JobID != "" {
		return target == ErrJobNotFound
	}
	return target == ErrQueueNotFound
}

// failure wraps a store error of an operation on a queue: not-found becomes
// a *NotFoundError (whose message names the queue once), anything else gets
// the operation's name.
func failure(op string, k job.Ref, err error) error {
	switch {
	case errors.Is(err, ErrQueueNotFound):
		return &NotFoundError{Queue: k.Queue}
	case errors.Is(err, ErrJobNotFound) && k.ID != "":
		return &NotFoundError{Queue: k.Queue, JobID: k.ID}
	case k.ID != "":
		return fmt.Errorf("%s %s: %w", op, k, err)
	}
	return fmt.Errorf("%s %s: %w", op, k.Queue, err)
}

// CreateQueue does Engine.CreateQueue's work.
func (e *admin) CreateQueue(ctx context.Context, name string, cfg slot.Config) (Queue, error) {
	cfg, err := e.checkConfig(name, cfg)
	if err != nil {
		return Queue{}, err
	}
	q := Queue{Name: name, Gen: e.newGen(), Config: cfg, CreatedAt: e.now()}
	if err := e.state.CreateQueue(ctx, q); errors.Is(err, ErrQueueExists) {
		return Queue{}, err // the store's "create queue NAME: queue already exists"
	} else if err != nil {
		return Queue{}, fmt.Errorf("create queue %s: %w", name, err)
	}
	return q, nil
}

// Configure does Engine.Configure's work.
func (e *admin) Configure(ctx context.Context, name string, cfg slot.Config) (Queue, error) {
	q, _, err := e.Reconfigure(ctx, name, cfg)
	return q, err
}

// checkConfig validates a queue name and a configuration whose zero fields
// take Options.Defaults, and returns the configuration to store. A bad
// setting is named under "config.", as the admin request carries it.
func (e *admin) checkConfig(name string, cfg slot.Config) (slot.Config, error) {
	if err := slot.ValidateName(name); err != nil {
		return cfg, err
	}
	cfg = cfg.Or(e.defaults)
	err := cfg.Validate()
	if err == nil {
		err = e.checkTargetTimeout(cfg)
	}
	if err != nil {
		var in *input.Error
		if errors.As(err, &in) {
			return cfg, in.At("config.")
		}
		return cfg, err
	}
	return cfg, nil
}

// Queue does Engine.Queue's work.
func (e *admin) Queue(ctx context.Context, name string) (Queue, error) {
	if err := slot.ValidateName(name); err != nil {
		return Queue{}, err
	}
	q, err := e.state.GetQueue(ctx, name)
	if err != nil {
		return Queue{}, failure("queue", job.Ref{Queue: name}, err)
	}
	return q, nil
}

// Queues does Engine.Queues's work.
func (e *admin) Queues(ctx context.Context) ([]Queue, error) {
	qs, err := e.state.ListQueues(ctx)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return qs, nil
}

// Pause does Engine.Pause's work.
func (e *admin) Pause(ctx context.Context, name string, until time.Time) (slot.State, error) {
	if err := slot.ValidateName(name); err != nil {
		return slot.State{}, err
	}
	if !until.IsZero() && (!until.After(e.now()) || !until.Before(input.MaxTime)) {
		return slot.State{}, input.Invalid("invalid_until", "until", fmt.Sprintf("until must lie in the future and before %d", input.MaxTime.Year()))
	}
	st, err := e.state.Pause(ctx, name, until.UTC())
	if err != nil {
		return st, failure("pause", job.Ref{Queue: name}, err)
	}
	e.log.InfoContext(ctx, "paused", "queue", name, "paused_until", until)
	return st, nil
}

// Unpause does Engine.Unpause's work.
func (e *admin) Unpause(ctx context.Context, name string) (ResumeReport, error) {
	if err := slot.ValidateName(name); err != nil {
		return ResumeReport{}, err
	}
	if _, err := e.state.GetQueue(ctx, name); err != nil {
		return ResumeReport{}, failure("resume", job.Ref{Queue: name}, err)
	}
	holder := newHolder()
	if err := e.awaitLease(ctx, name, holder); err != nil {
		return ResumeReport{}, failure("resume", job.Ref{Queue: name}, err)
	}
	if err := e.state.ReleaseLease(ctx, name, holder, e.resumer.newRound(e.now())); err != nil {
		return ResumeReport{}, failure("resume", job.Ref{Queue: name}, err)
	}
	if _, err := e.state.Unpause(ctx, name, time.Time{}); err != nil {
		return ResumeReport{}, failure("resume", job.Ref{Queue: name}, err)
	}
	rep, err := e.resumer.resumeQueue(ctx, name, nil, holder)
	if q, qerr := e.state.GetQueue(ctx, name); err == nil && qerr == nil && q.Config.Bounded() {
		e.room.bookNext(ctx, q) // the room waited with the queue
	}
	return rep, err
}

// awaitLease takes queue's resume lease for holder, waiting up to half a
// minute (and ctx) for a pass in progress to end. ErrLeaseHeld if it
// does not.
func (e *admin) awaitLease(ctx context.Context, queue, holder string) error {
	_, err := e.awaitCursor(ctx, queue, holder)
	return err
}

// awaitCursor is awaitLease, returning the cursor the last holder left.
func (e *admin) awaitCursor(ctx context.Context, queue, holder string) (Cursor, error) {
	wait := 50 * time.Millisecond
	for give := e.now().Add(30 * time.Second); ; {
		now := e.now()
		cur, err := e.state.Lease(ctx, queue, holder, e.resumer.leaseUntil(ctx, now), now)
		if !errors.Is(err, ErrLeaseHeld) || now.After(give) {
			return cur, err
		}
		if err := clock.Sleep(ctx, wait); err != nil {
			return Cursor{}, err
		}
		wait = min(2*wait, time.Second)
	}
}

// Purge does Engine.Purge's work.
func (e *admin) Purge(ctx context.Context, name string) (int, error) {
	q, err := e.Queue(ctx, name)
	if err != nil {
		return 0, err
	}
	st, err := e.state.Purge(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("purge %s: %w", name, err)
	}
	q.State = st
	st = q.Settled(e.now()) // the booked starts that have come count as started
	parked, err := e.resumer.listAll(ctx, q, job.Parked)
	if err != nil {
		return 0, fmt.Errorf("purge %s: %w", name, err)
	}
	var (
		free []int64
		left []job.Job
		// cancelled counts the parked jobs this purge cancelled, and
		// inLine those of them whose tickets lie after current: the
		// line's queued tickets, cancelled at the gate, are counted
		// from the state, less those.
		cancelled, inLine int64
	)
	for _, j := range parked {
		if j.Ticket > st.Purged {
			continue // parked after the purge
		}
		if err := e.cancel(ctx, q.Config, j); err != nil {
			if errors.Is(err, ErrConflict) {
				continue
			}
			return 0, fmt.Errorf("purge %s: %w", name, err)
		}
		cancelled++
		if j.Ticket > st.Current {
			inLine++
		}
		e.lanes.takeOffLanes(ctx, q, j) // off its lanes, and no longer pending on its key
		switch {
		case inRoom(&j):
			left = append(left, j)
		case j.Booking != 0:
			free = append(free, j.Booking)
		}
	}
	e.room.leaveRoom(ctx, q, left...)
	if len(free) > 0 {
		e.room.bookNext(ctx, q, free...)
	}
	return int(cancelled + max(0, st.Purged-st.Current-inLine)), nil
}

// DeleteQueue does Engine.DeleteQueue's work.
func (e *admin) DeleteQueue(ctx context.Context, name string) (int, error) {
	q, err := e.Queue(ctx, name)
	if err != nil {
		return 0, err
	}
	if err := e.state.DeleteQueue(ctx, name); err != nil {
		return 0, failure("delete", job.Ref{Queue: name}, err)
	}
	parked, err := e.resumer.listAll(ctx, q, job.Parked)
	if err != nil {
		return 0, fmt.Errorf("delete %s: %w", name, err)
	}
	for _, j := range parked {
		if err := e.worker.expireOfDeletedQueue(ctx, j); err != nil {
			return 0, fmt.Errorf("delete %s: %w", name, err)
		}
	}
	st := q.Settled(e.now())
	return int(max(0, st.Ticket-max(st.Current, st.Purged))), nil
}

// Stats describes a queue now, as the admin function answers it
// (api.Stats). Its state is the queue's settled now, without the fields
// only the stores keep (slot.State.API). Waiting is slot.Waiting: the
// line's last ticket − current, less those a purge covered, read from
// the queue's counters alone (an upper bound, since a cancelled job's
// ticket or one a re-ticket left behind still counts). Lag is how far
// the starts trail the line: now (or the last line slot, if earlier)
// minus the theoretical next start, when jobs wait. Backlog is clock −
// now. Lanes counts attempts running under MaxRunning, keys held and
// keys with jobs waiting on them (docs/guarantees.md §12); Room, for a
// bounded queue, its bookings and waiting room (waitroom.go).
type Stats = api.Stats

// Stats does Engine.Stats's work.
func (e *admin) Stats(ctx context.Context, name string) (Stats, error) {
	q, err := e.Queue(ctx, name)
	if err != nil {
		return Stats{}, err
	}
	now := e.now()
	st := q.Settled(now)
	s := Stats{Queue: name, Config: api.Config(q.Config), State: st.API()}
	s.Waiting = waiting(st)
	if s.Parked, err = e.state.CountJobs(ctx, name, q.Gen, job.Parked); err != nil {
		return s, fmt.Errorf("stats %s: %w", name, err)
	}
	if s.Failed, err = e.state.CountJobs(ctx, name, q.Gen, job.Failed); err != nil {
		return s, fmt.Errorf("stats %s: %w", name, err)
	}
	if s.Lanes, err = e.lanes.Lanes(ctx, q); err != nil {
		return s, fmt.Errorf("stats %s: %w", name, err)
	}
	if q.Config.Keyed() {
		keys, err := e.lanes.Keys(ctx, name)
		if err != nil {
			return s, fmt.Errorf("stats %s: %w", name, err)
		}
		s.Lanes.KeysAtLimit = 0
		for _, k := range keys {
			if k.AtLimit {
				s.Lanes.KeysAtLimit++
			}
		}
	}
	if s.Room, err = e.room.roomFigures(ctx, q); err != nil {
		return s, fmt.Errorf("stats %s: %w", name, err)
	}
	s.Lag = api.Duration(lag(q, now))
	if st.Clock.After(now) {
		s.Backlog = api.Duration(st.Clock.Sub(now))
	}
	return s, nil
}

// Job does Engine.Job's work.
func (e *admin) Job(ctx context.Context, k job.Ref) (job.Job, error) {
	if err := checkRef(k); err != nil {
		return job.Job{}, err
	}
	q, err := e.Queue(ctx, k.Queue)
	if err != nil {
		return job.Job{}, err
	}
	j, err := e.getJob(ctx, q, k)
	if err != nil {
		return j, failure("job", k, err)
	}
	j.SlotAt = q.SlotOf(j)
	if inRoom(&j) {
		if j.Room, err = e.room.roomPlace(ctx, q, j); err != nil {
			return j, failure("job", k, err)
		}
	}
	return j, nil
}

// getJob reads a job of q: ErrJobNotFound also for a job of another
// generation of the queue (one deleted since).
func (e *admin) getJob(ctx context.Context, q Queue, k job.Ref) (job.Job, error) {
	j, err := e.state.GetJob(ctx, k)
	if err == nil && j.Gen != q.Gen {
		return job.Job{}, fmt.Errorf("get job %s: generation %d, queue at %d: %w", k, j.Gen, q.Gen, ErrJobNotFound)
	}
	return j, err
}

// RandomGens is where the generations of queues created before they were
// ordered lie (they were random in [1, 2^63)): at or above it. Ordered
// ones stay below it until 2041 (2^59 is 2^51 µs, shifted by 8). Stores
// order two generations by GenBefore.
const RandomGens int64 = 1 << 59

// GenBefore reports whether a record of generation old is of a queue
// created before the queue of generation gen, so that gen's create may
// replace it: ordered generations compare by value; a random one (of a
// queue created before generations were ordered) is before every ordered
// one, and random ones cannot be ordered among themselves (another
// random one counts as before, as it always did).
func GenBefore(old, gen int64) bool {
	switch {
	case gen >= RandomGens:
		return old >= RandomGens && old != gen
	case old >= RandomGens:
		return true
	}
	return old < gen
}

// lastGen is the last generation newGen gave in this process.
var lastGen atomic.Int64

// newGen returns a fresh queue generation, ordered by creation: the
// creation time in microseconds, shifted to leave room for 256 a
// microsecond, and above every generation this process gave before. A
// queue created again after a delete has a larger generation than the
// deleted one (given clocks within the time between the two creations),
// which stores use to keep a late write of the deleted generation off
// the new one's jobs (State.CreateJobs).
func (e *admin) newGen() int64 {
	next := e.now().UnixMicro() << 8
	for {
		last := lastGen.Load()
		g := max(next, last+1)
		if lastGen.CompareAndSwap(last, g) {
			return g
		}
	}
}

// checkRef validates a queue name and a job id, naming the id "job_id" as
// the admin request does.
func checkRef(k job.Ref) error {
	if err := slot.ValidateName(k.Queue); err != nil {
		return err
	}
	if err := job.ValidateID(k.ID); err != nil {
		return input.Invalid(err.Code, "job_id", err.Message)
	}
	return nil
}

// Jobs does Engine.Jobs's work.
func (e *admin) Jobs(ctx context.Context, r ListRequest) ([]job.Job, error) {
	if err := slot.ValidateName(r.Queue); err != nil {
		return nil, err
	}
	if !r.Status.Valid() {
		return nil, input.Invalid("invalid_status", "status", fmt.Sprintf("status %q is not one of %v", r.Status, job.Statuses))
	}
	if !r.Status.Listed() {
		return nil, input.Invalid("status_not_listed", "status",
			fmt.Sprintf("jobs are listed by status parked or failed, not %q: a job that runs without trouble is never indexed (get it by id)", r.Status))
	}
	if r.After < 0 {
		return nil, input.Invalid("invalid_after", "after", "after must not be negative")
	}
	if r.Limit < 0 || r.Limit > MaxList {
		return nil, input.Invalid("invalid_limit", "limit", fmt.Sprintf("limit must be between 0 (the default, 100) and %d", MaxList))
	}
	q, err := e.Queue(ctx, r.Queue)
	if err != nil {
		return nil, err
	}
	r.Gen = q.Gen
	jobs, err := e.state.ListJobs(ctx, r)
	if err != nil {
		return nil, failure("jobs", job.Ref{Queue: r.Queue}, err)
	}
	return jobs, nil
}

// MaxList is the most jobs one Jobs call answers.
const MaxList = 1000

// CancelJob does Engine.CancelJob's work.
func (e *admin) CancelJob(ctx context.Context, k job.Ref) (job.Job, error) {
	return e.cancelJob(ctx, k, "")
}

// cancelJob is CancelJob, its history's cancel event giving reason (""
// on request).
func (e *admin) cancelJob(ctx context.Context, k job.Ref, reason string) (job.Job, error) {
	if err := checkRef(k); err != nil {
		return job.Job{}, err
	}
	q, err := e.Queue(ctx, k.Queue)
	if err != nil {
		return job.Job{}, err
	}
	for {
		j, err := e.getJob(ctx, q, k)
		if err != nil {
			return j, failure("cancel", k, err)
		}
		if !j.Status.Waiting() {
			return j, fmt.Errorf("cancel %s: %w", k, ErrNotWaiting)
		}
		err = e.cancelFor(ctx, q.Config, j, reason)
		if errors.Is(err, ErrConflict) {
			continue // it moved (re-ticketed, say); look again
		}
		if err != nil {
			return j, failure("cancel", k, err)
		}
		e.lanes.takeOffLanes(ctx, q, j)
		if inRoom(&j) {
			e.room.leaveRoom(ctx, q, j)
		}
		e.room.freeBooking(ctx, q, j)
		return e.getJob(ctx, q, k)
	}
}

func (e *admin) cancel(ctx context.Context, cfg slot.Config, j job.Job) error {
	return e.cancelFor(ctx, cfg, j, "")
}

// cancelFor is cancel, its history's event giving reason.
func (e *admin) cancelFor(ctx context.Context, cfg slot.Config, j job.Job, reason string) error {
	from := j.Version()
	now := e.now()
	j.Status, j.FinishedAt, j.ExpiresAt, j.ParkReason, j.DueAt = job.Cancelled, now, now.Add(cfg.Retention), "", time.Time{}
	j.Record(job.Event{At: now, Kind: job.CancelledEvent, Reason: reason})
	return e.state.UpdateJob(ctx, j, from)
}
