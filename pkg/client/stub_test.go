package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// stub is an Invoke API endpoint that records each call and answers with
// the answer set for it.
type stub struct {
	mu       sync.Mutex
	function string // the function name of the last call
	body     []byte // the payload of the last call
	status   int
	fnError  string // X-Amz-Function-Error, if set
	answer   string
}

func newStub(t *testing.T, optFns ...func(*client.Options)) (*stub, *client.Client) {
	s := &stub{status: http.StatusOK, answer: "{}"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.function, s.body = r.PathValue("name"), b
		if s.fnError != "" {
			w.Header().Set("X-Amz-Function-Error", s.fnError)
		}
		w.WriteHeader(s.status)
		_, _ = io.WriteString(w, s.answer)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := client.NewFromConfig(aws.Config{}, append([]func(*client.Options){client.WithEndpoint(srv.URL),
		func(o *client.Options) {
			o.LambdaOptions = append(o.LambdaOptions, func(lo *lambda.Options) { lo.RetryMaxAttempts = 1 })
		}}, optFns...)...)
	return s, c
}

func (s *stub) last() (string, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.function, s.body
}

func jsonEqual(t *testing.T, got []byte, wantFile string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("..", "..", "events", wantFile))
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("request\n%s\nevents/%s is\n%s", got, wantFile, want)
	}
}

