package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Runner runs a job's target: a Go handler by kind, an HTTP endpoint or a
// Lambda function. internal/dispatch implements it.
type Runner interface {
	// Run runs one attempt. A returned error fails the attempt; wrap it
	// with SkipRetry (errors.Is) to fail the job without further attempts.
	Run(ctx context.Context, j *job.Job, cfg slot.Config) error
}

// Kinds is implemented by a Runner that can tell which job kinds it knows;
// Enqueue then refuses unknown kinds.
type Kinds interface {
	Has(kind string) bool
}

// Options configure an Engine. State and Transport are required.
type Options struct {
	State     State
	Transport Transport
	// Runner runs targets; required by Work.
	Runner Runner
	// Logger receives structured logs. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Defaults is the configuration of a queue created by its first
	// enqueue; zero fields take slot's defaults (interval 1s).
	Defaults slot.Config
	// NoAutoCreate makes Enqueue fail with ErrQueueNotFound for a queue
	// that was not created explicitly. Default false.
	NoAutoCreate bool
	// WorkerTimeout is the worker function's timeout (template.yaml's
	// WorkerFunction Timeout, SLOTQ_WORKER_TIMEOUT): no attempt outlives
	// it. It bounds a queue's target_timeout when a configuration is
	// checked (the target, the writes after it and Margin must fit in one
	// invocation) and sets the default Lease. Default 15m, Lambda's
	// longest.
	WorkerTimeout time.Duration
	// Lease is how long a running attempt may go without an outcome before
	// a new delivery of its message treats it as lost (its worker died)
	// and retries it. The transport's visibility timeout decides when that
	// delivery comes. Default WorkerTimeout plus a minute for clock
	// differences: an attempt cannot run longer than its invocation.
	Lease time.Duration
	// RecordTimeout bounds the writes after a target (recording its
	// outcome, or the retry). They run on a context of their own, which
	// the target cannot use up. Default 5s.
	RecordTimeout time.Duration
	// RecordGrace is how long after a message was sent Work waits for the
	// job's record to catch up with it (see Work). It must exceed the time
	// a writer takes from sending a message to writing its record,
	// retries included. Default 20s.
	RecordGrace time.Duration
	// ResumeBudget caps the held jobs one pass of a queue's release
	// round re-tickets; what is left is the next pass's, in line order.
	// Default 500.
	ResumeBudget int
	// MoveBudget caps the waiting jobs one configure writes to the
	// slots its new limits give them (moveAll), and those one resume pass
	// writes for a configure left unfinished: configure answers once it
	// wrote that many (or its context's deadline comes near: see
	// moveReserve), saying how many remain, and the resume function
	// moves the rest, MoveBudget a pass. Default DefaultMoveBudget.
	MoveBudget int
	// ResumeRead caps the due entries one Resume run reads
	// (State.ListDue, which pages through the index to fill it),
	// earliest first. The run acts on them most urgent first for as long
	// as its deadline allows; what it leaves is its backlog
	// (ResumeReport.Backlog), the next run's. Default DefaultResumeRead.
	ResumeRead int
	// ResumeConcurrency bounds a Resume run's work at once: the queues'
	// passes it runs together, and the calls on job records and sends of
	// messages its passes make together (reads of due jobs, releases in
	// batches of ReleaseBatch, each a send and its records' writes): at
	// DynamoDB's latencies a run's release rate grows with it
	// (docs/performance.md measures the default on the model of
	// DynamoDB). Default DefaultResumeConcurrency.
	ResumeConcurrency int
	// Figures makes each Resume run also read every queue and publish
	// its figures (EventFigures: waiting, parked, lag, lanes): a
	// ListQueues, and a count of parked jobs and a list of lanes per
	// queue, each run — a cost that grows with the number of queues,
	// which the due index otherwise spares an idle queue. Default false:
	// a run reads only what is due. The functions turn it on with
	// per-queue metrics (lambdafn), the local runtime always.
	Figures bool
	// Observer hears what Work and Resume did, for metrics. Default:
	// none.
	Observer Observer
	// Margin is the time Work keeps in hand before its context deadline:
	// a wait that would end later is handed back to the transport.
	// Default 2s.
	Margin time.Duration
	// Lead is how long before a start Work goes to the gate: it reads the
	// queue, passes the gate for the start (the gate reserves it), claims
	// the job and sleeps to the start, so the writes' latency makes no
	// start late. Messages are sent to arrive Lead before their slot. It
	// must cover those three calls at the store's p99: a worker whose
	// writes end more than the queue's skew after the start does not
	// start, and its job takes a new ticket (slot.Overslept). Default
	// slot.DefaultLead (2ms, the embedded store); the Lambda stack sets
	// SLOTQ_LEAD (template parameter SlotLead). Negative: 0.
	Lead time.Duration
	// MaxSendsBack bounds how many times in a row the worker sends one
	// job back to the transport without starting it (a hand-back, a
	// re-ticket, a come-again for a full key or list): the delivery that
	// finds the job sent back that often fails it (ErrSentBackTooOften)
	// instead of sending it round again. On Lambda such sends chain
	// invocations of the worker through its own queue (the worker runs
	// with RecursiveLoop: Allow); the bound keeps a job that cannot start
	// from circling for ever. Default DefaultMaxSendsBack.
	MaxSendsBack int
	// ScheduleLead is how long before its time a schedule's occurrence
	// is made into a job (schedules.go): at least the resume function's
	// period, plus room for a late or failed run, and at most the
	// transport's MaxDelay, so the job is sent at once with the delay
	// that lands it on its time. Default DefaultScheduleLead (2m, for the
	// stack's one-minute resume schedule).
	ScheduleLead time.Duration
	// Schedules keeps the queues' schedules. Default: State, if it
	// implements ScheduleState (both stores do); a wrapper of State
	// passes the store here. Without it the schedule operations fail
	// with ErrNoSchedules.
	Schedules ScheduleState
	// Tracer makes the engine's spans (trace.go): enqueue calls,
	// attempts, targets' calls, resume runs. Default nil: no span is
	// made, and a job's trace context only passes through to its target.
	// internal/tracing builds one from the OTEL_* variables.
	Tracer trace.TracerProvider
}

