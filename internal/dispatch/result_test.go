package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// resultBench runs jobs through the engine on memstore with a Dispatcher,
// one Work call per message, so a job's record after its outcome shows
// what the target's result became.
type resultBench struct {
	t     *testing.T
	store *memstore.Store
	tr    *memstore.Transport
	eng   *engine.Engine
}

func newResultBench(t *testing.T, d *dispatch.Dispatcher) *resultBench {
	b := &resultBench{t: t, store: memstore.New(memstore.Options{}), tr: memstore.NewTransport(memstore.TransportOptions{})}
	// Real time: a lead and a skew a loaded host's timers keep within (a
	// worker that wakes later than the skew after its reserved start
	// gives the slot up and goes to the end of the line).
	b.eng = engine.New(engine.Options{State: b.store, Transport: b.tr, Runner: d, Lead: 20 * time.Millisecond})
	c := cfg
	c.Interval, c.Skew, c.Backoff, c.MaxBackoff = 100*time.Millisecond, 25*time.Millisecond, time.Millisecond, time.Millisecond
	c.MaxAttempts = 2
	if _, err := b.eng.CreateQueue(context.Background(), "q", c); err != nil {
		t.Fatal(err)
	}
	return b
}

// run enqueues sp and works its messages until it ends; it returns the
// record.
func (b *resultBench) run(sp job.Spec) job.Job {
	b.t.Helper()
	ctx := context.Background()
	if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &sp}); err != nil {
		b.t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		j, err := b.store.GetJob(ctx, job.Ref{Queue: "q", ID: sp.ID})
		if err != nil {
			b.t.Fatal(err)
		}
		if j.Status.Final() {
			return j
		}
		ds, err := b.tr.Receive(ctx, 10, 100*time.Millisecond, time.Minute)
		if err != nil {
			b.t.Fatal(err)
		}
		for _, d := range ds {
			if err := b.eng.Work(ctx, d.Envelope); err != nil {
				b.t.Fatalf("Work: %v", err)
			}
			_ = b.tr.Delete(ctx, d.ReceiptHandle)
		}
	}
	b.t.Fatalf("job %s did not end", sp.ID)
	return job.Job{}
}

func jsonIs(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s: result %q is not JSON: %v", what, got, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("%s: result %s, want %s", what, got, want)
	}
}

// A Go handler's result is kept with its outcome: returned by a
// ResultFunc or set by a plain handler; kept on a final failure, not kept
// from an attempt that was retried; over 32 KiB it is not kept and the
// record says its size, and the job still succeeds; a value that cannot
// be encoded fails the job.
func TestGoHandlerResult(t *testing.T) {
	mux := target.NewMux()
	mux.HandleResultFunc("report", func(_ context.Context, j *api.Job) (any, error) {
		return map[string]any{"rows": 3, "url": "s3://reports/" + j.ID}, nil
	})
	mux.HandleFunc("plain", func(ctx context.Context, j *api.Job) error {
		return target.SetResult(ctx, json.RawMessage(`"done"`))
	})
	mux.HandleResultFunc("broken", func(_ context.Context, j *api.Job) (any, error) {
		return map[string]any{"attempt": j.Attempt}, errors.New("upstream 503")
	})
	mux.HandleResultFunc("flaky", func(_ context.Context, j *api.Job) (any, error) {
		if j.Attempt == 1 {
			return "from the failed attempt", errors.New("once")
		}
		return nil, nil
	})
	var tooLarge error
	mux.HandleFunc("huge", func(ctx context.Context, j *api.Job) error {
		tooLarge = target.SetResult(ctx, strings.Repeat("x", job.MaxResult))
		return nil
	})
	mux.HandleResultFunc("atLimit", func(_ context.Context, j *api.Job) (any, error) {
		return json.RawMessage(`"` + strings.Repeat("x", job.MaxResult-2) + `"`), nil
	})
	mux.HandleResultFunc("unencodable", func(_ context.Context, j *api.Job) (any, error) {
		return make(chan int), nil
	})
	b := newResultBench(t, &dispatch.Dispatcher{Mux: mux})

	j := b.run(job.Spec{ID: "r1", Kind: "report"})
	if j.Status != job.Succeeded {
		t.Fatalf("report: %s", j.Status)
	}
	jsonIs(t, "ResultFunc", j.Result, `{"rows":3,"url":"s3://reports/r1"}`)
	jsonIs(t, "SetResult", b.run(job.Spec{ID: "p1", Kind: "plain"}).Result, `"done"`)

	j = b.run(job.Spec{ID: "b1", Kind: "broken"})
	if j.Status != job.Failed {
		t.Fatalf("broken: %s", j.Status)
	}
	jsonIs(t, "a final failure", j.Result, `{"attempt":2}`)

	if j = b.run(job.Spec{ID: "f1", Kind: "flaky"}); j.Status != job.Succeeded || j.Result != nil {
		t.Errorf("flaky: %s with result %s; want succeeded without the retried attempt's result", j.Status, j.Result)
	}

	j = b.run(job.Spec{ID: "h1", Kind: "huge"})
	if j.Status != job.Succeeded || j.Result != nil || j.ResultDropped != job.MaxResult+2 || !errors.Is(tooLarge, attempt.ErrResultTooLarge) {
		t.Errorf("huge: %s, result %d bytes, dropped %d, SetResult %v; want succeeded, none kept, dropped %d, ErrResultTooLarge",
			j.Status, len(j.Result), j.ResultDropped, tooLarge, job.MaxResult+2)
	}
	if j = b.run(job.Spec{ID: "l1", Kind: "atLimit"}); len(j.Result) != job.MaxResult || j.ResultDropped != 0 {
		t.Errorf("a result of exactly %d bytes: kept %d, dropped %d", job.MaxResult, len(j.Result), j.ResultDropped)
	}
	if j = b.run(job.Spec{ID: "u1", Kind: "unencodable"}); j.Status != job.Failed || j.Attempt != 1 || !strings.Contains(j.LastError, "set result") {
		t.Errorf("unencodable: %s at attempt %d (%s); want failed at once", j.Status, j.Attempt, j.LastError)
	}
	if err := target.SetResult(context.Background(), 1); !errors.Is(err, attempt.ErrNoAttempt) {
		t.Errorf("SetResult outside an attempt: %v", err)
	}
}

