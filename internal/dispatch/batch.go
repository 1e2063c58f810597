package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// RunBatch runs one attempt of each job of a batch start
// (engine.BatchRunner): the jobs of each kind in one Mux.RunBatch, those
// of each HTTP target in one POST (HTTP.PostBatch),
// those of each Lambda function in one Invoke (Lambda.InvokeBatch), the
// calls at once. A job its queue no longer allows to run fails without
// retry, as in Run, and is in no call. The batch is bounded by the
// queue's target timeout as one job is; a call that has not answered
// when ctx ends (and a short grace after) is not waited for, and its
// jobs fail as a target that outlived its timeout does. errs[i] is
// jobs[i]'s outcome, and jobs[i].Result and ResultDropped its result.
func (d *Dispatcher) RunBatch(ctx context.Context, jobs []*job.Job, cfg slot.Config) []error {
	errs := make([]error, len(jobs))
	ctx, cancel := withTargetTimeout(ctx, cfg)
	defer cancel()
	var calls []*call
	byTarget := map[string]*call{}
	for i, j := range jobs {
		j.Result, j.ResultDropped = nil, 0
		v, err := d.route(j, cfg)
		if err != nil {
			errs[i] = err
			continue
		}
		key := "kind " + j.Kind
		switch v {
		case viaHTTP:
			key = "http " + j.Target
		case viaLambda:
			key = "lambda " + FunctionName(j.Target)
		}
		c := byTarget[key]
		if c == nil {
			c = &call{via: v}
			byTarget[key] = c
			calls = append(calls, c)
		}
		cp := *j
		c.jobs, c.idx = append(c.jobs, &cp), append(c.idx, i)
	}
	done := make(chan *call, len(calls))
	for _, c := range calls {
		go func() {
			c.errs, c.res = d.runCall(ctx, c, cfg)
			done <- c
		}()
	}
	ctxDone := ctx.Done()
	var grace <-chan time.Time
	for pending := len(calls); pending > 0; {
		select {
		case c := <-done:
			pending--
			c.answered = true
			for k, i := range c.idx {
				errs[i] = c.errs[k]
				jobs[i].Result, jobs[i].ResultDropped = c.res[k].data, c.res[k].dropped
			}
		case <-ctxDone:
			// A call that returns as the time runs out still reports its
			// own outcome (the engine's targetGrace, for a batch).
			ctxDone = nil
			t := time.NewTimer(batchGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			for _, c := range calls {
				if !c.answered {
					for _, i := range c.idx {
						errs[i] = fmt.Errorf("target did not return within its timeout: %w", context.Cause(ctx))
					}
				}
			}
			return errs
		}
	}
	return errs
}

// batchGrace is how long RunBatch waits for a call's answer after the
// batch's context ended.
const batchGrace = 20 * time.Millisecond

// call is one call of a batch: the jobs of one kind, of one HTTP target
// or of one Lambda function, as copies, and idx, their places in the
// batch.
type call struct {
	via      via
	jobs     []*job.Job
	idx      []int
	errs     []error
	res      []result
	answered bool
}

// result is a job's result as its record keeps it.
type result struct {
	data    json.RawMessage
	dropped int
}

// runCall makes call c and answers each of its jobs' outcome and result.
func (d *Dispatcher) runCall(ctx context.Context, c *call, cfg slot.Config) ([]error, []result) {
	switch c.via {
	case viaMux:
		as := make([]*api.Job, len(c.jobs))
		for k, j := range c.jobs {
			as[k] = j.API()
		}
		errs := d.Mux.RunBatch(ctx, as)
		res := make([]result, len(as))
		for k, a := range as {
			res[k] = result{a.Result, a.ResultDropped}
		}
		return errs, res
	case viaHTTP:
		errs, data := d.http().PostBatch(ctx, c.jobs, cfg)
		return errs, kept(data)
	default:
		errs, data := d.Lambda.InvokeBatch(ctx, c.jobs)
		return errs, kept(data)
	}
}

// kept is each of data as a job's record keeps a result, by the rules of
// an attempt's (attempt.SetResult): within job.MaxResult, else only its
// size.
func kept(data []json.RawMessage) []result {
	res := make([]result, len(data))
	for k, d := range data {
		if len(d) == 0 {
			continue
		}
		ctx, r := attempt.New(context.Background())
		_ = attempt.SetResult(ctx, d)
		res[k].data, res[k].dropped = r.Take()
	}
	return res
}

// BatchAnswer is a batch target's answer for one job of its batch: an
// HTTP target's answer body is a JSON array of them, a Lambda target's
// response their list (LambdaBatchResponse), one per job in the order of
// the request's jobs.
type BatchAnswer struct {
	// Status is "succeeded", "failed" or "slow_down"; anything else fails
	// the job's attempt.
	Status string `json:"status"`
	// Error says why the job failed or slowed down: its history keeps it.
	Error string `json:"error,omitempty"`
	// SkipRetry, with "failed", fails the job without further attempts.
	SkipRetry bool `json:"skip_retry,omitempty"`
	// RetryAfter, with "slow_down", is how long the target asks to be
	// left alone: Go's duration syntax ("2s", "1m30s") or a number of
	// seconds (2, "0.5"). None, or one unreadable, waits the queue's
	// retry_after_default.
	RetryAfter json.RawMessage `json:"retry_after,omitempty"`
	// Result is kept as the job's result (any JSON, at most api.MaxResult
	// bytes).
	Result json.RawMessage `json:"result,omitempty"`
}

// Batch answers' statuses.
const (
	BatchSucceeded = "succeeded"
	BatchFailed    = "failed"
	BatchSlowDown  = "slow_down"
)

// outcome is the attempt's error for answer a, from the target who.
func (a BatchAnswer) outcome(who string) error {
	msg := a.Error
	if msg == "" {
		msg = "no error given"
	}
	switch a.Status {
	case BatchSucceeded:
		return nil
	case BatchFailed:
		err := fmt.Errorf("%s: failed: %s", who, job.Cut(msg, maxAnswer))
		if a.SkipRetry {
			return target.SkipRetry(err)
		}
		return err
	case BatchSlowDown:
		return &attempt.RetryAfterError{Wait: batchWait(a.RetryAfter), Answer: who + ": slow_down: " + job.Cut(msg, maxAnswer)}
	}
	return fmt.Errorf("%s: answer's status %q is none of succeeded, failed, slow_down", who, job.Cut(a.Status, 100))
}

// batchWait reads a BatchAnswer's retry_after: 0 (the queue's default)
// when it is absent or unreadable, at most a day.
func batchWait(raw json.RawMessage) time.Duration {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return 0
	}
	var d time.Duration
	switch v := v.(type) {
	case float64:
		d, _ = attempt.ParseRetryAfter(strconv.FormatFloat(v, 'f', -1, 64))
	case string:
		var err error
		if d, err = time.ParseDuration(strings.TrimSpace(v)); err != nil {
			d, _ = attempt.ParseRetryAfter(v)
		}
	}
	return min(max(d, 0), maxRetryAfter)
}

