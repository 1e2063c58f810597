package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// ResumeReport says what one Resume run did.
type ResumeReport struct {
	// Queues counts the queues the run acted on: those with something
	// due. A queue with nothing due is neither read nor written.
	Queues int `json:"queues"`
	// Due counts the due entries the run read (State.ListDue).
	Due int `json:"due"`
	// Lifted counts pauses whose paused_until had come.
	Lifted int `json:"lifted"`
	// Reticketed counts parked jobs that took new tickets (a pause held
	// them, or their slot passed while they waited).
	Reticketed int `json:"reticketed"`
	// Released counts parked jobs sent to the transport.
	Released int `json:"released"`
	// Held counts parked jobs of paused queues whose release came: they
	// wait for the queue's next release round, in line order.
	Held int `json:"held,omitempty"`
	// Busy counts queues another pass held (their lease was taken).
	Busy int `json:"busy,omitempty"`
	// Continued counts release rounds and due entries left for the next
	// run (a pass, or the run, used its budget).
	Continued int `json:"continued,omitempty"`
	// Occurrences counts the schedules' occurrences the run made into
	// jobs (schedules.go).
	Occurrences int `json:"occurrences,omitempty"`
	// Deferred counts queues this run did not reach before its deadline;
	// their entries stay due, earliest first, for the next run.
	Deferred int `json:"deferred,omitempty"`
	// Upgraded is what the run rewrote to bring a table from an older
	// schema to SchemaVersion (upgradeSchema); nil when there was nothing
	// to do.
	Upgraded *ReindexReport `json:"upgraded,omitempty"`
	// IndexBuilding: the due index is still being built (an upgrade that
	// added it), so the run read nothing of it; the next runs will.
	IndexBuilding bool `json:"index_building,omitempty"`
}

func (r *ResumeReport) add(o ResumeReport) {
	r.Lifted += o.Lifted
	r.Reticketed += o.Reticketed
	r.Released += o.Released
	r.Held += o.Held
	r.Busy += o.Busy
	r.Continued += o.Continued
}

// Resume is what the schedule calls, once a minute. It reads the due
// index (State.ListDue): up to ResumeBudget entries due by now, of every
// queue, earliest first. For each queue that has some, under the queue's
// resume lease, it lifts the pause whose paused_until came and starts its
// release round; runs a due round, which re-tickets the jobs the pause
// held in line order (job.Job.LineOrder) and sends them; releases parked
// jobs whose slot came within the transport's reach, with exact delays,
// and those whose message the transport refused; and hands on keys and
// running places whose holder's lease ran out. A queue with nothing due
// costs nothing: it is not read, written or measured. It goes on past a
// failing queue and returns the errors joined.
//
// A pass over a queue holds the queue's resume lease (State.Lease), so two
// passes (an overlapping run, the schedule's retry, an admin resume) never
// interleave on a queue: each would take its own ticket range for the
// same held jobs and win some of them, inverting their order. A round's
// pass re-tickets no more than ResumeBudget held jobs and leaves the
// round due for the next run; since a re-ticket takes a job out of the
// held ones for good (it keeps its line order should a pause hold it
// again), the next pass starts from the first job still held. Entries
// past the run's budget, or of queues the run's deadline left (Margin),
// stay due, earliest first.
//
// Queued and running jobs need no sweep: a queued job's message is sent
// before its record is written, and a running attempt's message stays with
// the transport until the attempt ends, coming back if its worker dies
// (Work recovers the attempt: recoverIfLost).
func (e *Engine) Resume(ctx context.Context) (rep ResumeReport, err error) {
	ctx, end := e.traceResume(ctx)
	defer func() { end(&rep, err) }()
	return e.resume(ctx)
}

