package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/pkg/api"
)

// BatchHandler runs the jobs of one kind that start together, in one
// call: the jobs of a queue's batch start (its batch_max), in slot
// order. It answers one error per job, in the same order, each read as
// a Handler's error would be: nil succeeded, SkipRetry fails the job
// now, RetryAfter slows the job's queue (or key) down and runs it again
// first after, any other error fails the attempt, which is retried.
// Each job keeps its own record, outcome and retries. A panic fails
// every job of the call; an answer of the wrong length fails every job
// without retry, as the programming error it is. ctx ends at
// the queue's target timeout, for the whole batch; SetBatchResult keeps
// a job's result.
type BatchHandler interface {
	HandleBatch(ctx context.Context, jobs []*api.Job) []error
}

// BatchHandlerFunc adapts a function to BatchHandler.
type BatchHandlerFunc func(ctx context.Context, jobs []*api.Job) []error

// HandleBatch calls f.
func (f BatchHandlerFunc) HandleBatch(ctx context.Context, jobs []*api.Job) []error {
	return f(ctx, jobs)
}

// HandleBatch registers h for kind: the jobs of kind that start together
// come to it in one call. A kind has one handler, of either shape: it
// panics if kind is empty or taken. A job of the kind that starts alone
// (a queue without batches) is a batch of one.
func (m *Mux) HandleBatch(kind string, h BatchHandler) {
	if h == nil {
		panic("target: empty kind or nil handler")
	}
	m.register(kind, h)
}

// HandleBatchFunc registers f, a batch handler, for kind.
func (m *Mux) HandleBatchFunc(kind string, f func(ctx context.Context, jobs []*api.Job) []error) {
	m.HandleBatch(kind, BatchHandlerFunc(f))
}

// batchKey is the context key of a batch call's results.
type batchKey struct{}

// batchResults is where a batch handler's SetBatchResult puts each job's
// result, until the call ends (sealed).
type batchResults struct {
	mu     sync.Mutex
	data   []json.RawMessage
	sealed bool
}

// SetBatchResult keeps v, JSON-encoded (a json.RawMessage as it is), as
// the result of jobs[i], the i-th job of the batch handler's call that
// ctx belongs to: the context the handler is given. It is SetResult for
// one job of a batch, with the same rules: kept with the job's outcome,
// succeeded or failed for good; over api.MaxResult not kept
// (ErrResultTooLarge, the record's ResultDropped says its size); the
// last call for a job wins.
func SetBatchResult(ctx context.Context, i int, v any) error {
	r, ok := ctx.Value(batchKey{}).(*batchResults)
	if !ok {
		return fmt.Errorf("set batch result: not a batch handler's context: %w", attempt.ErrNoAttempt)
	}
	b, err := encodeResult(v)
	if err != nil {
		return err
	}
	if !json.Valid(b) {
		return errors.New("set batch result: not JSON")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.sealed:
		return errors.New("set batch result: the call has ended")
	case i < 0 || i >= len(r.data):
		return fmt.Errorf("set batch result: job %d of a batch of %d", i, len(r.data))
	}
	r.data[i] = b
	if len(b) > api.MaxResult {
		return fmt.Errorf("set batch result: %d bytes: %w", len(b), ErrResultTooLarge)
	}
	return nil
}

// RunBatch runs one attempt of each job, as the worker runs a batch
// start: the jobs of each kind in one call, the kinds at once. A kind
// registered with HandleBatch gets its jobs in one call; a kind with a
// single-job Handler is called once per job, in the slice's order, one
// after another (a job whose turn comes after ctx ended is not called,
// and fails with ctx's cause); a kind without a handler fails without
// retry (ErrUnknownKind). errs[i] is jobs[i]'s outcome, and RunBatch
// sets each job's Result and ResultDropped to what its handler kept
// (none: nil and 0). A panic fails every job of the call it happened in.
// Tests of batch handlers call it with jobs of their making.
func (m *Mux) RunBatch(ctx context.Context, jobs []*api.Job) []error {
	errs := make([]error, len(jobs))
	var order []string
	byKind := map[string][]int{}
	for i, j := range jobs {
		j.Result, j.ResultDropped = nil, 0
		if _, seen := byKind[j.Kind]; !seen {
			order = append(order, j.Kind)
		}
		byKind[j.Kind] = append(byKind[j.Kind], i)
	}
	var wg sync.WaitGroup
	for _, kind := range order {
		idx := byKind[kind]
		m.mu.RLock()
		h, bh := m.h[kind], m.b[kind]
		m.mu.RUnlock()
		switch {
		case bh != nil:
			wg.Go(func() {
				for k, data := range callBatch(ctx, bh, jobs, idx, errs) {
					keep(jobs[idx[k]], data)
				}
			})
		case h != nil:
			wg.Go(func() { callEach(ctx, h, jobs, idx, errs) })
		default:
			for _, i := range idx {
				errs[i] = SkipRetry(fmt.Errorf("%w %q", ErrUnknownKind, kind))
			}
		}
	}
	wg.Wait()
	return errs
}

// callBatch calls bh once with the jobs at idx, puts its answers at the
// same places in errs, and returns the results it set, in idx's order.
func callBatch(ctx context.Context, bh BatchHandler, jobs []*api.Job, idx []int, errs []error) []json.RawMessage {
	call := make([]*api.Job, len(idx))
	for k, i := range idx {
		call[k] = jobs[i]
	}
	res := &batchResults{data: make([]json.RawMessage, len(idx))}
	got, err := guard(func() []error { return bh.HandleBatch(context.WithValue(ctx, batchKey{}, res), call) })
	if err == nil && len(got) != len(call) {
		err = SkipRetry(fmt.Errorf("batch handler answered %d errors for %d jobs", len(got), len(call)))
	}
	res.mu.Lock()
	res.sealed = true
	res.mu.Unlock()
	for k, i := range idx {
		if err != nil {
			errs[i] = err
		} else {
			errs[i] = got[k]
		}
	}
	return res.data
}

// callEach calls h once per job at idx, in order, each an attempt of its
// own (SetResult works as in Run).
func callEach(ctx context.Context, h Handler, jobs []*api.Job, idx []int, errs []error) {
	for _, i := range idx {
		if ctx.Err() != nil {
			errs[i] = fmt.Errorf("not called: the batch's time ran out: %w", context.Cause(ctx))
			continue
		}
		actx, res := attempt.New(ctx)
		got, err := guard(func() []error { return []error{h.Handle(actx, jobs[i])} })
		if err == nil {
			err = got[0]
		}
		errs[i] = err
		jobs[i].Result, jobs[i].ResultDropped = res.Take()
	}
}

// keep sets j's result to data, within api.MaxResult.
func keep(j *api.Job, data json.RawMessage) {
	switch {
	case len(data) == 0:
	case len(data) > api.MaxResult:
		j.ResultDropped = len(data)
	default:
		j.Result = data
	}
}

// guard calls f and turns a panic into an error, which fails every job
// of the call: its value and the start of its stack.
func guard(f func() []error) (errs []error, err error) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			if len(stack) > maxStack {
				stack = stack[:maxStack]
			}
			err = fmt.Errorf("panic: %v\n%s", v, stack)
		}
	}()
	return f(), nil
}

// maxStack bounds the stack a panic's error carries.
const maxStack = 2048
