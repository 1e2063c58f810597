package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/slotq/slotq/pkg/engine"
	"github.com/slotq/slotq/pkg/job"
	"github.com/slotq/slotq/pkg/slot"
)

// Handler runs jobs of one kind.
type Handler interface {
	Handle(ctx context.Context, j *job.Job) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, j *job.Job) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, j *job.Job) error { return f(ctx, j) }

// ResultFunc is a handler that returns a result with its outcome, as a
// river worker records output: the value is JSON-encoded and kept on the
// job's record (job.Job.Result), returned by get and by a wait. It is
// kept when the attempt succeeds, and when it fails for good (a non-nil
// value); a nil value keeps none. A value over job.MaxResult is not kept
// (the record's ResultDropped says its size) and the outcome stands; a
// value json.Marshal refuses fails the attempt without retry, as the
// programming error it is.
type ResultFunc func(ctx context.Context, j *job.Job) (any, error)

// Handle calls f and records its result (SetResult).
func (f ResultFunc) Handle(ctx context.Context, j *job.Job) error {
	v, err := f(ctx, j)
	if v == nil {
		return err
	}
	if rerr := SetResult(ctx, v); rerr != nil && !errors.Is(rerr, engine.ErrResultTooLarge) && err == nil {
		return SkipRetry(rerr)
	}
	return err
}

// SetResult keeps v, JSON-encoded (a json.RawMessage as it is), as the
// result of the attempt ctx belongs to: the context a handler is given.
// It is written on the job's record with the attempt's outcome, at most
// job.MaxResult (32 KiB) of it: a larger one is not kept, the record's
// ResultDropped says its size, and SetResult answers an error wrapping
// engine.ErrResultTooLarge (the outcome is still the handler's). The
// last call of an attempt wins; a retried attempt's result is not kept.
// This is asynq's ResultWriter for slotq: a handler of the plain
// signature calls it, a ResultFunc returns its value instead.
func SetResult(ctx context.Context, v any) error {
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return fmt.Errorf("set result: %w", err)
		}
	}
	return engine.SetResult(ctx, b)
}

// SkipRetry wraps err so that the job fails now, without further attempts.
func SkipRetry(err error) error { return fmt.Errorf("%w: %w", engine.ErrSkipRetry, err) }

// Mux maps job kinds to handlers.
type Mux struct {
	mu sync.RWMutex
	h  map[string]Handler
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{h: map[string]Handler{}} }

// Handle registers h for kind. It panics if kind is empty or taken, as
// net/http does: a double registration is a programming error best seen at
// start-up.
func (m *Mux) Handle(kind string, h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if kind == "" || h == nil {
		panic("target: empty kind or nil handler")
	}
	if _, dup := m.h[kind]; dup {
		panic(fmt.Sprintf("target: kind %q registered twice", kind))
	}
	m.h[kind] = h
}

// HandleFunc registers f for kind.
func (m *Mux) HandleFunc(kind string, f func(ctx context.Context, j *job.Job) error) {
	m.Handle(kind, HandlerFunc(f))
}

// HandleResultFunc registers f, a handler that returns a result, for kind
// (see ResultFunc).
func (m *Mux) HandleResultFunc(kind string, f func(ctx context.Context, j *job.Job) (any, error)) {
	m.Handle(kind, ResultFunc(f))
}

// Has reports whether kind has a handler.
func (m *Mux) Has(kind string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.h[kind]
	return ok
}

// ErrUnknownKind: no handler is registered for the job's kind.
var ErrUnknownKind = errors.New("no handler for kind")

func (m *Mux) run(ctx context.Context, j *job.Job) error {
	m.mu.RLock()
	h, ok := m.h[j.Kind]
	m.mu.RUnlock()
	if !ok {
		return SkipRetry(fmt.Errorf("%w %q", ErrUnknownKind, j.Kind))
	}
	return h.Handle(ctx, j)
}

// Dispatcher routes each job to its target: kinds to Mux, http(s) URLs to
// HTTP, lambda: names and function ARNs to Lambda. It implements
// engine.Runner and engine.Kinds.
type Dispatcher struct {
	// Mux runs jobs by kind. Nil: jobs with a kind fail without retry.
	Mux *Mux
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
			return SkipRetry(fmt.Errorf("target %q: %w", j.Target, err))
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
			return SkipRetry(fmt.Errorf("%w %q", ErrUnknownKind, j.Kind))
		}
		return d.Mux.run(ctx, j)
	case strings.HasPrefix(j.Target, "http://"), strings.HasPrefix(j.Target, "https://"):
		return d.http().Post(ctx, j, cfg)
	case strings.HasPrefix(j.Target, "lambda:"), strings.HasPrefix(j.Target, "arn:aws:lambda:"):
		if d.Lambda == nil {
			return SkipRetry(fmt.Errorf("lambda target %q: no Lambda client configured", j.Target))
		}
		return d.Lambda.Invoke(ctx, j)
	}
	return SkipRetry(fmt.Errorf("job %s: no kind and unknown target %q", j.ID, j.Target))
}