func (e *Engine) resume(ctx context.Context) (ResumeReport, error) {
	var rep ResumeReport
	var errs []error
	up, err := e.upgradeSchema(ctx)
	if up != nil && up.Queues > 0 {
		rep.Upgraded = up
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("resume: %w", err))
	}
	now := e.now()
	due, err := e.state.ListDue(ctx, now, e.opts.ResumeBudget)
	if errors.Is(err, ErrIndexNotReady) {
		// A table upgraded with the due index, which DynamoDB still
		// builds: nothing of it can be read yet. What is due waits for
		// a later run; nothing is lost.
		e.log.InfoContext(ctx, "due index still being built: nothing due read this run")
		rep.IndexBuilding = true
		return rep, errors.Join(errs...)
	}
	if err != nil {
		return rep, errors.Join(append(errs, fmt.Errorf("resume: %w", err))...)
	}
	rep.Due = len(due)
	if len(due) == e.opts.ResumeBudget {
		rep.Continued++
	}
	// Queues in the order of their earliest entry.
	var names []string
	byQueue := map[string][]DueEntry{}
	var schedules []DueEntry
	for _, d := range due {
		if d.Kind == DueSchedule {
			schedules = append(schedules, d) // no queue pass: runSchedules
			continue
		}
		if byQueue[d.Queue] == nil {
			names = append(names, d.Queue)
		}
		byQueue[d.Queue] = append(byQueue[d.Queue], d)
	}
	holder := newHolder()
	for i, name := range names {
		if !e.fits(ctx, e.opts.RecordTimeout) {
			rep.Deferred = len(names) - i
			break
		}
		rep.Queues++
		rctx, end := e.traceRound(ctx, name)
		r, err := e.resumeQueue(rctx, name, byQueue[name], holder)
		end(r, err)
		rep.add(r)
		if err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, e.runSchedules(ctx, schedules, &rep)...)
	if e.opts.Figures {
		if err := e.figures(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

// figures reads every queue and reports its figures (Options.Figures),
// as long as the run's deadline allows.
func (e *Engine) figures(ctx context.Context) error {
	queues, err := e.state.ListQueues(ctx)
	if err != nil {
		return fmt.Errorf("resume: figures: %w", err)
	}
	first := 0
	if n := len(queues); n > 0 {
		// Rotate by the minute: with more queues than a run can read,
		// one late in the list is early in another run.
		first = int((e.now().Unix() / 60) % int64(n))
	}
	for i := range queues {
		q := queues[(first+i)%len(queues)]
		if !e.fits(ctx, e.opts.RecordTimeout) {
			return nil
		}
		now := e.now()
		fig := Figures{Waiting: waiting(q.State), Parked: -1, Lag: lag(q, now), Paused: q.State.Paused, Lanes: LaneFigures{Running: -1}}
		if n, err := e.state.CountJobs(ctx, q.Name, q.Gen, job.Parked); err == nil {
			fig.Parked = n
		}
		if lanes, err := e.Lanes(ctx, q); err == nil {
			fig.Lanes = lanes
		}
		e.observe(ctx, Event{Kind: EventFigures, Queue: q.Name, Figures: &fig})
	}
	return nil
}

// newHolder names one Resume run (or admin resume) as a lease holder.
func newHolder() string {
	return fmt.Sprintf("resume-%016x", rand.Uint64())
}

// leaseUntil is how long a pass holds a queue's lease: past ctx's deadline
// (after which nothing of the pass is written), plus a minute for clock
// differences; without a deadline, two minutes.
func (e *Engine) leaseUntil(ctx context.Context, now time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return now.Add(time.Until(d) + time.Minute)
	}
	return now.Add(2 * time.Minute)
}

// newRound is the cursor of a release round that starts at now: due at
// once, and kept due for a worker's lease, the longest a job that saw the
// queue paused may take to park (Options.Lease).
func (e *Engine) newRound(now time.Time) Cursor {
	return Cursor{Round: now, Until: now.Add(e.opts.Lease)}
}

// resumeQueue is one pass over a queue under its lease, acting on due, the
// queue's due entries.
func (e *Engine) resumeQueue(ctx context.Context, name string, due []DueEntry, holder string) (rep ResumeReport, err error) {
	now := e.now()
	cur, err := e.state.Lease(ctx, name, holder, e.leaseUntil(ctx, now), now)
	if errors.Is(err, ErrLeaseHeld) {
		rep.Busy++
		e.log.InfoContext(ctx, "resume pass skipped: another pass holds the queue", "queue", name)
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("resume %s: %w", name, err)
	}
	held := true
	defer func() {
		if !held {
			return
		}
		// Released on a context of its own: a pass cut short by its
		// deadline still leaves its cursor (or, failing that, the lease
		// expires at its until, and the round stays due as it was).
		rctx, cancel := e.recordContext(ctx)
		defer cancel()
		if rerr := e.state.ReleaseLease(rctx, name, holder, cur); rerr != nil {
			err = errors.Join(err, fmt.Errorf("resume %s: %w", name, rerr))
		}
	}()
	q, err := e.state.GetQueue(ctx, name)
	if errors.Is(err, ErrQueueNotFound) {
		// Deleted: what it left due goes with it.
		cur = Cursor{}
		return rep, e.forget(ctx, Queue{Name: name}, due)
	}
	if err != nil {
		return rep, fmt.Errorf("resume %s: %w", name, err)
	}
	if until := QueueDue(q.State); !until.IsZero() && !now.Before(until) {
		busy, err := e.liftPause(ctx, &q, holder, until, &cur, &rep, now)
		if busy {
			// Another pass took the lease between the release and
			// the take: it runs the round and lifts the pause.
			held = false
			rep.Busy++
			return rep, nil
		}
		if err != nil {
			return rep, err
		}
	}
	cur, err = e.actOnDue(ctx, &q, due, cur, &rep, now)
	return rep, err
}

// liftPause lifts q's pause, whose paused_until came, and starts its
// release round (*cur). The round is stored before the lift, so a pass
// after a crash here runs it as well. busy says another pass took the
// queue's lease meanwhile (restartRound): nothing was lifted. q is read
// again after the lift.
func (e *Engine) liftPause(ctx context.Context, q *Queue, holder string, until time.Time, cur *Cursor, rep *ResumeReport, now time.Time) (busy bool, _ error) {
	name := q.Name
	if err := e.restartRound(ctx, name, holder, e.newRound(now), now); err != nil {
		return errors.Is(err, ErrLeaseHeld), err
	}
	*cur = e.newRound(now)
	lifted, err := e.state.Unpause(ctx, name, until)
	if err != nil {
		return false, fmt.Errorf("resume %s: lift pause: %w", name, err)
	}
	if lifted {
		rep.Lifted++
		e.observe(ctx, Event{Kind: EventLifted, Queue: name})
		e.log.InfoContext(ctx, "pause lifted", "queue", name, "paused_until", until)
	}
	if *q, err = e.state.GetQueue(ctx, name); err != nil {
		return false, fmt.Errorf("resume %s: %w", name, err)
	}
	return false, nil
}

// actOnDue acts on q's due entries under the pass's lease: it runs the
// release round if one is due (cur), releases the parked jobs whose time
// came and looks at the lanes whose time came. It returns the cursor to
// leave with the lease.
func (e *Engine) actOnDue(ctx context.Context, q *Queue, due []DueEntry, cur Cursor, rep *ResumeReport, now time.Time) (Cursor, error) {
	var jobs []string
	var lanes []string
	for _, d := range due {
		switch d.Kind {
		case DueJob:
			jobs = append(jobs, d.ID)
		case DueLane:
			lanes = append(lanes, d.ID)
		}
	}
	var err error
	if q.State.Paused {
		// The unpause starts the next round; the jobs due now wait for
		// it (hold), as those a pause parks.
		cur = Cursor{}
	} else if !cur.Round.IsZero() && !now.Before(cur.Round) {
		if cur, err = e.round(ctx, q, rep, cur, now); err != nil {
			return cur, err
		}
	}
	if err := e.releaseDue(ctx, q, jobs, rep, now); err != nil {
		return cur, err
	}
	handed := 0
	for _, key := range lanes {
		n, err := e.reapLane(ctx, *q, key, now)
		handed += n
		if err != nil {
			return cur, err
		}
	}
	if rep.Reticketed > 0 {
		e.observe(ctx, Event{Kind: EventReticket, Queue: q.Name, Count: rep.Reticketed})
	}
	if rep.Released > 0 {
		e.observe(ctx, Event{Kind: EventRelease, Queue: q.Name, Count: rep.Released})
	}
	// Hand-offs observe their own releases (wake).
	rep.Released += handed
	if *rep != (ResumeReport{}) {
		e.log.InfoContext(ctx, "resumed", "queue", q.Name, "reticketed", rep.Reticketed, "released", rep.Released, "held", rep.Held, "continued", rep.Continued)
	}
	return cur, nil
}

// restartRound stores c with holder's lease of queue, and takes the lease
// again: whatever pass comes next runs the round.
func (e *Engine) restartRound(ctx context.Context, queue, holder string, c Cursor, now time.Time) error {
	if err := e.state.ReleaseLease(ctx, queue, holder, c); err != nil {
		return fmt.Errorf("resume %s: %w", queue, err)
	}
	if _, err := e.state.Lease(ctx, queue, holder, e.leaseUntil(ctx, now), now); err != nil {
		return fmt.Errorf("resume %s: %w", queue, err)
	}
	return nil
}

// round is one pass of q's release round: up to ResumeBudget of the jobs
// the pause held take new tickets together, in line order, and those
// within the transport's reach are sent (the others park till their
// slot comes). It returns the cursor to leave: the round due again at
// once when the pass used its budget, or while it is kept (Cursor.Until);
// none after.
func (e *Engine) round(ctx context.Context, q *Queue, rep *ResumeReport, cur Cursor, now time.Time) (Cursor, error) {
	held, err := e.state.ListHeld(ctx, q.Name, q.Gen, e.opts.ResumeBudget)
	if err != nil {
		return cur, fmt.Errorf("resume %s: %w", q.Name, err)
	}
	stale := make([]*job.Job, len(held))
	for i := range held {
		stale[i] = &held[i]
	}
	if err := e.reticketAll(ctx, q, stale, rep); err != nil {
		return cur, err
	}
	switch {
	case len(held) == e.opts.ResumeBudget:
		rep.Continued++
		cur.Round = now
	case now.Before(cur.Until):
		cur.Round = now
	default:
		cur = Cursor{}
	}
	return cur, nil
}

// reticketAll gives stale parked jobs (in order) new tickets together, so
// they keep their relative order, places them, sends those within reach
// and writes every record.
func (e *Engine) reticketAll(ctx context.Context, q *Queue, stale []*job.Job, rep *ResumeReport) error {
	// A ticket a purge covered is cancelled, not given a new one: the
	// purge's own listing may have missed its job (parked just then), and
	// a new ticket would let it start after the purge returned.
	live := stale[:0]
	for _, j := range stale {
		if j.Ticket > q.State.Purged {
			live = append(live, j)
			continue
		}
		if err := e.cancel(ctx, q.Config, *j); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("resume %s: cancel purged %s: %w", q.Name, j.ID, err)
		}
		e.takeOffLanes(ctx, *q, *j)
	}
	stale = live
	if len(stale) == 0 {
		return nil
	}
	from := make([]job.Version, len(stale))
	orig := make([]job.Job, len(stale))
	for i, j := range stale {
		from[i], orig[i] = j.Version(), *j
	}
	if err := e.assign(ctx, q, stale); err != nil {
		return fmt.Errorf("resume %s: re-ticket: %w", q.Name, err)
	}
	// A purge that landed since the jobs were read covers their old
	// tickets up to the Purged the take answered: those are cancelled,
	// not carried past it (their new tickets stay unused).
	kept, keptFrom := stale[:0], from[:0]
	for i, j := range stale {
		if from[i].Ticket > q.State.Purged {
			kept, keptFrom = append(kept, j), append(keptFrom, from[i])
			continue
		}
		*j = orig[i]
		if err := e.cancelPurged(ctx, *q, orig[i]); err != nil {
			return fmt.Errorf("resume %s: %w", q.Name, err)
		}
	}
	stale, from = kept, keptFrom
	for i, j := range stale {
		j.Retickets++
		j.Record(job.Event{At: e.now(), Kind: job.Reticketed, OldTicket: from[i].Ticket, Ticket: j.Ticket})
		e.place(j, q.State)
	}
	if err := e.releaseAll(ctx, q.Name, stale, from); err != nil {
		return err
	}
	if n := e.expireIfDead(ctx, q.Name, q.Gen, stale); n > 0 {
		// Deleted during the pass: the jobs it parked again went with it.
		e.log.InfoContext(ctx, "queue deleted during the resume pass; its jobs parked again expired", "queue", q.Name, "gen", q.Gen, "jobs", n)
	}
	rep.Reticketed += len(stale)
	for _, j := range stale {
		if j.Status == job.Queued {
			rep.Released++
		}
	}
	return nil
}