// The client's requests are the sample events, field for field: what the
// docs show with the AWS CLI is what the client sends.
func TestRequestEncoding(t *testing.T) {
	s, c := newStub(t)
	ctx := context.Background()
	cfg := func(iv time.Duration) api.Config {
		return api.Config{Interval: iv, MaxAttempts: 5, Backoff: 10 * time.Second,
			Targets: []string{"https://hooks.example.com/*", "lambda:send-email"}}
	}
	digest := func(to string) api.Spec {
		return api.Spec{Kind: "echo", Payload: json.RawMessage(`{"to": "` + to + `", "template": "digest"}`)}
	}
	tests := []struct {
		event    string
		function string
		call     func() error
	}{
		{"enqueue.json", "EnqueueFunction", func() error {
			_, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Job: &api.Spec{ID: "welcome-42", Kind: "echo",
				Payload: json.RawMessage(`{"to": "ada@example.com", "template": "welcome"}`)}})
			return err
		}},
		{"enqueue-batch.json", "EnqueueFunction", func() error {
			_, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Jobs: []api.Spec{
				digest("grace@example.com"), digest("alan@example.com"), digest("edsger@example.com")}})
			return err
		}},
		{"enqueue-keyed.json", "EnqueueFunction", func() error {
			keyed := func(to, template string) api.Spec {
				return api.Spec{Kind: "echo", Key: to, Payload: json.RawMessage(`{"to": "` + to + `", "template": "` + template + `"}`)}
			}
			_, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Jobs: []api.Spec{
				keyed("ada@example.com", "receipt"), keyed("ada@example.com", "shipped"), keyed("grace@example.com", "receipt")}})
			return err
		}},
		{"admin-create.json", "AdminFunction", func() error {
			c2 := cfg(2 * time.Second)
			_, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "emails", Config: &c2})
			return err
		}},
		{"admin-create-rate.json", "AdminFunction", func() error {
			_, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "crawls", Config: &api.Config{Rate: api.Rate{N: 100, Per: time.Minute}, Burst: 10}})
			return err
		}},
		{"admin-create-window.json", "AdminFunction", func() error {
			_, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "reports", Config: &api.Config{Window: api.Rate{N: 5000, Per: time.Hour}}})
			return err
		}},
		{"admin-configure.json", "AdminFunction", func() error {
			u := cfg(time.Second).Update()
			_, err := c.ConfigureQueue(ctx, &client.ConfigureQueueInput{Queue: "emails", Update: &u})
			return err
		}},
		{"admin-pause.json", "AdminFunction", func() error {
			_, err := c.PauseQueue(ctx, &client.PauseQueueInput{Queue: "emails", Until: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)})
			return err
		}},
		{"admin-resume.json", "AdminFunction", func() error {
			_, err := c.ResumeQueue(ctx, &client.ResumeQueueInput{Queue: "emails"})
			return err
		}},
		{"admin-purge.json", "AdminFunction", func() error {
			_, err := c.PurgeQueue(ctx, &client.PurgeQueueInput{Queue: "emails"})
			return err
		}},
		{"admin-delete.json", "AdminFunction", func() error {
			_, err := c.DeleteQueue(ctx, &client.DeleteQueueInput{Queue: "emails"})
			return err
		}},
		{"admin-stats.json", "AdminFunction", func() error {
			_, err := c.GetStats(ctx, &client.GetStatsInput{Queue: "emails"})
			return err
		}},
		{"admin-starts.json", "AdminFunction", func() error {
			_, err := c.ListStarts(ctx, &client.ListStartsInput{Queue: "emails", Limit: 200})
			return err
		}},
		{"admin-get.json", "AdminFunction", func() error {
			_, err := c.GetJob(ctx, &client.GetJobInput{Queue: "emails", JobID: "welcome-42"})
			return err
		}},
		{"admin-cancel.json", "AdminFunction", func() error {
			_, err := c.CancelJob(ctx, &client.CancelJobInput{Queue: "emails", JobID: "welcome-42"})
			return err
		}},
		{"admin-list.json", "AdminFunction", func() error {
			_, err := c.ListJobs(ctx, &client.ListJobsInput{Queue: "emails", Status: api.Parked, Limit: 20})
			return err
		}},
		{"admin-retry.json", "AdminFunction", func() error {
			_, err := c.RetryJobs(ctx, &client.RetryJobsInput{Queue: "emails", JobIDs: []string{"welcome-42"}, By: "ops@example.com"})
			return err
		}},
		{"admin-redrive.json", "AdminFunction", func() error {
			_, err := c.Redrive(ctx, &client.RedriveInput{Limit: 100})
			return err
		}},
		{"admin-retry-failed.json", "AdminFunction", func() error {
			_, err := client.NewRetryFailedPaginator(c, &client.RetryJobsInput{Queue: "emails", Limit: 100, By: "ops@example.com"}).NextPage(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			if err := tt.call(); err != nil {
				t.Fatal(err)
			}
			fn, body := s.last()
			if fn != tt.function {
				t.Errorf("invoked %s, want %s", fn, tt.function)
			}
			jsonEqual(t, body, tt.event)
		})
	}
	t.Run("list queues", func(t *testing.T) {
		if _, err := c.ListQueues(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, body := s.last(); string(body) != `{"op":"list"}` {
			t.Errorf("request %s", body)
		}
	})
	t.Run("create with the default interval", func(t *testing.T) {
		if _, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "emails", Config: &api.Config{MaxAttempts: 2}}); err != nil {
			t.Fatal(err)
		}
		if _, body := s.last(); string(body) != `{"op":"create","queue":"emails","config":{"max_attempts":2}}` {
			t.Errorf("request %s", body)
		}
	})
}

