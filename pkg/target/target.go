package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/pkg/api"
)

// Handler runs jobs of one kind. ctx ends at the queue's target
// timeout, and carries the attempt's trace context: with tracing on
// (docs/tracing.md), trace.SpanFromContext(ctx) is the span of the
// target's call, a child of the job's attempt in its producer's trace;
// with it off, the job's own context (j.TraceParent), if it has one.
type Handler interface {
	Handle(ctx context.Context, j *api.Job) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, j *api.Job) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, j *api.Job) error { return f(ctx, j) }

// ResultFunc is a handler that returns a result with its outcome, as a
// river worker records output: the value is JSON-encoded and kept on the
// job's record (api.Job.Result), returned by get and by a wait. It is
// kept when the attempt succeeds, and when it fails for good (a non-nil
// value); a nil value keeps none. A value over api.MaxResult is not kept
// (the record's ResultDropped says its size) and the outcome stands; a
// value json.Marshal refuses fails the attempt without retry, as the
// programming error it is.
type ResultFunc func(ctx context.Context, j *api.Job) (any, error)

// Handle calls f and records its result (SetResult).
func (f ResultFunc) Handle(ctx context.Context, j *api.Job) error {
	v, err := f(ctx, j)
	if v == nil {
		return err
	}
	if rerr := SetResult(ctx, v); rerr != nil && !errors.Is(rerr, ErrResultTooLarge) && err == nil {
		return SkipRetry(rerr)
	}
	return err
}

// SetResult keeps v, JSON-encoded (a json.RawMessage as it is), as the
// result of the attempt ctx belongs to: the context a handler is given.
// It is written on the job's record with the attempt's outcome, at most
// api.MaxResult (32 KiB) of it: a larger one is not kept, the record's
// ResultDropped says its size, and SetResult answers an error wrapping
// ErrResultTooLarge (the outcome is still the handler's). The
// last call of an attempt wins; a retried attempt's result is not kept.
// This is asynq's ResultWriter for slotq: a handler of the plain
// signature calls it, a ResultFunc returns its value instead.
//
// In a batch handler's call, whose one context serves many jobs, it
// keeps nothing and answers an error: SetBatchResult names the job.
func SetResult(ctx context.Context, v any) error {
	if _, ok := ctx.Value(batchKey{}).(*batchResults); ok {
		return errors.New("set result: a batch handler's context: use SetBatchResult")
	}
	b, err := encodeResult(v)
	if err != nil {
		return err
	}
	return attempt.SetResult(ctx, b)
}

// encodeResult is v as a result: JSON-encoded, a json.RawMessage as it is.
func encodeResult(v any) (json.RawMessage, error) {
	if b, ok := v.(json.RawMessage); ok {
		return b, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("set result: %w", err)
	}
	return b, nil
}

// SkipRetry wraps err so that the job fails now, without further attempts.
func SkipRetry(err error) error { return fmt.Errorf("%w: %w", ErrSkipRetry, err) }

// Mux maps job kinds to handlers: each kind to a Handler, or to a
// BatchHandler (HandleBatch).
type Mux struct {
	mu sync.RWMutex
	h  map[string]Handler
	b  map[string]BatchHandler
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{h: map[string]Handler{}, b: map[string]BatchHandler{}} }

// Handle registers h for kind. It panics if kind is empty or taken, as
// net/http does: a double registration is a programming error best seen at
// start-up.
func (m *Mux) Handle(kind string, h Handler) {
	if h == nil {
		panic("target: empty kind or nil handler")
	}
	m.register(kind, h)
}

// register registers h, a Handler or a BatchHandler, for kind.
func (m *Mux) register(kind string, h any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if kind == "" {
		panic("target: empty kind or nil handler")
	}
	_, dup := m.h[kind]
	_, dupBatch := m.b[kind]
	if dup || dupBatch {
		panic(fmt.Sprintf("target: kind %q registered twice", kind))
	}
	switch h := h.(type) {
	case Handler:
		m.h[kind] = h
	case BatchHandler:
		m.b[kind] = h
	}
}

// HandleFunc registers f for kind.
func (m *Mux) HandleFunc(kind string, f func(ctx context.Context, j *api.Job) error) {
	m.Handle(kind, HandlerFunc(f))
}

// HandleResultFunc registers f, a handler that returns a result, for kind
// (see ResultFunc).
func (m *Mux) HandleResultFunc(kind string, f func(ctx context.Context, j *api.Job) (any, error)) {
	m.Handle(kind, ResultFunc(f))
}

// Has reports whether kind has a handler.
func (m *Mux) Has(kind string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.h[kind]
	_, okBatch := m.b[kind]
	return ok || okBatch
}

// ErrUnknownKind: no handler is registered for the job's kind.
var ErrUnknownKind = errors.New("no handler for kind")

// Run runs j with the handler of its kind, as the worker does: a kind
// without a handler fails without retry (ErrUnknownKind). A kind
// registered with HandleBatch gets j as a batch of one, and the result
// it keeps for j is the attempt's. Tests of handlers call it with a job
// of their making.
func (m *Mux) Run(ctx context.Context, j *api.Job) error {
	m.mu.RLock()
	h, ok := m.h[j.Kind]
	bh, batch := m.b[j.Kind]
	m.mu.RUnlock()
	if batch {
		errs := make([]error, 1)
		if data := callBatch(ctx, bh, []*api.Job{j}, []int{0}, errs)[0]; data != nil {
			_ = attempt.SetResult(ctx, data) // over api.MaxResult, its size is kept
		}
		return errs[0]
	}
	if !ok {
		return SkipRetry(fmt.Errorf("%w %q", ErrUnknownKind, j.Kind))
	}
	return h.Handle(ctx, j)
}

// ErrResultTooLarge wraps SetResult's error for a result over
// api.MaxResult: it is not kept, and the outcome stands.
var ErrResultTooLarge = attempt.ErrResultTooLarge

// ErrSkipRetry is what SkipRetry wraps: errors.Is(err, ErrSkipRetry)
// tells an error that ends the job now.
var ErrSkipRetry = attempt.ErrSkipRetry

// RetryAfterError is a target's "slow down": see RetryAfter. Match it
// with errors.As.
type RetryAfterError = attempt.RetryAfterError

// RetryAfter returns the error of a handler whose downstream asks to be
// left alone for d (an API answered 429 Too Many Requests, say). The
// attempt is not a failed one: nothing more of the job's queue starts
// until d has passed (nothing more of its key, when the key has a limit
// of its own), and then this job runs again first. A queue's
// max_slow_downs bounds how often one job may be answered so; past it the
// job fails with this error. d of zero or less takes the queue's
// retry_after_default. A Go Lambda function that returns it unwrapped
// is read the same way by a Lambda target (docs/usage.md).
func RetryAfter(d time.Duration) error { return attempt.RetryAfter(d) }
