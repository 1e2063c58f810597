package target_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// A mixed batch: a batch handler's kind gets its jobs in one call, in
// the slice's order; a single-job handler's kind is called once per job,
// in order; a kind without a handler fails without retry. Each job's
// answer and result land at its own place.
func TestRunBatchOneCallPerKind(t *testing.T) {
	mux := target.NewMux()
	var mu sync.Mutex
	var calls [][]string
	var singles []string
	mux.HandleBatchFunc("index", func(ctx context.Context, jobs []*api.Job) []error {
		var ids []string
		errs := make([]error, len(jobs))
		for i, j := range jobs {
			ids = append(ids, j.ID)
			switch j.ID {
			case "i2":
				errs[i] = errors.New("upstream 500")
			case "i3":
				errs[i] = target.SkipRetry(errors.New("bad record"))
			case "i4":
				errs[i] = target.RetryAfter(2 * time.Second)
			}
			if err := target.SetBatchResult(ctx, i, map[string]string{"indexed": j.ID}); err != nil {
				t.Errorf("SetBatchResult(%d): %v", i, err)
			}
		}
		mu.Lock()
		calls = append(calls, ids)
		mu.Unlock()
		return errs
	})
	mux.HandleFunc("mail", func(ctx context.Context, j *api.Job) error {
		mu.Lock()
		singles = append(singles, j.ID)
		mu.Unlock()
		return target.SetResult(ctx, "sent "+j.ID)
	})
	jobs := []*api.Job{
		{ID: "i1", Kind: "index"}, {ID: "m1", Kind: "mail"}, {ID: "i2", Kind: "index"},
		{ID: "m2", Kind: "mail"}, {ID: "u1", Kind: "nope"}, {ID: "i3", Kind: "index"},
		{ID: "i4", Kind: "index", Result: json.RawMessage(`"stale"`)},
	}
	errs := mux.RunBatch(context.Background(), jobs)
	if len(calls) != 1 || strings.Join(calls[0], ",") != "i1,i2,i3,i4" {
		t.Errorf("batch handler calls %v; want one call with i1,i2,i3,i4", calls)
	}
	if strings.Join(singles, ",") != "m1,m2" {
		t.Errorf("single handler called for %v; want m1 then m2", singles)
	}
	var ra *target.RetryAfterError
	for i, ok := range []bool{
		errs[0] == nil, errs[1] == nil, errs[2] != nil && !errors.Is(errs[2], target.ErrSkipRetry),
		errs[3] == nil, errors.Is(errs[4], target.ErrUnknownKind) && errors.Is(errs[4], target.ErrSkipRetry),
		errors.Is(errs[5], target.ErrSkipRetry), errors.As(errs[6], &ra) && ra.Wait == 2*time.Second,
	} {
		if !ok {
			t.Errorf("job %s: %v", jobs[i].ID, errs[i])
		}
	}
	for i, want := range []string{`{"indexed":"i1"}`, `"sent m1"`, `{"indexed":"i2"}`, `"sent m2"`, ``, `{"indexed":"i3"}`, `{"indexed":"i4"}`} {
		if string(jobs[i].Result) != want {
			t.Errorf("job %s: result %s, want %s", jobs[i].ID, jobs[i].Result, want)
		}
	}
}

