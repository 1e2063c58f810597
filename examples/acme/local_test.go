package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/local"
)

// partner is a stand-in for the partner API: it records what it is sent.
type partner struct {
	mu   sync.Mutex
	got  []string
	keys []string
}

func (p *partner) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, string(b))
	p.keys = append(p.keys, r.Header.Get("Idempotency-Key"))
	w.WriteHeader(http.StatusAccepted)
}

// TestLocal runs this worker's mux under slotq's local runtime and
// enqueues one job of each kind through the Lambda Invoke API, as another
// service would with the AWS SDK: the notify job posts to the partner API
// once, the report job fails its first attempt and succeeds on its retry.
func TestLocal(t *testing.T) {
	partnerAPI := &partner{}
	srv := httptest.NewServer(partnerAPI)
	defer srv.Close()

	// The stack as deployed (make test writes template.yaml first): its
	// event source, schedule and timeouts.
	var stack local.Stack
	if _, err := os.Stat("template.yaml"); err == nil {
		if stack, err = local.FromTemplate("template.yaml"); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Log("no template.yaml (make template.yaml writes it): slotq's default stack")
	}

	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan local.Endpoints, 1)
	done := make(chan error, 1)
	go func() {
		done <- local.Run(ctx, local.Options{
			Addr:  "127.0.0.1:0",
			Stack: stack,
			Mux:   Handlers(srv.URL, srv.Client()),
			Out:   io.Discard,
			// The functions' warnings (the report's failed first
			// attempt) show with the test's output, under -v or on failure.
			Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
			Ready:  func(e local.Endpoints) { ready <- e },
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("local.Run: %v", err)
		}
	}()
	var ends local.Endpoints
	select {
	case ends = <-ready:
	case err := <-done:
		t.Fatalf("local.Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the local runtime did not start")
	}

	fn := lambda.New(lambda.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(ends.InvokeURL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	invoke := func(name string, in, out any) {
		t.Helper()
		payload, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		res, err := fn.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(name), Payload: payload})
		if err != nil {
			t.Fatalf("invoke %s: %v", name, err)
		}
		if res.FunctionError != nil {
			t.Fatalf("invoke %s: function error %s: %s", name, *res.FunctionError, res.Payload)
		}
		if err := json.Unmarshal(res.Payload, out); err != nil {
			t.Fatalf("invoke %s: %v: %s", name, err, res.Payload)
		}
	}

	var accepted struct {
		Jobs []struct {
			JobID  string `json:"job_id"`
			Status string `json:"status"`
		} `json:"jobs"`
		Error *struct{ Code, Message string } `json:"error"`
	}
	invoke(local.EnqueueFunction, map[string]any{
		"queue": "partner", "interval": "200ms",
		"jobs": []map[string]any{
			{"id": "order-7", "kind": KindNotify, "payload": map[string]any{"order": 7, "status": "shipped"}},
			{"id": "daily", "kind": KindReport},
		},
	}, &accepted)
	if accepted.Error != nil || len(accepted.Jobs) != 2 {
		t.Fatalf("enqueue answered %+v", accepted)
	}

	// Wait for both jobs to end, reading them as an operator would.
	want := map[string]int{"order-7": 1, "daily": 2} // attempts
	for id, attempts := range want {
		var got struct {
			Job   *api.Job                        `json:"job"`
			Error *struct{ Code, Message string } `json:"error"`
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			invoke(local.AdminFunction, map[string]string{"op": "get", "queue": "partner", "job_id": id}, &got)
			if got.Job != nil && got.Job.Status.Final() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s did not end: %+v", id, got.Job)
			}
		}
		if got.Job.Status != api.Succeeded || got.Job.Attempt != attempts {
			t.Errorf("job %s: %s after attempt %d (%s), want succeeded after attempt %d",
				id, got.Job.Status, got.Job.Attempt, got.Job.LastError, attempts)
		}
	}
	partnerAPI.mu.Lock()
	defer partnerAPI.mu.Unlock()
	if len(partnerAPI.got) != 1 || partnerAPI.got[0] != `{"order":7,"status":"shipped"}` || partnerAPI.keys[0] != "partner/order-7" {
		t.Errorf("the partner API got %q with keys %q, want the order once", partnerAPI.got, partnerAPI.keys)
	}
}