// Defaults of Options.
const (
	// DefaultRecordTimeout is Options.RecordTimeout's default.
	DefaultRecordTimeout = 5 * time.Second
	// DefaultMaxSendsBack is Options.MaxSendsBack's default: far more
	// than a job that can start ever needs (one hand-back per worker
	// timeout of a slot's wait, a re-ticket per late worker, a come-again
	// a second while a key's list is full, for minutes).
	DefaultMaxSendsBack = 500
	// DefaultMoveBudget is Options.MoveBudget's default: a few seconds
	// of single-item writes, well inside the admin function's minute.
	DefaultMoveBudget = 500
	// DefaultResumeRead is Options.ResumeRead's default: far more due
	// entries than a run of a minute can act on, so that the run sees
	// the most urgent of a backlog (an index's page holds thousands of
	// keys: a read of them all costs a few read units).
	DefaultResumeRead = 10000
	// DefaultResumeConcurrency is Options.ResumeConcurrency's default:
	// enough for a run to release well over 1,000 far-parked jobs a
	// second on AWS, few enough that the calls in flight stay within the
	// SDK's pooled connections.
	DefaultResumeConcurrency = 32
	// ReleaseBatch is how many due jobs a resume pass releases together:
	// one send (SQS's SendMessageBatch takes 10 entries), then their
	// records' writes, at once.
	ReleaseBatch = 10
	// DefaultMargin is Options.Margin's default.
	DefaultMargin = 2 * time.Second
	// MinWorkerTimeout is the shortest worker timeout that holds a
	// target of the default timeout (slot.DefaultTargetTimeout) with the
	// default RecordTimeout and Margin.
	MinWorkerTimeout = slot.DefaultTargetTimeout + DefaultRecordTimeout + DefaultMargin
)

// Engine runs slotq's use cases. It is safe for concurrent use.
//
// Engine is the public face; the work is done by role (design: an
// enqueuer, a worker, a resumer and an admin over shared parts, the keys'
// lanes and the waiting room), each a type of its own over the parts
// every role shares (core). Engine's methods delegate to them (api.go).
type Engine struct {
	*core
}

// core is what every role shares: the stores, the clock, the options,
// the log and the tracer, and the roles themselves, so that one role
// asks another for what is the other's (e.worker.reticket, e.room.bookNext).
type core struct {
	state     State
	transport Transport
	runner    Runner
	log       *slog.Logger
	now       func() time.Time
	defaults  slot.Config
	opts      Options
	// tracer makes spans; nil when Options.Tracer is.
	tracer trace.Tracer
	// schemaSeen is when this engine last saw the table's schema mark
	// asking for no rebuild (Unix ns; 0: never): rebuildDue reads it
	// again only schemaRecheck later.
	schemaSeen atomic.Int64

	enqueuer *enqueuer
	worker   *worker
	resumer  *resumer
	admin    *admin
	lanes    *keyLanes
	room     *waitingRoom
}

// enqueuer takes producers' jobs: tickets, slots, messages and records
// (enqueue.go, book.go).
type enqueuer struct{ *core }

// worker runs delivered messages through the gate to their targets and
// records what came of them (work.go, gate.go, start.go, outcome.go,
// recover.go, sendback.go, slowdown.go). configs keeps the queue it read
// last of each name (worker.configOf).
type worker struct {
	*core
	configs sync.Map
}

// resumer is the resume function's side: lifting pauses, releasing
// parked jobs, running schedules, rebuilding and redriving (resume.go,
// release.go, schedules_run.go, reindex.go, redrive.go, urgency.go).
type resumer struct{ *core }