// A panic fails every job of the call it happened in, and no other: a
// batch handler's panic fails its whole call, a single handler's its one
// job, and the jobs after it are still called.
func TestRunBatchPanic(t *testing.T) {
	mux := target.NewMux()
	mux.HandleBatchFunc("boom", func(ctx context.Context, jobs []*api.Job) []error {
		_ = target.SetBatchResult(ctx, 0, "before the panic")
		panic("index down")
	})
	var called []string
	mux.HandleFunc("one", func(_ context.Context, j *api.Job) error {
		called = append(called, j.ID)
		if j.ID == "o1" {
			panic("o1 broke")
		}
		return nil
	})
	jobs := []*api.Job{{ID: "b1", Kind: "boom"}, {ID: "o1", Kind: "one"}, {ID: "b2", Kind: "boom"}, {ID: "o2", Kind: "one"}}
	errs := mux.RunBatch(context.Background(), jobs)
	for i, want := range []string{"panic: index down", "panic: o1 broke", "panic: index down", ""} {
		if got := errString(errs[i]); want == "" && got != "" || !strings.HasPrefix(got, want) {
			t.Errorf("job %s: %q; want %q", jobs[i].ID, got, want)
		}
	}
	if strings.Join(called, ",") != "o1,o2" {
		t.Errorf("single handler called for %v; want o1 and o2 after its panic", called)
	}
	if string(jobs[0].Result) != `"before the panic"` {
		t.Errorf("b1: result %s; a result set before a panic is kept with the failure", jobs[0].Result)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A batch handler's answer of the wrong length fails every job of its
// call without retry; SetBatchResult refuses a job outside the batch, a
// value that is not JSON, and a call that ended; SetResult refuses a
// batch's context; a result over api.MaxResult is not kept and its size
// is.
func TestRunBatchMisuse(t *testing.T) {
	mux := target.NewMux()
	var late context.Context
	var setErrs []error
	mux.HandleBatchFunc("short", func(ctx context.Context, jobs []*api.Job) []error {
		late = ctx
		setErrs = []error{
			target.SetBatchResult(ctx, 2, 1),
			target.SetBatchResult(ctx, -1, 1),
			target.SetBatchResult(ctx, 0, json.RawMessage(`{nope`)),
			target.SetResult(ctx, 1),
			target.SetBatchResult(ctx, 1, strings.Repeat("x", api.MaxResult)),
		}
		return []error{nil}
	})
	jobs := []*api.Job{{ID: "s1", Kind: "short"}, {ID: "s2", Kind: "short"}}
	errs := mux.RunBatch(context.Background(), jobs)
	for i, err := range errs {
		if !errors.Is(err, target.ErrSkipRetry) || !strings.Contains(err.Error(), "answered 1 errors for 2 jobs") {
			t.Errorf("job %d: %v; want a skip-retry naming the lengths", i, err)
		}
	}
	for i, err := range setErrs[:4] {
		if err == nil {
			t.Errorf("misuse %d was accepted", i)
		}
	}
	if !errors.Is(setErrs[4], target.ErrResultTooLarge) || jobs[1].Result != nil || jobs[1].ResultDropped != api.MaxResult+2 {
		t.Errorf("too large: %v, result %d bytes, dropped %d", setErrs[4], len(jobs[1].Result), jobs[1].ResultDropped)
	}
	if err := target.SetBatchResult(late, 0, 1); err == nil {
		t.Error("SetBatchResult after the call ended was accepted")
	}
	if err := target.SetBatchResult(context.Background(), 0, 1); !errors.Is(err, attempt.ErrNoAttempt) {
		t.Errorf("SetBatchResult outside a batch: %v", err)
	}
}

// A kind registered with a batch handler runs alone as a batch of one
// (Run, as the worker runs a job without batches): its answer is the
// attempt's, and its result the attempt's result. A kind takes one
// handler, of either shape.
func TestRunOnBatchHandler(t *testing.T) {
	mux := target.NewMux()
	mux.HandleBatchFunc("index", func(ctx context.Context, jobs []*api.Job) []error {
		_ = target.SetBatchResult(ctx, 0, len(jobs))
		return []error{target.RetryAfter(time.Second)}
	})
	ctx, res := attempt.New(context.Background())
	err := mux.Run(ctx, &api.Job{ID: "a", Kind: "index"})
	var ra *target.RetryAfterError
	if data, _ := res.Take(); !errors.As(err, &ra) || string(data) != "1" {
		t.Errorf("Run = %v with result %s; want the batch of one's slow-down and result 1", err, data)
	}
	if !mux.Has("index") {
		t.Error("Has does not know a batch handler's kind")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a batch handler's kind again, as a single handler, did not panic")
		}
	}()
	mux.HandleFunc("index", func(context.Context, *api.Job) error { return nil })
}