// Each answer the functions give comes back as the right kind of error.
func TestAnswers(t *testing.T) {
	s, c := newStub(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		fnError string
		status  int
		answer  string
		check   func(t *testing.T, err error)
	}{
		{"queue not found", "", 200, `{"op":"stats","error":{"code":"queue_not_found","field":"queue","message":"queue emails not found"}}`,
			func(t *testing.T, err error) { wantError(t, err, "queue_not_found", "queue", client.ErrQueueNotFound) }},
		{"job not found", "", 200, `{"error":{"code":"job_not_found","field":"job_id","message":"job x not found in queue emails"}}`,
			func(t *testing.T, err error) { wantError(t, err, "job_not_found", "job_id", client.ErrJobNotFound) }},
		{"not allowed", "", 200, `{"error":{"code":"target_not_allowed","field":"jobs[3].target","message":"no"}}`,
			func(t *testing.T, err error) {
				wantError(t, err, "target_not_allowed", "jobs[3].target", client.ErrNotAllowed)
			}},
		{"bad input", "", 200, `{"error":{"code":"unknown_field","field":"config.intervall","message":"unknown field"}}`,
			func(t *testing.T, err error) {
				wantError(t, err, "unknown_field", "config.intervall", nil)
				for _, s := range []error{client.ErrQueueNotFound, client.ErrJobNotFound, client.ErrNotAllowed, client.ErrQueueExists, client.ErrNotWaiting} {
					if errors.Is(err, s) {
						t.Errorf("%v matches %v", err, s)
					}
				}
			}},
		{"crash", "Unhandled", 200, `{"errorMessage":"put item: ProvisionedThroughputExceededException","errorType":"wrapError"}`,
			func(t *testing.T, err error) {
				var fe *client.FunctionError
				if !errors.As(err, &fe) {
					t.Fatalf("got %v (%T), want *client.FunctionError", err, err)
				}
				want := client.FunctionError{Function: "AdminFunction", Kind: "Unhandled", Type: "wrapError", Message: "put item: ProvisionedThroughputExceededException"}
				if *fe != want {
					t.Errorf("got %+v, want %+v", *fe, want)
				}
				var e *client.Error
				if errors.As(err, &e) {
					t.Errorf("a function error is also an *client.Error")
				}
			}},
		{"timeout", "Unhandled", 200, `{"errorMessage":"2025-06-01T14:00:00Z abc Task timed out after 60.00 seconds","errorType":"Sandbox.Timedout"}`,
			func(t *testing.T, err error) {
				var fe *client.FunctionError
				if !errors.As(err, &fe) || fe.Type != "Sandbox.Timedout" {
					t.Fatalf("got %v, want a FunctionError of type Sandbox.Timedout", err)
				}
			}},
		{"not an answer", "", 200, `[1,2]`,
			func(t *testing.T, err error) {
				var e *client.Error
				var fe *client.FunctionError
				if err == nil || errors.As(err, &e) || errors.As(err, &fe) {
					t.Errorf("got %v", err)
				}
			}},
		{"service error", "", 500, `{"Type":"Service","message":"ServiceException"}`,
			func(t *testing.T, err error) {
				var e *client.Error
				var fe *client.FunctionError
				if err == nil || errors.As(err, &e) || errors.As(err, &fe) {
					t.Errorf("got %v", err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.mu.Lock()
			s.fnError, s.status, s.answer = tt.fnError, tt.status, tt.answer
			s.mu.Unlock()
			_, err := c.GetStats(ctx, &client.GetStatsInput{Queue: "emails"})
			tt.check(t, err)
		})
	}
}

// The function names come from a stack's outputs.
func TestStackOutputs(t *testing.T) {
	s, c := newStub(t, client.WithStackOutputs(map[string]string{
		"EnqueueFunctionName": "slotq-EnqueueFunction-AbC123",
		"AdminFunctionName":   "slotq-AdminFunction-XyZ789",
		"TableName":           "slotq-Table",
	}))
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "q", Job: &api.Spec{Kind: "echo"}}); err != nil {
		t.Fatal(err)
	}
	if fn, _ := s.last(); fn != "slotq-EnqueueFunction-AbC123" {
		t.Errorf("enqueue invoked %s", fn)
	}
	if _, err := c.GetStats(ctx, &client.GetStatsInput{Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if fn, _ := s.last(); fn != "slotq-AdminFunction-XyZ789" {
		t.Errorf("stats invoked %s", fn)
	}
	o := client.NewFromConfig(aws.Config{}, client.WithStackOutputs(nil)).Options()
	if o.EnqueueFunction != client.DefaultEnqueueFunction || o.AdminFunction != client.DefaultAdminFunction {
		t.Errorf("defaults %+v", o)
	}
}
