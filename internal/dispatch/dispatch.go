package dispatch

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/propagation"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/target"
)

// Dispatcher routes each job to its target: kinds to Mux, http(s) URLs to
// HTTP, lambda: names and function ARNs to Lambda. It implements
// engine.Runner, engine.BatchRunner (RunBatch, batch.go) and
// engine.Kinds.
type Dispatcher struct {
	// Mux runs jobs by kind. Nil: jobs with a kind fail without retry.
	Mux *target.Mux
	// HTTP runs http(s) targets. Nil: a default HTTP target.
	HTTP *HTTP
	// Lambda runs Lambda targets. Nil: such jobs fail without retry.
	Lambda *Lambda

	once sync.Once
}

var (
	_ engine.Runner      = (*Dispatcher)(nil)
	_ engine.BatchRunner = (*Dispatcher)(nil)
	_ engine.Kinds       = (*Dispatcher)(nil)
)

func (d *Dispatcher) http() *HTTP {
	d.once.Do(func() {
		if d.HTTP == nil {
			d.HTTP = &HTTP{}
		}
	})
	return d.HTTP
}

// Has reports whether kind has a handler. Without a Mux every kind is
// accepted: the enqueue side does not know the worker's handlers.
func (d *Dispatcher) Has(kind string) bool { return d.Mux == nil || d.Mux.Has(kind) }

// Run runs one attempt of j, bounded by the queue's target timeout
// whatever the target: Go handlers get it on their context as HTTP and
// Lambda targets do (the engine bounds every Runner the same way, and
// stops waiting for a handler that ignores it). A remote target the queue
// no longer allows (its configuration changed since enqueue) fails
// without retry.
func (d *Dispatcher) Run(ctx context.Context, j *job.Job, cfg slot.Config) error {
	v, err := d.route(j, cfg)
	if err != nil {
		return err
	}
	ctx, cancel := withTargetTimeout(ctx, cfg)
	defer cancel()
	switch v {
	case viaMux:
		return d.Mux.Run(ctx, j.API())
	case viaHTTP:
		return d.http().Post(ctx, j, cfg)
	default:
		return d.Lambda.Invoke(ctx, j)
	}
}

// via is the kind of target that runs a job.
type via int

const (
	viaMux via = iota
	viaHTTP
	viaLambda
)

// route says what runs j, or why nothing may: a kind without a Mux, a
// target the queue no longer allows, a Lambda target without a client
// and a target of no known form fail without retry.
func (d *Dispatcher) route(j *job.Job, cfg slot.Config) (via, error) {
	if j.Kind != "" {
		if d.Mux == nil {
			return 0, target.SkipRetry(fmt.Errorf("%w %q", target.ErrUnknownKind, j.Kind))
		}
		return viaMux, nil
	}
	if err := cfg.CheckTarget(j.Target); err != nil {
		return 0, target.SkipRetry(fmt.Errorf("target %q: %w", j.Target, err))
	}
	switch {
	case strings.HasPrefix(j.Target, "http://"), strings.HasPrefix(j.Target, "https://"):
		return viaHTTP, nil
	case strings.HasPrefix(j.Target, "lambda:"), strings.HasPrefix(j.Target, "arn:aws:lambda:"):
		if d.Lambda == nil {
			return 0, target.SkipRetry(fmt.Errorf("lambda target %q: no Lambda client configured", j.Target))
		}
		return viaLambda, nil
	}
	return 0, target.SkipRetry(fmt.Errorf("job %s: no kind and unknown target %q", j.ID, j.Target))
}

// withTargetTimeout bounds ctx by the queue's target timeout.
func withTargetTimeout(ctx context.Context, cfg slot.Config) (context.Context, context.CancelFunc) {
	if timeout := cfg.WithDefaults().TargetTimeout; timeout > 0 {
		return context.WithTimeout(ctx, timeout)
	}
	return ctx, func() {}
}

// w3c writes an attempt's trace context onto a target's request.
var w3c propagation.TraceContext
