package target_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/pkg/engine"
	"github.com/slotq/slotq/pkg/job"
	"github.com/slotq/slotq/pkg/slot"
	"github.com/slotq/slotq/pkg/target"
)

var cfg = slot.Config{Interval: time.Second}.WithDefaults()

func TestMuxRoutesByKindAndPanicsOnDuplicates(t *testing.T) {
	mux := target.NewMux()
	var got string
	mux.HandleFunc("email.send", func(_ context.Context, j *job.Job) error { got = j.ID; return nil })
	d := &target.Dispatcher{Mux: mux}
	if err := d.Run(context.Background(), &job.Job{ID: "a", Kind: "email.send"}, cfg); err != nil || got != "a" {
		t.Fatalf("Run = %v, handler saw %q", err, got)
	}
	err := d.Run(context.Background(), &job.Job{ID: "b", Kind: "nope"}, cfg)
	if !errors.Is(err, target.ErrUnknownKind) || !errors.Is(err, engine.ErrSkipRetry) {
		t.Fatalf("unknown kind: %v; want ErrUnknownKind marked skip-retry", err)
	}
	if !d.Has("email.send") || d.Has("nope") {
		t.Fatal("Has disagrees with the registrations")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a kind twice did not panic")
		}
	}()
	mux.HandleFunc("email.send", func(context.Context, *job.Job) error { return nil })
}

func TestHTTPTarget(t *testing.T) {
	var body []byte
	var header http.Header
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		header = r.Header
		w.WriteHeader(status)
	}))
	defer srv.Close()
	d := &target.Dispatcher{}
	j := &job.Job{Queue: "q", ID: "j1", Ticket: 7, Attempt: 2, Target: srv.URL + "/hook", Payload: json.RawMessage(`{"x":1}`)}
	tests := []struct {
		name      string
		status    int
		wantErr   bool
		skipRetry bool
	}{
		{"2xx is success", http.StatusNoContent, false, false},
		{"4xx fails without retry", http.StatusBadRequest, true, true},
		{"429 is retried", http.StatusTooManyRequests, true, false},
		{"5xx is retried", http.StatusBadGateway, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status = tt.status
			err := d.Run(context.Background(), j, cfg)
			if (err != nil) != tt.wantErr || errors.Is(err, engine.ErrSkipRetry) != tt.skipRetry {
				t.Fatalf("Run = %v; want error %v, skip-retry %v", err, tt.wantErr, tt.skipRetry)
			}
			if string(body) != `{"x":1}` || header.Get("Slotq-Job-Id") != "j1" || header.Get("Slotq-Ticket") != "7" || header.Get("Slotq-Attempt") != "2" {
				t.Fatalf("request body %s headers %v", body, header)
			}
		})
	}
}

func TestHTTPTargetTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // so the server notices the client leave
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	c := cfg
	c.TargetTimeout = 50 * time.Millisecond
	err := (&target.Dispatcher{}).Run(context.Background(), &job.Job{ID: "slow", Target: srv.URL}, c)
	if err == nil || errors.Is(err, engine.ErrSkipRetry) {
		t.Fatalf("Run = %v; want a retryable timeout", err)
	}
}

type fakeLambda struct {
	in  *lambda.InvokeInput
	out *lambda.InvokeOutput
}

func (f *fakeLambda) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	f.in = in
	return f.out, nil
}

func TestLambdaTarget(t *testing.T) {
	fake := &fakeLambda{out: &lambda.InvokeOutput{StatusCode: 200}}
	d := &target.Dispatcher{Lambda: &target.Lambda{API: fake}}
	j := &job.Job{Queue: "q", ID: "j1", Ticket: 3, Attempt: 1, Target: "lambda:mailer", Payload: json.RawMessage(`[1]`)}
	if err := d.Run(context.Background(), j, cfg); err != nil {
		t.Fatal(err)
	}
	var ev target.LambdaEvent
	if err := json.Unmarshal(fake.in.Payload, &ev); err != nil || aws.ToString(fake.in.FunctionName) != "mailer" || ev.JobID != "j1" || string(ev.Payload) != "[1]" {
		t.Fatalf("invoked %s with %s (%v)", aws.ToString(fake.in.FunctionName), fake.in.Payload, err)
	}
	fake.out = &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"), Payload: []byte(`{"errorMessage":"boom","errorType":"Error"}`)}
	if err := d.Run(context.Background(), j, cfg); err == nil || errors.Is(err, engine.ErrSkipRetry) {
		t.Fatalf("function error: %v; want a retryable error", err)
	}
	if err := (&target.Dispatcher{}).Run(context.Background(), j, cfg); !errors.Is(err, engine.ErrSkipRetry) {
		t.Fatalf("no Lambda client: %v; want skip-retry", err)
	}
}
