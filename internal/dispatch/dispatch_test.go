package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// cfg allows the loopback test servers and the Lambda function the tests use.
var cfg = slot.Config{
	Interval:      time.Second,
	Targets:       []string{"http://127.0.0.1:*", "lambda:mailer"},
	AllowNetworks: []string{"127.0.0.1/32"},
}.WithDefaults()

func TestMuxRoutesByKindAndPanicsOnDuplicates(t *testing.T) {
	mux := target.NewMux()
	var got string
	mux.HandleFunc("email.send", func(_ context.Context, j *api.Job) error { got = j.ID; return nil })
	d := &dispatch.Dispatcher{Mux: mux}
	if err := d.Run(context.Background(), &job.Job{ID: "a", Kind: "email.send"}, cfg); err != nil || got != "a" {
		t.Fatalf("Run = %v, handler saw %q", err, got)
	}
	err := d.Run(context.Background(), &job.Job{ID: "b", Kind: "nope"}, cfg)
	if !errors.Is(err, target.ErrUnknownKind) || !errors.Is(err, attempt.ErrSkipRetry) {
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
	mux.HandleFunc("email.send", func(context.Context, *api.Job) error { return nil })
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
	d := &dispatch.Dispatcher{}
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
			if (err != nil) != tt.wantErr || errors.Is(err, attempt.ErrSkipRetry) != tt.skipRetry {
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
	err := (&dispatch.Dispatcher{}).Run(context.Background(), &job.Job{ID: "slow", Target: srv.URL}, c)
	if err == nil || errors.Is(err, attempt.ErrSkipRetry) {
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
	d := &dispatch.Dispatcher{Lambda: &dispatch.Lambda{API: fake}}
	j := &job.Job{Queue: "q", ID: "j1", Ticket: 3, Attempt: 1, Target: "lambda:mailer", Payload: json.RawMessage(`[1]`)}
	if err := d.Run(context.Background(), j, cfg); err != nil {
		t.Fatal(err)
	}
	var ev dispatch.LambdaEvent
	if err := json.Unmarshal(fake.in.Payload, &ev); err != nil || aws.ToString(fake.in.FunctionName) != "mailer" || ev.JobID != "j1" || string(ev.Payload) != "[1]" {
		t.Fatalf("invoked %s with %s (%v)", aws.ToString(fake.in.FunctionName), fake.in.Payload, err)
	}
	fake.out = &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"), Payload: []byte(`{"errorMessage":"boom","errorType":"Error"}`)}
	if err := d.Run(context.Background(), j, cfg); err == nil || errors.Is(err, attempt.ErrSkipRetry) {
		t.Fatalf("function error: %v; want a retryable error", err)
	}
	if err := (&dispatch.Dispatcher{}).Run(context.Background(), j, cfg); !errors.Is(err, attempt.ErrSkipRetry) {
		t.Fatalf("no Lambda client: %v; want skip-retry", err)
	}
}

// The guarded client checks the address a name resolves to, on every
// connection: "localhost" reaches the loopback server only when the
// queue's allow_networks lists it. Post is called directly, so only the
// dial-time check stands between the job and the address.
func TestHTTPTargetRefusesResolvedAddresses(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	j := &job.Job{Queue: "q", ID: "j", Ticket: 1, Attempt: 1, Target: "http://localhost:" + port + "/"}
	h := &dispatch.HTTP{}
	public := slot.Config{Targets: []string{"http://*:*"}}
	err := h.Post(context.Background(), j, public)
	if err == nil || !errors.Is(err, attempt.ErrSkipRetry) || !strings.Contains(err.Error(), "loopback") || hits != 0 {
		t.Fatalf("Post to localhost without allow_networks = %v (hits %d); want a skip-retry refusal naming loopback", err, hits)
	}
	allowed := slot.Config{Targets: []string{"http://*:*"}, AllowNetworks: []string{"127.0.0.0/8", "::1/128"}}
	if err := h.Post(context.Background(), j, allowed); err != nil || hits != 1 {
		t.Fatalf("Post with allow_networks = %v (hits %d); want success", err, hits)
	}
	// The pooled connection the allowed queue opened is not the public one's.
	if err := h.Post(context.Background(), j, public); err == nil || hits != 1 {
		t.Fatalf("Post after an allowed one = %v (hits %d); want refused again", err, hits)
	}
}

// Redirects are not followed: a 3xx could lead anywhere.
func TestHTTPTargetDoesNotFollowRedirects(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		if r.URL.Path == "/hook" { // the allow-list says /hook; the redirect goes elsewhere
			http.Redirect(w, r, "/admin", http.StatusTemporaryRedirect)
		}
	}))
	defer srv.Close()
	c := cfg
	c.Targets = []string{srv.URL + "/hook"}
	err := (&dispatch.Dispatcher{}).Run(context.Background(), &job.Job{ID: "r", Target: srv.URL + "/hook"}, c)
	if !errors.Is(err, attempt.ErrSkipRetry) || len(paths) != 1 {
		t.Fatalf("Run = %v after %v; want one request and a skip-retry error", err, paths)
	}
}

