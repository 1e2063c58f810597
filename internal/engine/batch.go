package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// Batches. On a queue that starts its jobs in batches
// (slot.Config.Batched) the take books one ticket and one slot a batch
// (slot.TakeBatch). The job that opened the batch leads it: its message
// comes a lead before the slot, as any job's, and it alone goes to the
// gate, for the batch's one start; past it, it claims the batch's other
// jobs still queued at the ticket (gather), calls their target once with
// all of them (runBatch), and records each job's outcome as if it had
// run alone: its retry, its dead letter, its slow-down. The jobs that
// joined the batch (job.Job.Batched) are its members: their messages
// come memberWait after the slot, as their watch. By then the leader
// claimed the member (the message is its attempt's watchdog, as a
// duplicate's is, or stale), or missed it (the leader's list missed its
// record, the leader died before its claim, or its start was refused),
// and the member takes a new ticket rather than start beside its batch
// (watchBatch). Every claim is a compare-and-set on the job's record, so
// a job runs once however the deliveries race.

// BatchStore finds a batch's jobs, for a queue that starts its jobs in
// batches.
type BatchStore interface {
	// ListBatch returns up to limit jobs of batch b that are queued at
	// its ticket (job.Job.Batched). It may miss a job written just
	// before it (DynamoDB's index reads are eventually consistent).
	ListBatch(ctx context.Context, b BatchRef, limit int) ([]job.Job, error)
}

// BatchRef names one batch: its queue's generation and its ticket.
type BatchRef struct {
	Queue  string
	Gen    int64
	Ticket int64
}

// batchOf is the batch j belongs to.
func batchOf(j *job.Job) BatchRef { return BatchRef{Queue: j.Queue, Gen: j.Gen, Ticket: j.Ticket} }

// memberWait is how long after its batch's slot a member's message
// comes: the leader claims the batch before the slot, so by then it has,
// unless it missed the member.
const memberWait = time.Second

// batchBooking is how the take books the line tickets of a queue under
// cfg (TakeRequest.Batch): a batch an earlier take opened stops taking
// jobs when its leader lists it (the take's now is the clock plus a
// lead, the margin the leader's gather lead, and the leader goes to the
// gate a lead and its gather lead before the slot).
func (e *enqueuer) batchBooking(cfg slot.Config) slot.Batch {
	return slot.Batch{Max: cfg.BatchMax, Wait: cfg.BatchWait, Margin: e.opts.Lead}
}

// member reports whether j is a member of its batch: it joined a batch
// another job opened, and starts in that job's call (a job out of line,
// such as one a slow-down detached, starts alone).
func member(j *job.Job) bool { return j.Batched && !outOfLine(j) }

// messageDelay is the delay of j's message for a start at at: a lead
// before it, or, for a member of a batch, its watch's, memberWait after
// it (in whole seconds, rounded up, so that a transport that rounds
// delays down, as SQS's DelaySeconds does, does not bring it before the
// leader's time).
func (e *enqueuer) messageDelay(j *job.Job, at, now time.Time) time.Duration {
	if !member(j) {
		return e.delayTo(at, now)
	}
	d := at.Add(memberWait).Sub(now)
	return max(0, (d+time.Second-1)/time.Second*time.Second)
}

// joinBatch sends a member's delivery to its watch (watchBatch); any
// other goes on to the gate, where a batch's leader gathers its batch
// after its claim.
func (d *delivery) joinBatch(ctx context.Context) (next, error) {
	if !member(&d.j) {
		return proceed, nil
	}
	return d.watchBatch(ctx)
}

// leads reports whether the delivery's job leads a batch: a line job
// that opened its batch, on a queue that starts its jobs in batches, as
// its queue was read (or, before, as the worker last read it).
func (d *delivery) leads() bool {
	cfg, known := d.q.Config, d.queueRead
	if !known {
		cfg, known = d.e.configOf(d.j.Queue, d.j.Gen)
	}
	return known && cfg.Batched() && !d.j.Batched && !outOfLine(&d.j)
}

// batchList is a ListBatch's answer.
type batchList struct {
	jobs []job.Job
	err  error
}

// prelist starts, for a batch's leader on its way to the gate, the list
// of its batch (ListBatch), so that only the claims lie between the
// gate and the start (gather).
func (d *delivery) prelist(ctx context.Context) {
	if d.listed != nil || !d.leads() {
		return
	}
	b, limit := batchOf(&d.j), api.MaxBatchSize
	listed := make(chan batchList, 1)
	d.listed = listed
	go func() {
		jobs, err := d.e.state.ListBatch(ctx, b, limit)
		listed <- batchList{jobs, err}
	}()
}