// releaseDue acts on q's parked jobs of ids whose DueAt came: on a paused
// queue they are held for its next round; a job whose slot passed (or
// whose ticket the queue passed) takes a new ticket; one whose slot is
// within the transport's reach is sent; one still out of reach (its
// message was refused long before its slot) parks again till it comes.
// A job parked on a lane is checked against its lane (checkListed). A record that moved on since its entry was read is
// left alone: its entry moved with it.
func (e *Engine) releaseDue(ctx context.Context, q *Queue, ids []string, rep *ResumeReport, now time.Time) error {
	var stale, due, later, gate []*job.Job
	for _, id := range ids {
		j, err := e.state.GetJob(ctx, job.Ref{Queue: q.Name, ID: id})
		if errors.Is(err, ErrJobNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("resume %s: %w", q.Name, err)
		}
		at := JobDue(j)
		switch {
		case at.IsZero() || at.After(now):
			// Moved on since the index was read.
		case j.Gen != q.Gen:
			// A deleted queue's: it expires.
			if err := e.cancel(ctx, q.Config, j); err != nil && !errors.Is(err, ErrConflict) {
				return fmt.Errorf("resume %s: %w", q.Name, err)
			}
		case j.ParkReason.Waits():
			if err := e.checkListed(ctx, *q, j, now); err != nil {
				return err
			}
		case q.State.Paused:
			from := j.Version()
			j.ParkReason, j.DueAt = job.PausedQueue, time.Time{}
			j.Record(job.Event{At: now, Kind: job.ParkedEvent, Reason: string(job.PausedQueue)})
			if err := e.state.UpdateJob(ctx, j, from); err != nil && !errors.Is(err, ErrConflict) {
				return fmt.Errorf("resume %s: hold %s: %w", q.Name, j.ID, err)
			}
			rep.Held++
		case j.ParkReason == job.WaitGate && !(j.Ticket <= q.State.Current && !j.Scheduled && !j.Detached):
			// Its gate opens a transport's reach after its due time:
			// sent once, to arrive then, its slot kept.
			gate = append(gate, &j)
		case j.Ticket <= q.State.Current && !j.Scheduled && !j.Detached || j.SlotAt.Before(now) && !j.Detached:
			stale = append(stale, &j)
		case !j.SlotAt.After(now.Add(e.transport.MaxDelay())):
			due = append(due, &j)
		default:
			later = append(later, &j)
		}
	}
	slices.SortFunc(stale, func(a, b *job.Job) int { return cmp.Compare(a.LineOrder(), b.LineOrder()) })
	if err := e.reticketAll(ctx, q, stale, rep); err != nil {
		return err
	}
	dueFrom := make([]job.Version, len(due))
	for i, j := range due {
		dueFrom[i] = j.Version()
		j.Status, j.ParkReason, j.DueAt = job.Queued, "", time.Time{}
	}
	if err := e.releaseAll(ctx, q.Name, due, dueFrom); err != nil {
		return err
	}
	if err := e.releaseToGate(ctx, q.Name, gate); err != nil {
		return err
	}
	for _, j := range gate {
		if j.Status == job.Queued {
			rep.Released++
		}
	}
	for _, j := range due {
		if j.Status == job.Queued {
			rep.Released++
		}
	}
	for _, j := range later {
		from := j.Version()
		j.ParkReason, j.DueAt = job.Far, j.SlotAt.Add(-e.transport.MaxDelay())
		if err := e.state.UpdateJob(ctx, *j, from); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("resume %s: park %s: %w", q.Name, j.ID, err)
		}
	}
	return nil
}

