package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// batchLambda is a Lambda API that answers each Invoke with answer, and
// keeps every event it was given.
type batchLambda struct {
	mu     sync.Mutex
	events []*lambda.InvokeInput
	answer func(in *lambda.InvokeInput) *lambda.InvokeOutput
}

func (f *batchLambda) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	f.mu.Lock()
	f.events = append(f.events, in)
	f.mu.Unlock()
	return f.answer(in), nil
}

// succeedAll answers a batch event with "succeeded" for each job, its
// result the job's id.
func succeedAll(t *testing.T, body []byte, jobsOf func([]byte) ([]dispatch.LambdaEvent, error)) []dispatch.BatchAnswer {
	t.Helper()
	evs, err := jobsOf(body)
	if err != nil {
		t.Errorf("batch request %s: %v", body, err)
	}
	as := make([]dispatch.BatchAnswer, len(evs))
	for k, ev := range evs {
		as[k] = dispatch.BatchAnswer{Status: "succeeded", Result: json.RawMessage(`"` + ev.JobID + `"`)}
	}
	return as
}

func httpJobs(b []byte) (evs []dispatch.LambdaEvent, err error) { return evs, json.Unmarshal(b, &evs) }

func lambdaJobs(b []byte) ([]dispatch.LambdaEvent, error) {
	var ev dispatch.LambdaBatchEvent
	err := json.Unmarshal(b, &ev)
	return ev.Jobs, err
}

func ids(evs []dispatch.LambdaEvent) string {
	var s []string
	for _, ev := range evs {
		s = append(s, ev.JobID)
	}
	return strings.Join(s, ",")
}

