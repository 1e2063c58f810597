// Package attempt is what a running attempt carries in its context and the
// errors that steer its outcome: the place a target puts its result
// (SetResult) and ErrSkipRetry. It is a leaf (the standard library and
// pkg/api only), so pkg/target, what a handler author imports, compiles
// none of the engine; the engine opens an attempt (New), the targets fill
// it, and the engine reads it when the attempt ends (Take).
package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/slotq/slotq/pkg/api"
)

// ErrSkipRetry marks an attempt error that must not be retried: the job
// fails now. pkg/target's SkipRetry wraps it.
var ErrSkipRetry = errors.New("skip retry")

// ErrResultTooLarge is SetResult's answer for a result over api.MaxResult
// bytes: it is not stored (the job's record says how large it was, in
// ResultDropped), and the attempt's outcome is whatever the target
// returns.
var ErrResultTooLarge = fmt.Errorf("result over %d bytes", api.MaxResult)

// ErrNoAttempt is SetResult's answer on a context that is not a running
// attempt's (a handler called outside the worker, in a test say).
var ErrNoAttempt = errors.New("no attempt on the context: the result has nowhere to go")

// resultKey is the context key of an attempt's result.
type resultKey struct{}

// Result is where a running attempt's target puts its result. The last
// SetResult wins; once the engine has taken it (sealed), a target that
// outlived its timeout changes nothing.
type Result struct {
	mu      sync.Mutex
	data    json.RawMessage
	dropped int
	sealed  bool
}

// New returns ctx carrying a fresh Result for one attempt.
func New(ctx context.Context) (context.Context, *Result) {
	r := &Result{}
	return context.WithValue(ctx, resultKey{}, r), r
}

// Take seals r and returns what the attempt set: the result, or the size
// of one that was too large to keep.
func (r *Result) Take() (data json.RawMessage, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sealed = true
	return r.data, r.dropped
}

// SetResult records data, JSON, as the result of the attempt ctx belongs
// to: it is written on the job's record with the attempt's outcome,
// succeeded or failed for good, and returned by get. A retried attempt's
// result is not kept. The last call of an attempt wins.
//
// Targets call it: pkg/target's Go handlers through target.SetResult, the
// HTTP target with the response's status and body, the Lambda target with
// the function's response. A result over api.MaxResult bytes is not kept
// (ErrResultTooLarge; the record's ResultDropped says its size), nor one
// that is not JSON.
func SetResult(ctx context.Context, data json.RawMessage) error {
	r, ok := ctx.Value(resultKey{}).(*Result)
	if !ok {
		return ErrNoAttempt
	}
	if !json.Valid(data) {
		return fmt.Errorf("set result: not JSON")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sealed {
		return fmt.Errorf("set result: the attempt has ended")
	}
	if len(data) > api.MaxResult {
		r.data, r.dropped = nil, len(data)
		return fmt.Errorf("set result: %d bytes: %w", len(data), ErrResultTooLarge)
	}
	r.data, r.dropped = append(json.RawMessage(nil), data...), 0
	return nil
}