// answers reads a batch's answers from data: a JSON array (or the
// LambdaBatchResponse's list) of exactly n of them.
func answers(data []byte, n int) ([]BatchAnswer, error) {
	var as []BatchAnswer
	if err := json.Unmarshal(data, &as); err != nil {
		return nil, fmt.Errorf("batch answer is not a JSON array of per-job answers: %w", err)
	}
	if len(as) != n {
		return nil, fmt.Errorf("batch answer has %d entries for %d jobs", len(as), n)
	}
	return as, nil
}

// perJob is each job's outcome and result by its answer.
func perJob(as []BatchAnswer, who string) ([]error, []json.RawMessage) {
	errs, res := make([]error, len(as)), make([]json.RawMessage, len(as))
	for k, a := range as {
		errs[k] = a.outcome(who)
		if !bytes.Equal(bytes.TrimSpace(a.Result), []byte("null")) {
			res[k] = a.Result
		}
	}
	return errs, res
}

// every is err and res for each of n jobs: a call whose whole answer
// decides every job's outcome.
func every(n int, err error, res json.RawMessage) ([]error, []json.RawMessage) {
	errs, data := make([]error, n), make([]json.RawMessage, n)
	for k := range n {
		errs[k], data[k] = err, res
	}
	return errs, data
}

// MaxBatchAnswer bounds an HTTP target's answer to a batch, per job of
// the batch: room for a result at api.MaxResult, escaped, and its error.
// A longer answer fails every job of the batch.
const MaxBatchAnswer = 2*api.MaxResult + 4<<10