// A mixed batch makes one call per kind or target, all at once (each
// call waits until the others have begun, so calls one after another
// would time out), each with its jobs in the batch's order; a job whose
// target the queue no longer allows is in no call and fails without
// retry; each job's outcome and result land at its place, a stale result
// of an earlier attempt cleared.
func TestRunBatchOneCallPerTarget(t *testing.T) {
	var began sync.WaitGroup
	began.Add(4) // /a, /b, the Lambda function, the batch handler
	allBegan := make(chan struct{})
	go func() { began.Wait(); close(allBegan) }()
	meet := func() {
		began.Done()
		select {
		case <-allBegan:
		case <-time.After(10 * time.Second):
			t.Error("a call waited 10s for the others: the calls are not made at once")
		}
	}
	var mu sync.Mutex
	posts := map[string][]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		evs, _ := httpJobs(body)
		mu.Lock()
		posts[r.URL.Path] = append(posts[r.URL.Path], ids(evs)+" batch="+r.Header.Get("Slotq-Batch")+" queue="+r.Header.Get("Slotq-Queue"))
		mu.Unlock()
		meet()
		_ = json.NewEncoder(w).Encode(succeedAll(t, body, httpJobs))
	}))
	defer srv.Close()
	fn := &batchLambda{answer: func(in *lambda.InvokeInput) *lambda.InvokeOutput {
		meet()
		b, _ := json.Marshal(dispatch.LambdaBatchResponse{Results: succeedAll(t, in.Payload, lambdaJobs)})
		return &lambda.InvokeOutput{StatusCode: 200, Payload: b}
	}}
	mux := target.NewMux()
	var batches []string
	mux.HandleBatchFunc("index", func(ctx context.Context, jobs []*api.Job) []error {
		var s []string
		for i, j := range jobs {
			s = append(s, j.ID)
			_ = target.SetBatchResult(ctx, i, "indexed "+j.ID)
		}
		mu.Lock()
		batches = append(batches, strings.Join(s, ","))
		mu.Unlock()
		meet()
		return make([]error, len(jobs))
	})
	var singles []string
	mux.HandleFunc("mail", func(_ context.Context, j *api.Job) error { singles = append(singles, j.ID); return nil })
	d := &dispatch.Dispatcher{Mux: mux, Lambda: &dispatch.Lambda{API: fn}}
	jobs := []*job.Job{
		{ID: "a1", Target: srv.URL + "/a"}, {ID: "k1", Kind: "index"}, {ID: "l1", Target: "lambda:mailer"},
		{ID: "b1", Target: srv.URL + "/b"}, {ID: "m1", Kind: "mail"}, {ID: "a2", Target: srv.URL + "/a", Result: json.RawMessage(`"stale"`)},
		{ID: "x1", Target: "https://other.example.com/hook"}, {ID: "l2", Target: "lambda:mailer"}, {ID: "k2", Kind: "index"},
		{ID: "m2", Kind: "mail"}, {ID: "a3", Target: srv.URL + "/a"},
	}
	for _, j := range jobs {
		j.Queue = "q"
	}
	errs := d.RunBatch(context.Background(), jobs, cfg)
	want := map[string]string{
		"/a": "a1,a2,a3 batch=3 queue=q",
		"/b": "b1 batch=1 queue=q",
	}
	for path, w := range want {
		if got := posts[path]; len(got) != 1 || got[0] != w {
			t.Errorf("POSTs to %s: %q; want one, %q", path, got, w)
		}
	}
	if len(fn.events) != 1 {
		t.Fatalf("%d Invokes; want one", len(fn.events))
	}
	if evs, _ := lambdaJobs(fn.events[0].Payload); ids(evs) != "l1,l2" || aws.ToString(fn.events[0].FunctionName) != "mailer" {
		t.Errorf("Invoke of %s with jobs %s; want mailer with l1,l2", aws.ToString(fn.events[0].FunctionName), ids(evs))
	}
	if strings.Join(batches, ";") != "k1,k2" || strings.Join(singles, ",") != "m1,m2" {
		t.Errorf("batch handler calls %q, single handler calls %q; want one call k1,k2 and m1 then m2", batches, singles)
	}
	for i, j := range jobs {
		want := map[string]string{"k1": `"indexed k1"`, "k2": `"indexed k2"`, "m1": ``, "m2": ``, "x1": ``}[j.ID]
		if _, ok := map[string]bool{"k1": true, "k2": true, "m1": true, "m2": true, "x1": true}[j.ID]; !ok {
			want = `"` + j.ID + `"`
		}
		if string(j.Result) != want {
			t.Errorf("%s: result %s, want %s", j.ID, j.Result, want)
		}
		if j.ID == "x1" {
			if !errors.Is(errs[i], attempt.ErrSkipRetry) {
				t.Errorf("x1, a target the queue does not allow: %v; want a skip-retry refusal", errs[i])
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("%s: %v", j.ID, errs[i])
		}
	}
}

// httpBatch serves one batch POST with status, headers and body, and
// returns what RunBatch made of it for jobs j1…jn.
func httpBatch(t *testing.T, n, status int, header map[string]string, body string) ([]*job.Job, []error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	var jobs []*job.Job
	for k := range n {
		jobs = append(jobs, &job.Job{Queue: "q", ID: fmt.Sprintf("j%d", k+1), Attempt: 1, Target: srv.URL + "/hook"})
	}
	return jobs, (&dispatch.Dispatcher{}).RunBatch(context.Background(), jobs, cfg)
}

