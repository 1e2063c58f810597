package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/slotq/slotq/internal/job"
)

// ErrResultTooLarge is SetResult's answer for a result over job.MaxResult
// bytes: it is not stored (the job's record says how large it was, in
// ResultDropped), and the attempt's outcome is whatever the target
// returns.
var ErrResultTooLarge = fmt.Errorf("result over %d bytes", job.MaxResult)

// ErrNoAttempt is SetResult's answer on a context that is not a running
// attempt's (a handler called outside Work, in a test say).
var ErrNoAttempt = errors.New("no attempt on the context: the result has nowhere to go")

// resultKey is the context key of an attempt's result.
type resultKey struct{}

// result is where a running attempt's target puts its result. The last
// SetResult wins; once Work has read it (sealed), a target that outlived
// its timeout changes nothing.
type result struct {
	mu      sync.Mutex
	data    json.RawMessage
	dropped int
	sealed  bool
}

// SetResult records data, JSON, as the result of the attempt ctx belongs
// to (the context a Runner's Run is given): it is written on the job's
// record with the attempt's outcome, succeeded or failed for good, and
// returned by get (job.Job.Result). A retried attempt's result is not
// kept. The last call of an attempt wins.
//
// Targets call it: pkg/target's Go handlers through target.SetResult, the
// HTTP target with the response's status and body, the Lambda target with
// the function's response. A result over job.MaxResult bytes is not kept
// (ErrResultTooLarge; the record's ResultDropped says its size), nor one
// that is not JSON.
func SetResult(ctx context.Context, data json.RawMessage) error {
	r, ok := ctx.Value(resultKey{}).(*result)
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
	if len(data) > job.MaxResult {
		r.data, r.dropped = nil, len(data)
		return fmt.Errorf("set result: %d bytes: %w", len(data), ErrResultTooLarge)
	}
	r.data, r.dropped = append(json.RawMessage(nil), data...), 0
	return nil
}

// withResult returns ctx carrying a fresh result for one attempt.
func withResult(ctx context.Context) (context.Context, *result) {
	r := &result{}
	return context.WithValue(ctx, resultKey{}, r), r
}

// take seals r and returns what the attempt set.
func (r *result) take() (json.RawMessage, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sealed = true
	return r.data, r.dropped
}