// An HTTP target's result is its status and body: JSON kept as JSON, text
// as text, a body over MaxBody cut (and marked), a failure's body kept
// with the job's failure; whatever the body, the result fits the bound.
func TestHTTPTargetResult(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"id": 7}`)
		case "/text":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "queued as 7")
		case "/big":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `"`+strings.Repeat("y", 40<<10)+`"`)
		case "/escapes":
			fmt.Fprint(w, strings.Repeat("\x01", 20<<10))
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, "maintenance")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	b := newResultBench(t, &dispatch.Dispatcher{})
	run := func(path string) (job.Job, dispatch.HTTPResult) {
		j := b.run(job.Spec{ID: strings.Trim(path, "/"), Target: srv.URL + path})
		var r dispatch.HTTPResult
		if err := json.Unmarshal(j.Result, &r); err != nil {
			t.Fatalf("%s: result %q: %v", path, j.Result, err)
		}
		if len(j.Result) > job.MaxResult {
			t.Errorf("%s: result of %d bytes, over the bound", path, len(j.Result))
		}
		return j, r
	}
	if j, r := run("/json"); j.Status != job.Succeeded || r.Status != 201 || string(r.Body) != `{"id":7}` || r.Truncated {
		t.Errorf("json: %s %+v", j.Status, r)
	}
	if _, r := run("/text"); r.Status != 200 || string(r.Body) != `"queued as 7"` || r.ContentType != "text/plain" {
		t.Errorf("text: %+v", r)
	}
	var body string
	if _, r := run("/big"); !r.Truncated || json.Unmarshal(r.Body, &body) != nil || len(body) != dispatch.MaxBody || body[:2] != `"y` {
		t.Errorf("big: truncated %v, body of %d bytes; want the first %d bytes as text", r.Truncated, len(body), dispatch.MaxBody)
	}
	if _, r := run("/escapes"); !r.Truncated {
		t.Errorf("escapes: not marked truncated")
	}
	if j, r := run("/down"); j.Status != job.Failed || r.Status != 503 || string(r.Body) != `"maintenance"` {
		t.Errorf("down: %s %+v; want failed with the 503 and its body", j.Status, r)
	}
	if _, r := run("/empty"); r.Status != 204 || r.Body != nil {
		t.Errorf("empty: %+v", r)
	}
}

// A Lambda target's result is the function's response payload: JSON as
// it is, anything else as a JSON string, over the bound not kept.
func TestLambdaTargetResult(t *testing.T) {
	fake := &fakeLambda{}
	b := newResultBench(t, &dispatch.Dispatcher{Lambda: &dispatch.Lambda{API: fake}})
	for _, tt := range []struct {
		id, payload, want string
		dropped           int
	}{
		{"l1", `{"sent": true}`, `{"sent": true}`, 0},
		{"l2", `ok`, `"ok"`, 0},
		{"l3", `"` + strings.Repeat("z", job.MaxResult) + `"`, ``, job.MaxResult + 2},
	} {
		fake.out = &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(tt.payload), ExecutedVersion: aws.String("$LATEST")}
		j := b.run(job.Spec{ID: tt.id, Target: "lambda:mailer"})
		if j.Status != job.Succeeded || string(j.Result) != tt.want || j.ResultDropped != tt.dropped {
			t.Errorf("%s: %s, result %.40q, dropped %d; want succeeded, %.40q, dropped %d", tt.id, j.Status, j.Result, j.ResultDropped, tt.want, tt.dropped)
		}
	}
}