// admin is what operators ask: queues, their configuration, pause,
// purge, delete, jobs, cancels, retries and schedules (admin.go,
// change.go, reslot.go, move.go, schedules.go, retry.go).
type admin struct{ *core }

// keyLanes keeps keys one (or as many as a key may run) at a time: the
// lanes, their hand-offs, the keys' meters and the reaping of lost
// holders (lane.go, handoff.go, keys.go, meter.go, reap.go).
type keyLanes struct{ *core }

// waitingRoom is the booking horizon of a bounded queue and the room
// its waiting jobs are booked from (waitroom.go, roomread.go).
type waitingRoom struct{ *core }

// New returns an Engine.
func New(o Options) *Engine {
	if o.State == nil || o.Transport == nil {
		panic("engine: State and Transport are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.WorkerTimeout == 0 {
		o.WorkerTimeout = 15 * time.Minute
	}
	if o.Lease == 0 {
		o.Lease = o.WorkerTimeout + time.Minute
	}
	if o.RecordTimeout == 0 {
		o.RecordTimeout = DefaultRecordTimeout
	}
	if o.RecordGrace == 0 {
		o.RecordGrace = 20 * time.Second
	}
	if o.ResumeBudget <= 0 {
		o.ResumeBudget = 500
	}
	if o.MoveBudget <= 0 {
		o.MoveBudget = DefaultMoveBudget
	}
	if o.ResumeRead <= 0 {
		o.ResumeRead = DefaultResumeRead
	}
	if o.ResumeConcurrency <= 0 {
		o.ResumeConcurrency = DefaultResumeConcurrency
	}
	if o.Margin == 0 {
		o.Margin = DefaultMargin
	}
	if o.Lead == 0 {
		o.Lead = slot.DefaultLead
	}
	o.Lead = max(0, o.Lead)
	if o.MaxSendsBack <= 0 {
		o.MaxSendsBack = DefaultMaxSendsBack
	}
	c := &core{
		state: o.State, transport: o.Transport, runner: o.Runner, log: o.Logger,
		now: o.Now, defaults: o.Defaults.WithDefaults(), opts: o,
	}
	if o.Tracer != nil {
		c.tracer = o.Tracer.Tracer(tracerName)
	}
	c.enqueuer, c.worker, c.resumer, c.admin = &enqueuer{c}, &worker{core: c}, &resumer{c}, &admin{c}
	c.lanes, c.room = &keyLanes{c}, &waitingRoom{c}
	return &Engine{core: c}
}

// fits reports whether d leaves Margin before ctx's deadline.
func (e *core) fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	if !ok {
		return true
	}
	return time.Until(deadline) > d+e.opts.Margin
}

// targetTimeout is how long a target of a queue configured with cfg may
// run: its target_timeout, cut to what one invocation can hold for a
// queue configured before the worker's timeout was lowered.
func (e *core) targetTimeout(cfg slot.Config) time.Duration {
	return max(time.Second, min(cfg.TargetTimeout, e.maxTargetTimeout()))
}

// maxTargetTimeout is the longest target_timeout that fits in one worker
// invocation next to the writes after the target and Margin.
func (e *core) maxTargetTimeout() time.Duration {
	return e.opts.WorkerTimeout - e.opts.RecordTimeout - e.opts.Margin
}

// settling is how a queue configured with cfg that turns gated at now
// is settled (slot.GateAll): a worker reads no sooner than a lead before
// its slot, so the booked starts whose slots lie up to a lead after now
// (and the hosts' skew) may have passed the gate by a read, and they
// have come by then at the latest; current counts those whose slots have
// come by now (a later one that had not passed yet passes the gate's
// write, after the settled last start).
func (c *core) settling(cfg slot.Config, now time.Time) slot.Settling {
	return slot.Settling{Now: now, By: now.Add(c.opts.Lead + cfg.Skew)}
}

// budget is the time a message needs after its slot wait: the target's
// timeout and the writes after it. Work passes the gate only when budget
// (and Margin) fits before its deadline, so whatever starts is recorded
// before Lambda stops the invocation.
func (e *core) budget(cfg slot.Config) time.Duration {
	return e.targetTimeout(cfg) + e.opts.RecordTimeout
}

// checkTargetTimeout refuses a target_timeout that cannot fit in one
// worker invocation.
func (e *core) checkTargetTimeout(cfg slot.Config) error {
	if limit := e.maxTargetTimeout(); cfg.TargetTimeout > limit {
		return input.Invalid("invalid_target_timeout", "target_timeout", fmt.Sprintf(
			"target_timeout %s does not fit in the worker's timeout %s: at most %s (%s are kept for recording the outcome)",
			cfg.TargetTimeout, e.opts.WorkerTimeout, limit, e.opts.RecordTimeout+e.opts.Margin))
	}
	return nil
}