// Each job of an HTTP batch takes the outcome and result its answer
// gives: succeeded, failed (retried, or not with skip_retry), slowed
// down for the time it asks (Go's duration syntax or seconds; none: the
// queue's default), an unknown status failed.
func TestHTTPBatchPerJobOutcomes(t *testing.T) {
	jobs, errs := httpBatch(t, 6, http.StatusOK, nil, `[
		{"status": "succeeded", "result": {"id": 1}},
		{"status": "failed", "error": "record rejected", "result": "why"},
		{"status": "failed", "error": "bad record", "skip_retry": true},
		{"status": "slow_down", "error": "quota", "retry_after": "2s"},
		{"status": "slow_down", "retry_after": 1.5},
		{"status": "done"}
	]`)
	var ra *target.RetryAfterError
	checks := []struct {
		ok     bool
		result string
	}{
		{errs[0] == nil, `{"id":1}`},
		{errs[1] != nil && !errors.Is(errs[1], attempt.ErrSkipRetry) && strings.Contains(errs[1].Error(), "record rejected"), `"why"`},
		{errors.Is(errs[2], attempt.ErrSkipRetry) && strings.Contains(errs[2].Error(), "bad record"), ``},
		{errors.As(errs[3], &ra) && ra.Wait == 2*time.Second && strings.Contains(ra.Answer, "quota"), ``},
		{errors.As(errs[4], &ra) && ra.Wait == 1500*time.Millisecond, ``},
		{errs[5] != nil && !errors.As(errs[5], &ra) && strings.Contains(errs[5].Error(), `"done"`), ``},
	}
	for k, c := range checks {
		if !c.ok {
			t.Errorf("job %d: %v", k+1, errs[k])
		}
		if got := compactJSON(jobs[k].Result); got != c.result {
			t.Errorf("job %d: result %s, want %s", k+1, got, c.result)
		}
	}
}

func compactJSON(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return "not JSON: " + string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// An HTTP target's 2xx answer that is not an array of one answer per
// job fails every job, retried, with an error that says so; its status
// and body are each job's result, as a single POST's.
func TestHTTPBatchMalformedAnswers(t *testing.T) {
	for _, tt := range []struct{ name, body, says string }{
		{"not JSON", `ok`, "not a JSON array"},
		{"an object", `{"status": "succeeded"}`, "not a JSON array"},
		{"too few", `[{"status": "succeeded"}]`, "1 entries for 2 jobs"},
		{"too many", `[{"status": "succeeded"}, {"status": "succeeded"}, {"status": "failed"}]`, "3 entries for 2 jobs"},
		{"empty", ``, "not a JSON array"},
		{"too long", `["` + strings.Repeat("x", 2*dispatch.MaxBatchAnswer) + `"]`, "over"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			jobs, errs := httpBatch(t, 2, http.StatusOK, nil, tt.body)
			for k, err := range errs {
				if err == nil || errors.Is(err, attempt.ErrSkipRetry) || !strings.Contains(err.Error(), tt.says) {
					t.Errorf("job %d: %v; want a retried failure saying %q", k+1, err, tt.says)
				}
				var r dispatch.HTTPResult
				if json.Unmarshal(jobs[k].Result, &r) != nil || r.Status != 200 {
					t.Errorf("job %d: result %.80s; want the answer's status and body", k+1, jobs[k].Result)
				}
			}
		})
	}
}

// An HTTP target's answer that is not a 2xx is every job's, as a single
// POST's would be: a 429 (or a 503 with Retry-After) slows every job
// down for its Retry-After, a 4xx fails them for good, a 5xx fails them,
// retried.
func TestHTTPBatchWholeAnswer(t *testing.T) {
	for _, tt := range []struct {
		name       string
		status     int
		retryAfter string
		slow       time.Duration // > 0: a slow-down of this wait
		skipRetry  bool
	}{
		{"429", http.StatusTooManyRequests, "2", 2 * time.Second, false},
		{"503 with Retry-After", http.StatusServiceUnavailable, "30", 30 * time.Second, false},
		{"400", http.StatusBadRequest, "", 0, true},
		{"500", http.StatusInternalServerError, "", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			header := map[string]string{}
			if tt.retryAfter != "" {
				header["Retry-After"] = tt.retryAfter
			}
			_, errs := httpBatch(t, 3, tt.status, header, `[{"status": "succeeded"}, {"status": "succeeded"}, {"status": "succeeded"}]`)
			for k, err := range errs {
				var ra *target.RetryAfterError
				switch {
				case err == nil:
					t.Errorf("job %d succeeded on a %d", k+1, tt.status)
				case errors.As(err, &ra) != (tt.slow > 0) || tt.slow > 0 && ra.Wait != tt.slow:
					t.Errorf("job %d: %v; want a slow-down of %v: %v", k+1, err, tt.slow, tt.slow > 0)
				case errors.Is(err, attempt.ErrSkipRetry) != tt.skipRetry:
					t.Errorf("job %d: %v; want skip-retry %v", k+1, err, tt.skipRetry)
				}
			}
		})
	}
}

