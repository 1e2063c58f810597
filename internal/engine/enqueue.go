package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// Accepted is the answer for one enqueued job (api.Accepted, the type
// users decode: one declaration of each field). Its Position is
// slot.Position and its KeyAhead the lane's count (slot.Lane.Pending),
// upper bounds both: a cancelled job's ticket, a ticket a re-ticket left
// behind and a scheduled job's ticket still count, and a crash between a
// job's end and its lane's update leaves one counted. Waiting and
// EstimatedStartAt come from waitroom.go.
type Accepted = api.Accepted

// EnqueueResult answers an enqueue call, job by job in request order
// (api.EnqueueResult).
type EnqueueResult = api.EnqueueResult

// Enqueue does Engine.Enqueue's work.
func (e *enqueuer) Enqueue(ctx context.Context, req job.EnqueueRequest) (res EnqueueResult, err error) {
	ctx, end := e.traceEnqueue(ctx, &req)
	defer func() { end(err) }()
	return e.enqueue(ctx, req)
}

func (e *enqueuer) enqueue(ctx context.Context, req job.EnqueueRequest) (EnqueueResult, error) {
	now := e.now()
	if err := req.Validate(now); err != nil {
		return EnqueueResult{}, err
	}
	specs := req.Specs()
	q, err := e.enqueueQueue(ctx, req, specs)
	if err != nil {
		return EnqueueResult{}, err
	}
	res := EnqueueResult{Queue: q.Name, Jobs: make([]Accepted, len(specs))}
	newJobs, at, err := e.newJobs(ctx, q, specs, now, res.Jobs)
	if err != nil {
		return EnqueueResult{}, err
	}
	if len(newJobs) == 0 {
		return res, nil
	}
	var keyAhead []int64
	var spots []roomSpot
	var spare bool
	if q.Config.Bounded() {
		if keyAhead, spots, spare, err = e.room.admit(ctx, q, newJobs); err != nil {
			return EnqueueResult{}, fmt.Errorf("enqueue %s: %w", q.Name, err)
		}
	}
	ahead, err := e.ticketsAndCounts(ctx, &q, newJobs, keyAhead)
	if err != nil {
		return EnqueueResult{}, fmt.Errorf("enqueue %s: %w", q.Name, err)
	}
	for _, j := range newJobs {
		j.Order = j.Ticket // kept through re-tickets: the order a pause keeps
		j.Record(job.Event{At: now, Kind: job.Enqueued, Ticket: j.Ticket})
		e.sendOrPark(j, q.State)
	}
	created, err := e.sendAndCreate(ctx, q, newJobs)
	if err != nil {
		return EnqueueResult{}, err
	}
	e.uncountLost(ctx, q, newJobs, created)
	if err := e.openDebounces(ctx, q, newJobs, created); err != nil { // debounce.go
		return EnqueueResult{}, err
	}
	for k, j := range newJobs {
		if res.Jobs[at[k]], err = e.answerNew(ctx, q, j, created[k], ahead[k]); err != nil {
			return EnqueueResult{}, err
		}
		if created[k] && inRoom(j) {
			e.room.answerWaiting(&res.Jobs[at[k]], q, j, spots[k])
		}
	}
	if spare {
		e.room.bookNext(ctx, q)
	}
	e.log.DebugContext(ctx, "enqueued", "queue", q.Name, "jobs", len(newJobs), "first_ticket", newJobs[0].Ticket)
	return res, nil
}

// enqueueQueue returns the queue an enqueue call goes to, created if it
// is missing and auto-creation is on. Everything is checked before the
// first write: a refused call must not create the queue
// (docs/guarantees.md §10).
func (e *enqueuer) enqueueQueue(ctx context.Context, req job.EnqueueRequest, specs []job.Spec) (Queue, error) {
	q, fresh, err := e.queueFor(ctx, req)
	if err != nil {
		return q, err
	}
	if err := e.checkTargets(q.Config, req, specs); err != nil {
		return q, err
	}
	if err := e.checkDebounce(q.Config, req, specs); err != nil {
		return q, err
	}
	if !fresh {
		return q, nil
	}
	if q, err = e.createForEnqueue(ctx, q); err != nil {
		return q, err
	}
	// A concurrent call may have created it with another config.
	if err := e.checkTargets(q.Config, req, specs); err != nil {
		return q, err
	}
	if err := e.checkDebounce(q.Config, req, specs); err != nil {
		return q, err
	}
	return q, nil
}