// forget removes the due entries a deleted queue left: its parked jobs
// expire (cancelled) and its lanes are deleted.
func (e *Engine) forget(ctx context.Context, q Queue, due []DueEntry) error {
	var errs []error
	for _, d := range due {
		switch d.Kind {
		case DueJob:
			j, err := e.state.GetJob(ctx, job.Ref{Queue: q.Name, ID: d.ID})
			if err == nil && !JobDue(j).IsZero() {
				err = e.cancel(ctx, q.Config, j)
			}
			if err != nil && !errors.Is(err, ErrJobNotFound) && !errors.Is(err, ErrConflict) {
				errs = append(errs, err)
			}
		case DueLane:
			l, err := e.state.GetLane(ctx, q.Name, d.ID)
			if err == nil && l.Version != 0 {
				_, err = e.state.PutLane(ctx, slot.Lane{Queue: l.Queue, Key: l.Key, Gen: l.Gen}, l.Version, -l.Pending)
			}
			if err != nil && !errors.Is(err, ErrConflict) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("resume %s (deleted): %w", q.Name, err)
	}
	return nil
}

// releaseToGate sends jobs parked until their gate opens (job.WaitGate),
// each to arrive a lead before its opening (DueAt + the transport's
// reach), and writes them queued; a job the transport refuses stays
// parked, as unsent. A record that moved meanwhile is left alone.
func (e *Engine) releaseToGate(ctx context.Context, queue string, jobs []*job.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	now := e.now()
	msgs := make([]Message, len(jobs))
	from := make([]job.Version, len(jobs))
	for i, j := range jobs {
		from[i] = j.Version()
		env := j.Envelope()
		env.SentAt = now
		msgs[i] = Message{Envelope: env, Delay: e.delayTo(j.DueAt.Add(e.transport.MaxDelay()), now)}
	}
	failed := map[int]bool{}
	if err := e.transport.Send(ctx, msgs); err != nil {
		var se *SendError
		if !errors.As(err, &se) {
			return fmt.Errorf("resume %s: send: %w", queue, err)
		}
		for i := range se.Failed {
			failed[i] = true
		}
	}
	for i, j := range jobs {
		if failed[i] {
			continue // still due: the next run sends it again
		}
		j.Status, j.ParkReason, j.DueAt = job.Queued, "", time.Time{}
		j.Record(job.Event{At: now, Kind: job.Released, Reason: string(job.WaitGate)})
		if err := e.state.UpdateJob(ctx, *j, from[i]); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("resume %s: release %s: %w", queue, j.ID, err)
		}
	}
	return nil
}

