package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Batches. On a queue that starts its jobs in batches
// (slot.Config.Batched) the take books one ticket and one slot a batch
// (slot.TakeBatch): every job of a batch carries that ticket and slot
// (job.Job.Batched), and its own message. The first of their deliveries
// to come leads the batch (BatchStore.LeadBatch): it alone goes to the
// gate, for the batch's one start; past it, it claims the other jobs of
// the batch still queued at the ticket (gather), calls their target once
// with all of them (runBatch), and records each job's outcome as if it
// had run alone: its retry, its dead letter, its slow-down. A delivery
// that finds its job claimed keeps its message as the attempt's
// watchdog, as any duplicate does; one that comes before the claim
// sends its message again, to come when the leader has had its time
// (memberWait after the slot, Envelope.Watch): still queued at the
// ticket then (the leader's list missed it, or the leader died before
// its claim), the job goes to the gate alone, where the batch's spent
// start sends it to a new ticket. Every claim is a compare-and-set on the job's record,
// so a job runs once however the deliveries race.

// BatchStore keeps who leads each batch of a queue that starts its jobs
// in batches, and finds a batch's jobs.
type BatchStore interface {
	// LeadBatch makes jobID the leader of batch b unless a job leads it
	// already, and returns the leader. The record may be dropped after
	// until.
	LeadBatch(ctx context.Context, b BatchRef, jobID string, until time.Time) (string, error)
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

// batchLeadTTL is how long a batch's leader is kept after its slot: long
// past any delivery of its jobs' messages at that ticket.
const batchLeadTTL = 24 * time.Hour

// memberWait is how long after a batch's slot a job the batch's leader
// did not claim waits before it goes to the gate alone: the leader
// claims the batch a lead before the slot, so by then it has, unless
// its list missed the job or it died.
const memberWait = time.Second

// gatherConcurrency bounds the claims a leader sends at once: a whole
// batch (slot.MaxBatchSize), so that gathering costs the leader about
// one write's time before its start.
const gatherConcurrency = 100

// batchOf is how the take books the line tickets of a queue under cfg
// (TakeRequest.Batch).
func (e *enqueuer) batchOf(cfg slot.Config) slot.Batch {
	return slot.Batch{Max: cfg.BatchMax, Wait: cfg.BatchWait}
}

// joinBatch decides, for a job of a batch, whether this delivery leads
// the batch (it goes on to the gate, and gathers the batch after its
// claim) or leaves it to the leader (its message comes again as the
// job's watch: see the note on batches above).
func (d *delivery) joinBatch(ctx context.Context) (next, error) {
	e, j := d.e, &d.j
	switch {
	case !j.Batched:
		return proceed, nil
	case d.env.Watch:
		return d.watchBatch(ctx)
	}
	leader, err := e.state.LeadBatch(ctx, batchOf(j), j.ID, j.SlotAt.Add(batchLeadTTL))
	if err != nil {
		return stop, fmt.Errorf("work %s: lead batch %d: %w", j.Ref(), j.Ticket, err)
	}
	if leader == j.ID {
		d.leads = true
		return proceed, nil
	}
	// The job's message comes again after the leader's time, as its
	// watch: by then the leader has claimed the job (the message is then
	// its attempt's watchdog, or stale), or missed it, and the job goes
	// to the gate alone. Sent rather than waited for here, so that this
	// worker goes on to its next message.
	env := d.env
	env.SentAt, env.Watch = e.now(), true
	wait := watchDelay(j.SlotAt.Add(memberWait).Sub(env.SentAt))
	if err := e.transport.Send(ctx, []Message{{Envelope: env, Delay: wait}}); err != nil {
		return stop, fmt.Errorf("work %s: watch batch %d: %w", j.Ref(), j.Ticket, err)
	}
	e.log.DebugContext(ctx, "batch led by another job", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "leader", leader)
	return stop, nil
}

// gatherLead is how much earlier than Lead a batch's leader goes to the
// gate: a lead more, for its claims of the batch's jobs (gather) before
// the start, which a worker later than the queue's skew gives up.
func (d *delivery) gatherLead() time.Duration {
	if d.leads {
		return d.e.opts.Lead
	}
	return 0
}

// watchDelay is the delay of a batch job's watch message, due in d:
// whole seconds, rounded up, so that a transport that rounds delays
// down (SQS's DelaySeconds) does not bring it before the leader's time.
func watchDelay(d time.Duration) time.Duration {
	return max(0, (d+time.Second-1)/time.Second*time.Second)
}

// watchBatch is the watch message of a job its batch's leader did not
// claim (joinBatch): the leader's list missed it, or the leader died
// before its claim, or its start was refused. The batch's start is the
// leader's, spent or to come, so the job does not go to the gate at its
// ticket (it would start beside the batch, a start of its own at the
// same moment): it takes a new ticket, as a job that missed its slot
// does (reticket, which cancels a job a purge covered).
func (d *delivery) watchBatch(ctx context.Context) (next, error) {
	if n, err := d.readQueue(ctx); n != proceed {
		return n, err
	}
	e, j := d.e, &d.j
	e.log.InfoContext(ctx, "batch went without this job: new ticket", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket)
	return stop, e.reticket(ctx, &d.q, j, lateBy(max(0, e.now().Sub(j.SlotAt))))
}

// gather claims, for the leader of a batch whose start passed the gate,
// the batch's other jobs still queued at its ticket, at the start the
// gate reserved: they run in the leader's call (runBatch). A job whose
// claim fails moved on meanwhile (a cancel, its own delivery) and is
// left alone; a job the list missed goes to the gate alone later.
func (d *delivery) gather(ctx context.Context) {
	e, j := d.e, &d.j
	if !d.leads {
		return
	}
	jobs, err := e.state.ListBatch(ctx, batchOf(j), d.q.Config.BatchMax)
	if err != nil {
		e.log.WarnContext(ctx, "batch not gathered: its jobs go to the gate alone", "queue", j.Queue, "ticket", j.Ticket, "error", err.Error())
		return
	}
	at := d.gr.Start()
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, gatherConcurrency)
	for _, m := range jobs {
		want := job.Version{Status: job.Queued, Ticket: j.Ticket, Attempt: m.Attempt, Gen: j.Gen}
		if m.ID == j.ID || !m.Batched || m.Version() != want {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := e.state.UpdateJob(ctx, *started(&m, at), want); err != nil {
				if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrJobNotFound) {
					e.log.WarnContext(ctx, "batch job not claimed: it goes to the gate alone", "queue", j.Queue, "job_id", m.ID, "error", err.Error())
				}
				return
			}
			md := &delivery{e: e, env: m.Envelope(), j: m, want: want, q: d.q, queueRead: true,
				gr: d.gr, st: d.st, admitted: d.admitted, alone: d.alone, now: d.now, at: d.at}
			mu.Lock()
			d.members = append(d.members, md)
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// giveUpMembers gives up the start of the jobs the leader claimed, when
// the leader's worker woke too late for it: each takes a new ticket, as
// a job that missed its slot (reticket), since no worker of its own
// would take it to the gate again at its ticket.
func (d *delivery) giveUpMembers(ctx context.Context) {
	e := d.e
	rctx, cancel := e.recordContext(ctx)
	defer cancel()
	late := max(0, e.now().Sub(d.gr.Start()))
	for _, m := range d.members {
		j := &m.j
		unstarted(j)
		q := d.q
		if err := e.reticket(rctx, &q, j, lateBy(late)); err != nil {
			e.log.WarnContext(ctx, "batch job's missed start not recorded: retried when its lease ends", "queue", j.Queue, "job_id", j.ID, "error", err.Error())
		}
	}
	d.members = nil
}

// batchJobs is how many jobs the delivery's start carries, for a job
// of a batch (Event.Jobs): itself and the jobs it gathered; 0 else.
func (d *delivery) batchJobs() int {
	if !d.j.Batched {
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