// newJobs builds the jobs specs ask for, and at, the index of each in
// the request. Idempotency: a caller-given id that exists answers with
// that job (into answers), and nothing new is made of it.
func (e *enqueuer) newJobs(ctx context.Context, q Queue, specs []job.Spec, now time.Time, answers []Accepted) (jobs []*job.Job, at []int, err error) {
	debounced := map[string]*job.Job{} // by debounce key: the call's new debounced jobs
	for i, s := range specs {
		if s.ID != "" {
			old, err := e.admin.getJob(ctx, q, job.Ref{Queue: q.Name, ID: s.ID})
			if err == nil {
				if answers[i], err = e.answerExisting(ctx, q, &old); err != nil {
					return nil, nil, fmt.Errorf("enqueue %s: %w", q.Name, err)
				}
				continue
			}
			if !errors.Is(err, ErrJobNotFound) {
				return nil, nil, fmt.Errorf("enqueue %s: %w", q.Name, err)
			}
		}
		if s.DebounceKey != "" {
			a, joined, err := e.joinDebounce(ctx, q, s, now, debounced)
			if err != nil {
				return nil, nil, fmt.Errorf("enqueue %s: %w", q.Name, err)
			}
			if joined {
				answers[i] = a
				continue
			}
		}
		j := &job.Job{
			Queue: q.Name, Gen: q.Gen, ID: s.ID, Kind: s.Kind, Target: s.Target, Payload: s.Payload,
			Key: s.Key, Attempt: 1, EnqueuedAt: now, Priority: s.Priority,
		}
		if j.ID == "" {
			j.ID = job.NewID()
		}
		e.carryTrace(ctx, j, s)
		if s.NotBefore != nil {
			j.NotBefore = s.NotBefore.UTC()
		}
		if s.DebounceKey != "" {
			holdForDebounce(j, s, now, debounced)
		}
		jobs = append(jobs, j)
		at = append(at, i)
	}
	return jobs, at, nil
}

// sendAndCreate sends the messages of the new jobs and then writes their
// records, and reports which records it created (a job of the same id may
// have been created meanwhile by another call). The messages go first and
// the records after, so a stored queued job always has a message on its
// way: a crash between the two leaves messages whose job does not exist
// (dropped by the worker), never a job that waits for a message that will
// not come.
func (e *enqueuer) sendAndCreate(ctx context.Context, q Queue, jobs []*job.Job) ([]bool, error) {
	e.sendQueued(ctx, jobs)
	records := make([]job.Job, len(jobs))
	for i, j := range jobs {
		records[i] = *j
	}
	created, err := e.state.CreateJobs(ctx, records)
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", q.Name, err)
	}
	if e.worker.expireIfDead(ctx, q.Name, q.Gen, jobs) > 0 {
		// Deleted since the tickets were taken: the call ran against
		// the deleted queue, and its parked jobs went with it.
		return nil, fmt.Errorf("enqueue %s: generation %d: %w", q.Name, q.Gen, ErrQueueNotFound)
	}
	return created, nil
}

// uncountLost takes back what the jobs whose record was not created
// (another call's job of the same id won) hold: their pending counts
// (countPending), their bookings of a bounded queue's horizon (freed, and
// the room books the next: held, they would fill a place until the
// resume function's look) and their counts in its waiting room.
func (e *enqueuer) uncountLost(ctx context.Context, q Queue, jobs []*job.Job, created []bool) {
	lost := map[string]int64{}
	var free []int64
	var left []job.Job
	for k, j := range jobs {
		if created[k] {
			continue
		}
		if j.Key != "" {
			lost[j.Key]++
		}
		switch {
		case inRoom(j):
			left = append(left, *j)
		case j.Booking != 0:
			free = append(free, j.Booking)
		}
	}
	e.room.leaveRoom(ctx, q, left...)
	if len(free) > 0 {
		e.room.bookNext(ctx, q, free...)
	}
	for key, n := range lost {
		if _, err := e.state.AddPending(ctx, q.Name, q.Gen, key, -n); err != nil {
			e.log.WarnContext(ctx, "key's pending count left high", "queue", q.Name, "key", key, "error", err.Error())
		}
	}
}

// answerNew is the answer for j, a job this call made: with the jobs of
// its key ahead of it if it was created. If it lost a race with the same
// id, the answer is the winner's; the ticket this call took for it stays
// unused, and its message is dropped as stale.
func (e *enqueuer) answerNew(ctx context.Context, q Queue, j *job.Job, created bool, ahead int64) (Accepted, error) {
	if !created {
		old, err := e.admin.getJob(ctx, q, job.Ref{Queue: q.Name, ID: j.ID})
		if err != nil {
			return Accepted{}, fmt.Errorf("enqueue %s: %w", q.Name, err)
		}
		return e.answerExisting(ctx, q, &old)
	}
	a := answer(j, q.Settled(e.now()))
	if j.Key != "" {
		a.KeyAhead = &ahead
	}
	return a, nil
}

// answer is the answer for j, given the queue's state st.
func answer(j *job.Job, st slot.State) Accepted {
	return Accepted{
		JobID: j.ID, Ticket: j.Ticket, SlotAt: j.SlotAt, Position: slot.Position(st, j.Ticket),
		Status: j.Status, Key: j.Key,
	}
}

// answerExisting is the answer for j, a job of the id accepted before:
// one that waits in the waiting room is answered waiting, with its place
// and estimate as its record shows them (roomPlace), as its first call
// was.
func (e *enqueuer) answerExisting(ctx context.Context, q Queue, j *job.Job) (Accepted, error) {
	a := answer(j, q.Settled(e.now()))
	a.Existing = true
	if !inRoom(j) {
		return a, nil
	}
	rp, err := e.room.roomPlace(ctx, q, *j)
	if err != nil {
		return a, err
	}
	answerInRoom(&a, rp)
	return a, nil
}