// releaseAll sends the messages of the queued jobs among jobs and then
// writes every record (jobs[i] was at from[i]). A record that moved
// meanwhile (cancelled) is left alone; its message is stale.
func (e *Engine) releaseAll(ctx context.Context, queue string, jobs []*job.Job, from []job.Version) error {
	e.sendQueued(ctx, jobs)
	now := e.now()
	for i, j := range jobs {
		if j.Version() == from[i] && j.ParkReason == job.Unsent {
			continue // not sent again and nothing changed: it stays parked
		}
		if j.Status == job.Queued {
			j.Record(job.Event{At: now, Kind: job.Released})
		}
		if err := e.state.UpdateJob(ctx, *j, from[i]); err != nil {
			if errors.Is(err, ErrConflict) {
				continue
			}
			return fmt.Errorf("resume %s: release %s: %w", queue, j.ID, err)
		}
	}
	return nil
}

// listAll lists every job of a queue (of its generation) and status, page
// by page.
func (e *Engine) listAll(ctx context.Context, q Queue, s job.Status) ([]job.Job, error) {
	var all []job.Job
	var after int64
	for {
		page, err := e.state.ListJobs(ctx, ListRequest{Queue: q.Name, Gen: q.Gen, Status: s, After: after, Limit: 500})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < 500 {
			return all, nil
		}
		after = page[len(page)-1].Ticket
	}
}

