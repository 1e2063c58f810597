package local_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/internal/dev/localtest"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/pkg/local"
)

// consoleSpan is what the console exporter prints of a span.
type consoleSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
}

// spansOf reads the console exporter's output: one JSON object a line.
func spansOf(t *testing.T, out []byte) []consoleSpan {
	var spans []consoleSpan
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var s consoleSpan
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("console exporter line %q: %v", sc.Text(), err)
		}
		spans = append(spans, s)
	}
	return spans
}

// On the local runtime with OTEL_TRACES_EXPORTER=console, a job enqueued
// through the Invoke API with a traceparent field has its spans (the
// enqueue, the attempt, the target's call) printed under that trace id,
// and its HTTP target receives a traceparent of that trace.
func TestTraceConsole(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // the SDK's batcher: export within 50ms
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		parent  = "00-" + traceID + "-00f067aa0ba902b7-01"
	)
	var mu sync.Mutex
	var got []string // the traceparent headers the target received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Header.Get("traceparent"))
	}))
	defer srv.Close()

	var spans testenv.Buffer
	env := map[string]string{"OTEL_TRACES_EXPORTER": "console"}
	ends := localtest.Start(t, local.Options{Getenv: func(k string) string { return env[k] }, TraceOut: &spans})
	c := invoker{t, lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(ends.InvokeURL), Credentials: aws.AnonymousCredentials{}})}
	var created any
	c.call(local.AdminFunction, map[string]any{"op": "create", "queue": "traced", "config": map[string]any{
		"interval": "100ms", "targets": []string{srv.URL + "/*"}, "allow_networks": []string{"127.0.0.1/32"},
	}}, &created)
	var acc any
	c.call(local.EnqueueFunction, map[string]any{"queue": "traced", "job": map[string]any{
		"id": "j1", "target": srv.URL + "/hook", "traceparent": parent,
	}}, &acc)

	testenv.WaitFor(t, "the target's request", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	mu.Lock()
	header := got[0]
	mu.Unlock()
	if parts := strings.Split(header, "-"); len(parts) != 4 || parts[1] != traceID || header == parent {
		t.Errorf("the target received traceparent %q; want one of trace %s, from slotq's call span", header, traceID)
	}
	want := []string{"enqueue traced", "attempt traced", "call traced"}
	var byName map[string]consoleSpan
	testenv.WaitFor(t, "the job's spans on the console", func() bool {
		byName = map[string]consoleSpan{}
		for _, s := range spansOf(t, spans.Bytes()) {
			byName[s.Name] = s
		}
		for _, n := range want {
			if _, ok := byName[n]; !ok {
				return false
			}
		}
		return true
	})
	for _, n := range want {
		if s := byName[n]; s.SpanContext.TraceID != traceID {
			t.Errorf("span %q in trace %s; want %s", n, s.SpanContext.TraceID, traceID)
		}
	}
	if call := byName["call traced"]; !strings.Contains(header, call.SpanContext.SpanID) {
		t.Errorf("the target's traceparent %q names not the call span %s", header, call.SpanContext.SpanID)
	}
}