// delayTo is the delay of a message sent at now for a start at start: it
// arrives Options.Lead before it, so the worker passes the gate then, for
// a start at the start. Every message for a start is sent with it (an
// enqueue, a re-ticket, a hand-back, a release, a redrive).
func (e *enqueuer) delayTo(start, now time.Time) time.Duration {
	return max(0, start.Sub(now)-e.opts.Lead)
}

// sendQueued sends the messages of the queued jobs among jobs, before
// their records are written. Each delay is the time from now, as the messages
// go, to the slot: a now taken before the round trips of the call would
// make every message arrive late by their time. A job whose message the
// transport refuses becomes parked as unsent (in memory: the caller
// writes the record), and the resume function sends it again.
func (e *enqueuer) sendQueued(ctx context.Context, jobs []*job.Job) {
	var queued []*job.Job
	for _, j := range jobs {
		if j.Status == job.Queued {
			queued = append(queued, j)
		}
	}
	if len(queued) == 0 {
		return
	}
	now := e.now()
	msgs := make([]Message, len(queued))
	for i, j := range queued {
		env := j.Envelope()
		env.SentAt = now
		msgs[i] = Message{Envelope: env, Delay: e.messageDelay(j, j.SlotAt, now)}
	}
	err := e.transport.Send(ctx, msgs)
	if err == nil {
		return
	}
	failed := map[int]error{}
	var se *SendError
	if errors.As(err, &se) {
		failed = se.Failed
	} else {
		for i := range queued {
			failed[i] = err
		}
	}
	for i, cause := range failed {
		j := queued[i]
		j.Status, j.ParkReason, j.DueAt = job.Parked, job.Unsent, now
		j.Record(job.Event{At: now, Kind: job.ParkedEvent, Reason: string(job.Unsent)})
		e.log.WarnContext(ctx, "send failed; job parked for resume", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "error", cause)
	}
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// queueFor returns the request's queue. If it does not exist and
// auto-creation is on, it returns the queue it would create, with the
// defaults (and the request's limit), and fresh set: nothing is
// written yet.
func (e *enqueuer) queueFor(ctx context.Context, req job.EnqueueRequest) (q Queue, fresh bool, err error) {
	q, err = e.state.GetQueue(ctx, req.Queue)
	switch {
	case err == nil:
		return q, false, nil
	case !errors.Is(err, ErrQueueNotFound):
		return q, false, fmt.Errorf("enqueue %s: %w", req.Queue, err)
	case e.opts.NoAutoCreate:
		return q, false, &NotFoundError{Queue: req.Queue}
	}
	cfg := e.defaults
	if l, ok := req.Limit(); ok {
		cfg.Interval, cfg.Rate, cfg.Burst, cfg.Window, cfg.Limits = l.Interval, l.Rate, l.Burst, l.Window, nil
		cfg.Skew = min(cfg.Skew, cfg.Tick()/4)
	}
	err = cfg.Validate()
	if err == nil {
		err = e.checkTargetTimeout(cfg)
	}
	if err != nil {
		return q, false, err
	}
	return Queue{Name: req.Queue, Gen: e.admin.newGen(), Config: cfg, CreatedAt: e.now()}, true, nil
}

// createForEnqueue creates the queue an enqueue call found missing, or
// reads the one a concurrent call created first.
func (e *enqueuer) createForEnqueue(ctx context.Context, q Queue) (Queue, error) {
	if err := e.state.CreateQueue(ctx, q); err != nil && !errors.Is(err, ErrQueueExists) {
		return q, fmt.Errorf("create queue %s: %w", q.Name, err)
	}
	q, err := e.state.GetQueue(ctx, q.Name)
	if err != nil {
		return q, fmt.Errorf("enqueue %s: %w", q.Name, err)
	}
	return q, nil
}

func (e *enqueuer) checkTargets(cfg slot.Config, req job.EnqueueRequest, specs []job.Spec) error {
	kinds, _ := e.runner.(Kinds)
	for i, s := range specs {
		if s.Target != "" {
			if err := cfg.CheckTarget(s.Target); err != nil {
				return input.Invalid("target_not_allowed", req.SpecField(i, "target"),
					fmt.Sprintf("queue %s does not allow target %q: %v; a queue allows the targets its config.targets match (configure), and a private or loopback address those its config.allow_networks hold", req.Queue, s.Target, err))
			}
		}
		if s.Key != "" && cfg.Batched() {
			return input.Invalid("invalid_batch", req.SpecField(i, "key"), fmt.Sprintf("queue %s starts its jobs in batches of up to %d (batch_max), which do not take keys yet: leave the key out, or use a queue without batch_max", req.Queue, cfg.BatchMax))
		}
		if s.Kind != "" && kinds != nil && !kinds.Has(s.Kind) {
			return input.Invalid("unknown_kind", req.SpecField(i, "kind"), fmt.Sprintf("no handler is registered for kind %q: register one in the worker's Mux (pkg/worker, local.Options.Mux), or use a built-in kind (echo, sleep, fail)", s.Kind))
		}
	}
	return nil
}
