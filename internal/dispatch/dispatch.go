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
// engine.Runner and engine.Kinds.
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
	_ engine.Runner = (*Dispatcher)(nil)
	_ engine.Kinds  = (*Dispatcher)(nil)
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
	if j.Kind == "" {
		if err := cfg.CheckTarget(j.Target); err != nil {
			return target.SkipRetry(fmt.Errorf("target %q: %w", j.Target, err))
		}
	}
	if timeout := cfg.WithDefaults().TargetTimeout; timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	switch {
	case j.Kind != "":
		if d.Mux == nil {
			return target.SkipRetry(fmt.Errorf("%w %q", target.ErrUnknownKind, j.Kind))
		}
		return d.Mux.Run(ctx, j.API())
	case strings.HasPrefix(j.Target, "http://"), strings.HasPrefix(j.Target, "https://"):
		return d.http().Post(ctx, j, cfg)
	case strings.HasPrefix(j.Target, "lambda:"), strings.HasPrefix(j.Target, "arn:aws:lambda:"):
		if d.Lambda == nil {
			return target.SkipRetry(fmt.Errorf("lambda target %q: no Lambda client configured", j.Target))
		}
		return d.Lambda.Invoke(ctx, j)
	}
	return target.SkipRetry(fmt.Errorf("job %s: no kind and unknown target %q", j.ID, j.Target))
}

// w3c writes an attempt's trace context onto a target's request.
var w3c propagation.TraceContext