// A Lambda target gets a batch as {"jobs": [each job's event]} in one
// Invoke and answers {"results": [per job]}; a function error is every
// job's (RetryAfterError slows each down), and a response that is not a
// list of one answer per job fails every job.
func TestLambdaBatch(t *testing.T) {
	var answer *lambda.InvokeOutput
	fn := &batchLambda{answer: func(*lambda.InvokeInput) *lambda.InvokeOutput { return answer }}
	d := &dispatch.Dispatcher{Lambda: &dispatch.Lambda{API: fn}}
	run := func(out *lambda.InvokeOutput) ([]*job.Job, []error) {
		answer = out
		jobs := []*job.Job{
			{Queue: "q", ID: "j1", Ticket: 4, Attempt: 1, Target: "lambda:mailer", Payload: json.RawMessage(`{"to":"ada"}`)},
			{Queue: "q", ID: "j2", Ticket: 5, Attempt: 2, Target: "lambda:mailer"},
		}
		return jobs, d.RunBatch(context.Background(), jobs, cfg)
	}
	jobs, errs := run(&lambda.InvokeOutput{StatusCode: 200, Payload: []byte(
		`{"results": [{"status": "succeeded", "result": {"sent": 1}}, {"status": "slow_down", "retry_after": "3s", "error": "throttled"}]}`)})
	evs, err := lambdaJobs(fn.events[len(fn.events)-1].Payload)
	if err != nil || len(evs) != 2 || evs[0].JobID != "j1" || string(evs[0].Payload) != `{"to":"ada"}` || evs[1].Ticket != 5 || evs[1].Attempt != 2 {
		t.Fatalf("batch event %s (%v)", fn.events[len(fn.events)-1].Payload, err)
	}
	var ra *target.RetryAfterError
	if errs[0] != nil || compactJSON(jobs[0].Result) != `{"sent":1}` || !errors.As(errs[1], &ra) || ra.Wait != 3*time.Second || jobs[1].Result != nil {
		t.Errorf("per-job answers: %v %s, %v %s", errs[0], jobs[0].Result, errs[1], jobs[1].Result)
	}

	for _, tt := range []struct {
		name    string
		out     *lambda.InvokeOutput
		slow    bool
		says    string
		results bool
	}{
		{"a RetryAfterError", &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"),
			Payload: []byte(`{"errorType": "RetryAfterError", "errorMessage": "2"}`)}, true, "RetryAfterError", false},
		{"another function error", &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"),
			Payload: []byte(`{"errorType": "Error", "errorMessage": "boom"}`)}, false, "boom", false},
		{"no results", &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`{"ok": true}`)}, false, `not {"results"`, true},
		{"too few results", &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`{"results": [{"status": "succeeded"}]}`)}, false, "1 entries for 2 jobs", true},
		{"not JSON", &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`done`)}, false, `not {"results"`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			jobs, errs := run(tt.out)
			for k, err := range errs {
				var ra *target.RetryAfterError
				if err == nil || errors.As(err, &ra) != tt.slow || errors.Is(err, attempt.ErrSkipRetry) || !strings.Contains(err.Error(), tt.says) {
					t.Errorf("job %d: %v; want a retried failure or slow-down (%v) saying %q", k+1, err, tt.slow, tt.says)
				}
				if (jobs[k].Result != nil) != tt.results {
					t.Errorf("job %d: result %s; want the response kept: %v", k+1, jobs[k].Result, tt.results)
				}
			}
		})
	}
}

