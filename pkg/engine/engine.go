package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/slotq/slotq/pkg/job"
	"github.com/slotq/slotq/pkg/slot"
)

// Runner runs a job's target: a Go handler by kind, an HTTP endpoint or a
// Lambda function. pkg/target implements it.
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

// ErrSkipRetry marks an attempt error that must not be retried.
var ErrSkipRetry = errors.New("skip retry")

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
	// Lease is how long a running attempt may go without an outcome before
	// a new delivery of its message treats it as lost (its worker died)
	// and retries it. Set it to the worker's timeout plus a margin; the
	// transport's visibility timeout decides when that delivery comes.
	// Default 16m: the longest Lambda run plus a minute.
	Lease time.Duration
	// RecordGrace is how long after a message was sent Work waits for the
	// job's record to catch up with it (see Work). It must exceed the time
	// a writer takes from sending a message to writing its record,
	// retries included. Default 20s.
	RecordGrace time.Duration
	// Margin is the time Work keeps in hand before its context deadline:
	// a wait that would end later is handed back to the transport.
	// Default 2s.
	Margin time.Duration
}

// Engine runs slotq's use cases. It is safe for concurrent use.
type Engine struct {
	state     State
	transport Transport
	runner    Runner
	log       *slog.Logger
	now       func() time.Time
	defaults  slot.Config
	opts      Options
}

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
	if o.Lease == 0 {
		o.Lease = 16 * time.Minute
	}
	if o.RecordGrace == 0 {
		o.RecordGrace = 20 * time.Second
	}
	if o.Margin == 0 {
		o.Margin = 2 * time.Second
	}
	return &Engine{
		state: o.State, transport: o.Transport, runner: o.Runner, log: o.Logger,
		now: o.Now, defaults: o.Defaults.WithDefaults(), opts: o,
	}
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fits reports whether a wait of d leaves Margin before ctx's deadline.
func (e *Engine) fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	if !ok {
		return true
	}
	return time.Until(deadline) > d+e.opts.Margin
}