// The worker checks the target against the queue's configuration as it is
// now: a target removed from the allow-list (or a private address) after
// enqueue does not run.
func TestDispatcherRechecksTheAllowList(t *testing.T) {
	tests := []struct{ name, target string }{
		{"not in the list", "https://other.example.com/x"},
		{"metadata by IP", "http://169.254.169.254/latest/meta-data/"},
		{"lambda not listed", "lambda:other"},
	}
	fake := &fakeLambda{out: &lambda.InvokeOutput{StatusCode: 200}}
	d := &dispatch.Dispatcher{Lambda: &dispatch.Lambda{API: fake}}
	c := cfg
	c.Targets = append(c.Targets, "http://*")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := d.Run(context.Background(), &job.Job{ID: "x", Target: tt.target}, c)
			if !errors.Is(err, attempt.ErrSkipRetry) || fake.in != nil {
				t.Fatalf("Run = %v (invoked %v); want a skip-retry refusal", err, fake.in)
			}
		})
	}
}

// A Go handler runs under the queue's target timeout, as HTTP and Lambda
// targets do.
func TestGoHandlerTargetTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mux := target.NewMux()
		mux.HandleFunc("wait", func(ctx context.Context, _ *api.Job) error {
			<-ctx.Done()
			return ctx.Err()
		})
		d := &dispatch.Dispatcher{Mux: mux}
		began := time.Now()
		err := d.Run(context.Background(), &job.Job{ID: "j", Kind: "wait"}, slot.Config{TargetTimeout: 2 * time.Second})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) != 2*time.Second {
			t.Fatalf("got %v after %v, want the deadline after 2s", err, time.Since(began))
		}
	})
}

// Addresses that carry an IPv4 address are judged by it when the worker
// dials, as at enqueue: a queue whose allow_networks is ["::/0"] reaches
// neither the metadata service nor loopback through their IPv6 forms; an
// IPv4 prefix is what allows them.
func TestHTTPTargetJudgesEmbeddedIPv4(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	h := &dispatch.HTTP{}
	anyV6 := slot.Config{Targets: []string{"http://*:*"}, AllowNetworks: []string{"::/0"}}
	for _, url := range []string{
		"http://[::ffff:169.254.169.254]/latest/meta-data/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://[::127.0.0.1]:" + port + "/",
	} {
		j := &job.Job{Queue: "q", ID: "j", Ticket: 1, Attempt: 1, Target: url}
		enq := anyV6.CheckTarget(url)
		err := h.Post(context.Background(), j, anyV6)
		if enq == nil || err == nil || !errors.Is(err, attempt.ErrSkipRetry) || !strings.Contains(err.Error(), "refused") || hits != 0 {
			t.Errorf("%s with allow_networks [::/0]: enqueue check %v, Post %v (hits %d); want both refused", url, enq, err, hits)
		}
	}
	v4 := slot.Config{Targets: []string{"http://*:*"}, AllowNetworks: []string{"127.0.0.1/32"}}
	url := "http://[::ffff:127.0.0.1]:" + port + "/"
	if err := h.Post(context.Background(), &job.Job{Queue: "q", ID: "j", Ticket: 1, Attempt: 1, Target: url}, v4); err != nil || hits != 1 || v4.CheckTarget(url) != nil {
		t.Errorf("%s with allow_networks [127.0.0.1/32]: Post %v (hits %d), enqueue check %v; want both allowed", url, err, hits, v4.CheckTarget(url))
	}
}

// A failed attempt's error carries up to 1 KiB of what the target
// answered, cut on a rune boundary: the history keeps that much, and the
// text stays readable.
func TestHTTPTargetErrorKeepsTheAnswer(t *testing.T) {
	answer := strings.Repeat("€", 2000) // 3 bytes each: 1 KiB falls inside one
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	err := (&dispatch.Dispatcher{}).Run(context.Background(), &job.Job{Queue: "q", ID: "j1", Target: srv.URL + "/hook"}, cfg)
	if err == nil {
		t.Fatal("a 502 did not fail")
	}
	_, body, _ := strings.Cut(err.Error(), "502 Bad Gateway: ")
	if !utf8.ValidString(body) || !strings.HasPrefix(answer, body) || len(body) < 1024-utf8.UTFMax || len(body) > 1024 {
		t.Fatalf("the error carries %d bytes of the answer (valid text %v); want up to 1 KiB of it, cut on a rune boundary", len(body), utf8.ValidString(body))
	}
}