// A panic in a Go batch handler fails every job of its call, and no job
// of another call of the batch.
func TestRunBatchPanic(t *testing.T) {
	mux := target.NewMux()
	mux.HandleBatchFunc("boom", func(context.Context, []*api.Job) []error { panic("index down") })
	mux.HandleBatchFunc("fine", func(_ context.Context, jobs []*api.Job) []error { return make([]error, len(jobs)) })
	jobs := []*job.Job{{ID: "b1", Kind: "boom"}, {ID: "f1", Kind: "fine"}, {ID: "b2", Kind: "boom"}}
	errs := (&dispatch.Dispatcher{Mux: mux}).RunBatch(context.Background(), jobs, cfg)
	if errs[1] != nil || errs[0] == nil || errs[2] == nil || !strings.HasPrefix(errs[0].Error(), "panic: index down") || errs[2].Error() != errs[0].Error() {
		t.Fatalf("errors %v; want b1 and b2 failed by the panic, f1 succeeded", errs)
	}
}

// A batch is bounded by the queue's target timeout as one job is: a
// handler that ignores its context is not waited for past it (and a
// short grace), and its jobs fail, retried; another call's jobs keep
// their own outcome.
func TestRunBatchTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		mux := target.NewMux()
		mux.HandleBatchFunc("stuck", func(_ context.Context, jobs []*api.Job) []error {
			<-release
			return make([]error, len(jobs))
		})
		mux.HandleFunc("quick", func(context.Context, *api.Job) error { return nil })
		jobs := []*job.Job{{ID: "s1", Kind: "stuck"}, {ID: "q1", Kind: "quick"}, {ID: "s2", Kind: "stuck"}}
		began := time.Now()
		c := cfg
		c.TargetTimeout = 2 * time.Second
		errs := (&dispatch.Dispatcher{Mux: mux}).RunBatch(context.Background(), jobs, c)
		close(release)
		if took := time.Since(began); took < 2*time.Second || took > 2*time.Second+100*time.Millisecond {
			t.Errorf("RunBatch returned after %v; want the timeout, 2s, and its grace", took)
		}
		for _, k := range []int{0, 2} {
			if !errors.Is(errs[k], context.DeadlineExceeded) || errors.Is(errs[k], attempt.ErrSkipRetry) {
				t.Errorf("%s: %v; want the timeout, retried", jobs[k].ID, errs[k])
			}
		}
		if errs[1] != nil {
			t.Errorf("q1: %v; a job of another call keeps its own outcome", errs[1])
		}
	})
}

// The runner the engine asks for (engine.BatchRunner) accepts a batch of
// a queue whose Go handlers are unknown to it: each job fails for good,
// as in Run.
func TestRunBatchWithoutMux(t *testing.T) {
	errs := (&dispatch.Dispatcher{}).RunBatch(context.Background(), []*job.Job{{ID: "k", Kind: "index"}}, slot.Config{})
	if !errors.Is(errs[0], target.ErrUnknownKind) || !errors.Is(errs[0], attempt.ErrSkipRetry) {
		t.Fatalf("RunBatch = %v; want ErrUnknownKind, skip-retry", errs[0])
	}
}

// A batch's POST goes through the same guard as a single one: a
// loopback address the queue's allow_networks does not list is refused
// at connect time, every job failing without retry, and nothing reaches
// the server. RunBatch refuses the target before (as Run does);
// PostBatch is called directly, so only the dial-time check stands
// between the jobs and the address.
func TestHTTPBatchRefusedAddress(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer srv.Close()
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	public := slot.Config{Targets: []string{"http://*:*"}}
	jobs := []*job.Job{{ID: "j1", Target: "http://localhost:" + port + "/"}, {ID: "j2", Target: "http://localhost:" + port + "/"}}
	errs, _ := (&dispatch.HTTP{}).PostBatch(context.Background(), jobs, public)
	if len(errs) != 2 {
		t.Fatalf("%d outcomes for 2 jobs", len(errs))
	}
	for k, err := range errs {
		if !errors.Is(err, attempt.ErrSkipRetry) || !strings.Contains(errString(err), "refused") {
			t.Errorf("job %d: %v; want a skip-retry refusal", k+1, err)
		}
	}
	if hits != 0 {
		t.Errorf("the server was reached %d times", hits)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