// PostBatch sends one attempt of each of jobs, of one HTTP target, in one
// POST, for a queue configured by cfg. Its body is a JSON array of the
// jobs, each as a Lambda target's event (LambdaEvent: queue, job_id,
// ticket, attempt, slot_at, payload), since one request's headers cannot
// carry each job's; its headers are a single POST's but those of one
// job: Content-Type application/json, Slotq-Queue, Slotq-Batch (the
// number of jobs), traceparent and tracestate. A 2xx answer is a JSON
// array of BatchAnswer in the jobs' order, which gives each job its
// outcome and result; a 2xx that is not one (of the right length, within
// MaxBatchAnswer per job) fails every job, retried. Any other answer is
// every job's, as a single POST's would be (a 429, or a 503 with
// Retry-After, slows them down; a 4xx fails them without retry; ...),
// its status and body each job's result.
func (h *HTTP) PostBatch(ctx context.Context, jobs []*job.Job, cfg slot.Config) ([]error, []json.RawMessage) {
	n := len(jobs)
	evs := make([]LambdaEvent, n)
	for k, j := range jobs {
		evs[k] = lambdaEvent(ctx, j)
	}
	body, err := json.Marshal(evs)
	if err != nil {
		return every(n, target.SkipRetry(fmt.Errorf("http target: %w", err)), nil)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, jobs[0].Target, bytes.NewReader(body))
	if err != nil {
		return every(n, target.SkipRetry(fmt.Errorf("http target: %w", err)), nil)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Slotq-Queue", jobs[0].Queue)
	req.Header.Set("Slotq-Batch", strconv.Itoa(n))
	w3c.Inject(ctx, propagation.HeaderCarrier(req.Header))
	limit := int64(n) * MaxBatchAnswer
	resp, got, err := h.send(req, cfg, limit)
	if err != nil {
		return every(n, err, nil)
	}
	if err := answerError(resp, got); err != nil {
		return every(n, err, httpResult(resp, got))
	}
	if int64(len(got)) > limit {
		return every(n, fmt.Errorf("http target: %s: batch answer over %d bytes", resp.Status, limit), httpResult(resp, got))
	}
	as, err := answers(got, n)
	if err != nil {
		return every(n, fmt.Errorf("http target: %s: %w", resp.Status, err), httpResult(resp, got))
	}
	return perJob(as, "http target")
}

// LambdaBatchEvent is what a Lambda target receives for a batch: each
// job's single event (LambdaEvent), in slot order.
type LambdaBatchEvent struct {
	Jobs []LambdaEvent `json:"jobs"`
}

// LambdaBatchResponse is what a Lambda target answers a batch with: one
// BatchAnswer per job, in the event's order.
type LambdaBatchResponse struct {
	Results []BatchAnswer `json:"results"`
}

// InvokeBatch runs one attempt of each of jobs, of one function, in one
// Invoke whose event is a LambdaBatchEvent; the function answers a
// LambdaBatchResponse, which gives each job its outcome and result. A
// function error is every job's, as a single Invoke's would be (errorType
// RetryAfterError slows them down, any other fails them, retried); a
// response that is not a LambdaBatchResponse of the right length fails
// every job, retried, the response each job's result.
func (l *Lambda) InvokeBatch(ctx context.Context, jobs []*job.Job) ([]error, []json.RawMessage) {
	n := len(jobs)
	ev := LambdaBatchEvent{Jobs: make([]LambdaEvent, n)}
	for k, j := range jobs {
		ev.Jobs[k] = lambdaEvent(ctx, j)
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return every(n, target.SkipRetry(fmt.Errorf("lambda target: %w", err)), nil)
	}
	out, err := l.invoke(ctx, jobs[0].Target, payload)
	if err != nil {
		return every(n, err, nil)
	}
	who := "lambda target " + FunctionName(jobs[0].Target)
	var whole json.RawMessage
	if len(out.Payload) > 0 {
		whole = lambdaResult(out.Payload)
	}
	var resp struct {
		Results json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(out.Payload, &resp); err != nil || len(resp.Results) == 0 {
		err = errors.New(`batch response is not {"results": [...]}`)
		return every(n, fmt.Errorf("%s: %w", who, err), whole)
	}
	as, err := answers(resp.Results, n)
	if err != nil {
		return every(n, fmt.Errorf("%s: %w", who, err), whole)
	}
	return perJob(as, who)
}