// ReindexReport says what Reindex rewrote.
type ReindexReport struct {
	Queues int `json:"queues"`
	// Jobs counts parked jobs rewritten; Lanes lanes with a holder or
	// waiters rewritten.
	Jobs  int `json:"jobs"`
	Lanes int `json:"lanes"`
	// TimedPauses counts queues paused with a paused_until, which Reindex
	// leaves alone (see Reindex).
	TimedPauses int `json:"timed_pauses,omitempty"`
}

// Reindex writes every record that may be due again, as it is, so that
// its store puts it in the due index: for a table whose records were
// written before the due index existed (an upgrade). It walks every queue:
// its parked jobs (each rewritten at its version: a job that moved meanwhile
// was written by a writer that indexed it) and its lanes with a holder or
// waiters (a compare-and-set at their version). It does not touch a
// queue's pause: a queue paused with a paused_until from before is counted
// in TimedPauses, and lifts when it is resumed or paused again by hand.
// It costs a read and a write per parked job and lane, once. The resume
// function does the same by itself, a page of queues a run, on a table
// whose schema mark is older than SchemaVersion (upgradeSchema).
func (e *Engine) Reindex(ctx context.Context) (ReindexReport, error) {
	var rep ReindexReport
	queues, err := e.state.ListQueues(ctx)
	if err != nil {
		return rep, fmt.Errorf("reindex: %w", err)
	}
	for _, q := range queues {
		if err := e.reindexQueue(ctx, q, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// reindexQueue rewrites q's parked jobs and busy lanes (Reindex) and
// counts them in rep.
func (e *Engine) reindexQueue(ctx context.Context, q Queue, rep *ReindexReport) error {
	rep.Queues++
	if q.State.Paused && !q.State.PausedUntil.IsZero() {
		rep.TimedPauses++
	}
	parked, err := e.listAll(ctx, q, job.Parked)
	if err != nil {
		return fmt.Errorf("reindex %s: %w", q.Name, err)
	}
	for _, j := range parked {
		if err := e.state.UpdateJob(ctx, j, j.Version()); err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrJobNotFound) {
			return fmt.Errorf("reindex %s: %w", q.Name, err)
		}
		rep.Jobs++
	}
	lanes, err := e.state.ListLanes(ctx, q.Name)
	if err != nil {
		return fmt.Errorf("reindex %s: %w", q.Name, err)
	}
	for _, l := range lanes {
		if l.Idle() {
			continue
		}
		if _, err := e.state.PutLane(ctx, l, l.Version, 0); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("reindex %s: key %s: %w", q.Name, l.Key, err)
		}
		rep.Lanes++
	}
	return nil
}