// gatherLead is how much earlier than Lead the delivery goes to the
// gate: for a batch's leader a lead more, for its claims of the batch's
// jobs (gather) before the start, which a worker later than the queue's
// skew gives up (a host too busy for them takes the jobs it could not
// claim in time to new tickets: takeBack); 0 for any other.
func (d *delivery) gatherLead() time.Duration {
	if d.leads() {
		return d.e.opts.Lead
	}
	return 0
}

// watchBatch is a member's message, found queued at its batch's ticket:
// its batch's leader missed it. The batch's start is the leader's, spent
// or to come, so the job does not go to the gate at its ticket (it would
// start beside the batch, a start of its own at the same moment): it
// takes a new ticket, as a job that missed its slot does (reticket,
// which cancels a job a purge covered). A message that came early (a
// transport's delay cut to its longest) waits for the leader's time.
func (d *delivery) watchBatch(ctx context.Context) (next, error) {
	e, j := d.e, &d.j
	for at := j.SlotAt; ; {
		if err := clock.Sleep(ctx, at.Add(memberWait).Sub(e.now())); err != nil {
			return stop, fmt.Errorf("work %s: wait for batch %d: %w", j.Ref(), j.Ticket, err)
		}
		if n, err := d.readRecord(ctx); n != proceed {
			return n, err // claimed meanwhile, or moved on
		}
		if n, err := d.readQueue(ctx); n != proceed {
			return n, err
		}
		// A configure booked the batch again, later (Queue.SlotOf): its
		// leader starts it there, and the watch waits for that start,
		// here while the invocation has the time, else by coming again
		// (in hops of the transport's reach, for a start beyond it).
		due := d.q.SlotOf(*j)
		if !due.After(at) {
			break
		}
		at = due
		if wait := at.Add(memberWait).Sub(e.now()); !e.fits(ctx, wait+e.opts.RecordTimeout) {
			d.wake = earlierOf(at.Add(memberWait), e.now().Add(e.transport.MaxDelay()))
			return stop, d.handBack(ctx)
		}
	}
	e.log.InfoContext(ctx, "batch went without this job: new ticket", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket)
	return stop, e.reticket(ctx, &d.q, j, lateBy(max(0, e.now().Sub(j.SlotAt))))
}

// gather claims, for the leader of a batch whose start passed the gate,
// the batch's other jobs still queued at its ticket, at the start the
// gate reserved: they run in the leader's call (runBatch). The claims go
// at once, and the leader waits for them until that start: a claim that
// lands later takes its job back to a new ticket (takeBack) rather than
// make the whole batch miss its start. A job whose claim fails moved on
// meanwhile (a cancel, its own delivery) and is left alone; a job the
// list missed takes a new ticket by its watch.
func (d *delivery) gather(ctx context.Context) {
	e, j := d.e, &d.j
	if !d.leads() {
		return
	}
	d.prelist(ctx)
	listed := d.listed
	d.listed = nil // a leader that comes to the gate again lists again
	var l batchList
	select {
	case l = <-listed:
	case <-ctx.Done():
		l.err = context.Cause(ctx)
	}
	jobs, err := l.jobs, l.err
	if err != nil {
		e.log.WarnContext(ctx, "batch not gathered: its jobs take new tickets by their watch", "queue", j.Queue, "ticket", j.Ticket, "error", err.Error())
		return
	}
	at := d.gr.Start()
	// The claims' goroutines may outlive gather (takeBackLate): they
	// see the leader's delivery as it is now, a copy.
	tpl := delivery{e: e, q: d.q, queueRead: true, gr: d.gr, st: d.st, admitted: d.admitted, alone: d.alone, now: d.now, at: d.at}
	claimed := make(chan *delivery, len(jobs)) // nil: not claimed
	n := 0
	for _, m := range jobs {
		want := job.Version{Status: job.Queued, Ticket: j.Ticket, Attempt: m.Attempt, Gen: j.Gen}
		if m.ID == j.ID || !m.Batched || m.Version() != want {
			continue
		}
		n++
		go func() { claimed <- claimMember(ctx, tpl, m, want, at) }()
	}
	until := time.NewTimer(at.Sub(e.now()))
	defer until.Stop()
	for got := 0; got < n; got++ {
		select {
		case md := <-claimed:
			if md != nil {
				d.members = append(d.members, md)
			}
		case <-until.C:
			e.log.WarnContext(ctx, "batch gathered in part: the claims still on their way take their jobs to new tickets", "queue", j.Queue, "ticket", j.Ticket, "claimed", len(d.members), "pending", n-got)
			go takeBackLate(ctx, claimed, n-got)
			return
		}
	}
}

// claimMember claims m, a job of the batch whose leader's delivery tpl
// copies, queued at version want, at the start at, and returns its
// delivery (tpl's, with m's job); nil if the claim failed.
func claimMember(ctx context.Context, tpl delivery, m job.Job, want job.Version, at time.Time) *delivery {
	e := tpl.e
	if err := e.state.UpdateJob(ctx, *started(&m, at), want); err != nil {
		if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrJobNotFound) {
			e.log.WarnContext(ctx, "batch job not claimed: it takes a new ticket by its watch", "queue", m.Queue, "job_id", m.ID, "error", err.Error())
		}
		return nil
	}
	md := tpl
	md.env, md.j, md.want = m.Envelope(), m, want
	return &md
}

// takeBackLate takes the jobs of the n claims still on their way when
// the leader's start came, as they land, to new tickets (takeBack).
func takeBackLate(ctx context.Context, claimed <-chan *delivery, n int) {
	for range n {
		if md := <-claimed; md != nil {
			md.takeBack(ctx)
		}
	}
}

// giveUpMembers gives up the start of the jobs the leader claimed, when
// the leader's worker woke too late for it: each takes a new ticket
// (takeBack).
func (d *delivery) giveUpMembers(ctx context.Context) {
	for _, m := range d.members {
		m.takeBack(ctx)
	}
	d.members = nil
}

// takeBack moves d's job, which its batch's leader claimed and will not run,
// back from running to a new ticket, as a job that missed its slot
// (reticket): no worker of its own would take it to the gate again at
// its ticket. Refused, the job is retried when its lease ends, as any
// lost attempt.
func (d *delivery) takeBack(ctx context.Context) {
	e, j := d.e, &d.j
	rctx, cancel := e.recordContext(ctx)
	defer cancel()
	unstarted(j)
	q := d.q
	if err := e.reticket(rctx, &q, j, lateBy(max(0, e.now().Sub(d.gr.Start())))); err != nil {
		e.log.WarnContext(ctx, "batch job taken back: not recorded; retried when its lease ends", "queue", j.Queue, "job_id", j.ID, "error", err.Error())
	}
}

// batchJobs is how many jobs the delivery's start carries, for a
// batch's leader (Event.Jobs): itself and the jobs it gathered; 0 else.
func (d *delivery) batchJobs() int {
	if !d.leads() {
		return 0
	}
	return 1 + len(d.members)
}

// runBatch runs the leader's job and the jobs it gathered in one call of
// their target (BatchRunner, or one Run after the other for a Runner
// that runs jobs one at a time), and records each job's outcome as if it
// had run alone. A panic or the target timeout fails every job.
func (d *delivery) runBatch(ctx context.Context) error {
	e, q := d.e, d.q
	all := append([]*delivery{d}, d.members...)
	jobs := make([]*job.Job, len(all)) // the target's copies
	for i, m := range all {
		c := m.j
		jobs[i] = &c
	}
	var errs []error
	runErr := e.runTarget(ctx, q.Config, func() error { return d.begin(ctx) }, func(tctx context.Context) error {
		errs = e.callBatch(tctx, jobs, q.Config)
		return nil
	})
	if errors.Is(runErr, errOverslept) {
		d.giveUpMembers(ctx)
		_, err := d.giveUpStart(ctx, d.late)
		return err
	}
	if runErr == nil && len(errs) != len(all) {
		runErr = fmt.Errorf("batch runner answered %d outcomes for %d jobs", len(errs), len(all))
	}
	var out error
	for i, m := range all {
		err := runErr // the whole call's: a panic, the timeout
		if err == nil {
			err = errs[i]
			m.j.Result, m.j.ResultDropped = jobs[i].Result, jobs[i].ResultDropped
		}
		out = errors.Join(out, m.recordOutcome(ctx, err))
	}
	return out
}

// callBatch is the call of a batch's target: one per kind or target
// (BatchRunner), or each job's Run in turn.
func (e *worker) callBatch(ctx context.Context, jobs []*job.Job, cfg slot.Config) []error {
	if br, ok := e.runner.(BatchRunner); ok {
		return br.RunBatch(ctx, jobs, cfg)
	}
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		actx, res := attempt.New(ctx)
		errs[i] = e.runner.Run(actx, j, cfg)
		j.Result, j.ResultDropped = res.Take()
	}
	return errs
}
