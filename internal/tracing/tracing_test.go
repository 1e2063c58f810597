package tracing_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/tracing"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Unset, none or disabled: no provider at all, so the engine makes no
// span and pays nothing.
func TestOffUnlessAsked(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_TRACES_EXPORTER": "none"},
		{"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
	} {
		tr, err := tracing.FromEnv(t.Context(), tracing.Options{Getenv: envOf(env)})
		if err != nil || tr.On() || tr.Provider() != nil {
			t.Errorf("%v: on %v, provider %v, %v; want off", env, tr.On(), tr.Provider(), err)
		}
	}
}

// A bad variable is an error that names it.
func TestBadVariables(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "5s"}, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_COMPRESSION"},
		// X-Ray's endpoint wants SigV4-signed requests: every export would be refused.
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://xray.eu-west-1.amazonaws.com"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://XRAY.cn-north-1.amazonaws.com.cn/v1/traces"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
	} {
		_, err := tracing.FromEnv(t.Context(), tracing.Options{Getenv: envOf(tt.env)})
		if err == nil || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("%v: %v; want an error naming %s", tt.env, err, tt.name)
		}
	}
}

// OTEL_TRACES_EXPORTER=otlp sends OTLP/HTTP protobuf to the endpoint,
// with the headers asked for: a span's ids, parent, kind, attributes,
// links and status arrive as the SDK made them.
func TestOTLP(t *testing.T) {
	type request struct {
		path, contentType, auth string
		data                    *tracepb.TracesData
	}
	got := make(chan request, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var td tracepb.TracesData
		if err := proto.Unmarshal(b, &td); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		got <- request{r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), &td}
	}))
	defer srv.Close()
	tr, err := tracing.FromEnv(t.Context(), tracing.Options{Getenv: envOf(map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL + "/",
		"OTEL_EXPORTER_OTLP_HEADERS":  "Authorization=Bearer%20abc",
	}), ServiceName: "slotq-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(context.Background()) }()
	tracer := tr.Provider().Tracer("test")
	ctx, parent := tracer.Start(context.Background(), "parent")
	_, child := tracer.Start(ctx, "attempt q", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(trace.Link{SpanContext: parent.SpanContext(), Attributes: []attribute.KeyValue{attribute.String("slotq.link", "producer")}}),
		trace.WithAttributes(attribute.String("messaging.destination.name", "q"), attribute.Int64("slotq.ticket", 7)))
	child.SetStatus(codes.Error, "boom")
	child.End()
	parent.End()
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var req request
	select {
	case req = <-got:
	default:
		t.Fatal("the collector got nothing after Flush")
	}
	if req.path != "/v1/traces" || req.contentType != "application/x-protobuf" || req.auth != "Bearer abc" {
		t.Fatalf("request to %s, %s, Authorization %q", req.path, req.contentType, req.auth)
	}
	spans := map[string]*tracepb.Span{}
	for _, rs := range req.data.ResourceSpans {
		var service string
		for _, a := range rs.Resource.Attributes {
			if a.Key == "service.name" {
				service = a.Value.GetStringValue()
			}
		}
		if service != "slotq-test" {
			t.Errorf("service.name %q; want slotq-test", service)
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				spans[s.Name] = s
			}
		}
	}
	p, c := spans["parent"], spans["attempt q"]
	if p == nil || c == nil {
		t.Fatalf("spans %v; want parent and attempt q", spans)
	}
	pid, tid := parent.SpanContext().SpanID(), parent.SpanContext().TraceID()
	if string(c.TraceId) != string(tid[:]) || string(c.ParentSpanId) != string(pid[:]) || c.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
		t.Errorf("attempt span: trace %x parent %x kind %v", c.TraceId, c.ParentSpanId, c.Kind)
	}
	if c.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || c.Status.GetMessage() != "boom" {
		t.Errorf("status %v", c.Status)
	}
	if len(c.Links) != 1 || string(c.Links[0].SpanId) != string(pid[:]) || c.Links[0].Attributes[0].Value.GetStringValue() != "producer" {
		t.Errorf("links %v", c.Links)
	}
	attrs := map[string]string{}
	for _, a := range c.Attributes {
		attrs[a.Key] = a.Value.String()
	}
	if !strings.Contains(attrs["messaging.destination.name"], `"q"`) || !strings.Contains(attrs["slotq.ticket"], "7") {
		t.Errorf("attributes %v", attrs)
	}
	if c.StartTimeUnixNano == 0 || c.EndTimeUnixNano < c.StartTimeUnixNano {
		t.Errorf("times %d to %d", c.StartTimeUnixNano, c.EndTimeUnixNano)
	}
}

// Flushed exports an invocation's spans before it returns: a Lambda
// function is frozen after it, and exports nothing then.
func TestFlushed(t *testing.T) {
	var out testenv.Buffer
	tr, err := tracing.FromEnv(t.Context(), tracing.Options{Getenv: envOf(map[string]string{"OTEL_TRACES_EXPORTER": "console"}), Console: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(context.Background()) }()
	h := tracing.Flushed(tr, func(ctx context.Context, ev string) (string, error) {
		_, span := tr.Provider().Tracer("test").Start(ctx, "invocation "+ev)
		span.End()
		return ev, errors.New("the handler's error")
	})
	if r, err := h(t.Context(), "e1"); r != "e1" || err == nil || err.Error() != "the handler's error" {
		t.Fatalf("Flushed handler answered %q, %v; want the handler's answer", r, err)
	}
	if !strings.Contains(out.String(), `"Name":"invocation e1"`) {
		t.Errorf("console after the invocation: %q; want its span", out.String())
	}
	// Off, Flushed is the handler itself.
	off, _ := tracing.FromEnv(t.Context(), tracing.Options{Getenv: envOf(nil)})
	calls := 0
	h2 := tracing.Flushed(off, func(context.Context, int) (int, error) { calls++; return 0, nil })
	_, _ = h2(t.Context(), 1)
	if calls != 1 {
		t.Errorf("handler called %d times", calls)
	}
}

// A collector that never answers holds an invocation up by at most the
// flush's bound, not by the exporter's timeout (an hour here), and never
// changes its answer: the span is counted as dropped, and a warning
// says so.
func TestFlushedCollectorNeverAnswers(t *testing.T) {
	arrived := make(chan struct{}, 10)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	var logs testenv.Buffer
	tr, err := tracing.FromEnv(t.Context(), tracing.Options{Getenv: envOf(map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
		"OTEL_EXPORTER_OTLP_TIMEOUT":  "3600000",
		"SLOTQ_TRACE_FLUSH_TIMEOUT":   "50ms",
	}), Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = tr.Shutdown(ctx)
	}()
	h := tracing.Flushed(tr, func(ctx context.Context, ev string) (string, error) {
		_, span := tr.Provider().Tracer("test").Start(ctx, "invocation "+ev)
		span.End()
		return "answer " + ev, errors.New("the handler's error")
	})
	type result struct {
		r   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := h(t.Context(), "e1")
		done <- result{r, err}
	}()
	// Generous for a 50ms bound, and shorter than the batch processor's
	// own export timeout (30 s), which an unbounded flush would wait for.
	var res result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the invocation did not return while the collector held its export: the flush is not bounded")
	}
	if res.r != "answer e1" || res.err == nil || res.err.Error() != "the handler's error" {
		t.Errorf("Flushed handler answered %q, %v; want the handler's answer and error", res.r, res.err)
	}
	select {
	case <-arrived:
	default:
		t.Error("the export never reached the collector")
	}
	// The cancelled export ends just after the flush returns.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Minute); tr.Dropped() != 1 && time.Now().Before(deadline); {
		<-tick.C
	}
	if got := tr.Dropped(); got != 1 {
		t.Errorf("Dropped() = %d, want 1 (the invocation's span)", got)
	}
	if !strings.Contains(logs.String(), `"msg":"spans not exported"`) || !strings.Contains(logs.String(), `"dropped_spans"`) {
		t.Errorf("logs %q; want a warning with dropped_spans", logs.String())
	}
}

// A flush leaves the invocation time to answer: with less than that left
// before its deadline it sends nothing and returns at once.
func TestFlushNoTimeLeft(t *testing.T) {
	tr, err := tracing.FromEnv(t.Context(), tracing.Options{Getenv: envOf(map[string]string{
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(context.Background()) }()
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(time.Millisecond))
	defer cancel()
	if err := tr.Flush(ctx); err == nil || !strings.Contains(err.Error(), "no time left") {
		t.Errorf("Flush with 1ms left: %v; want no time left", err)
	}
}

func TestFlushTimeoutVariable(t *testing.T) {
	for _, v := range []string{"500", "0s", "-1s", "soon"} {
		_, err := tracing.FromEnv(t.Context(), tracing.Options{Getenv: envOf(map[string]string{
			"OTEL_TRACES_EXPORTER": "console", "SLOTQ_TRACE_FLUSH_TIMEOUT": v,
		}), Console: io.Discard})
		if err == nil || !strings.Contains(err.Error(), "SLOTQ_TRACE_FLUSH_TIMEOUT") {
			t.Errorf("SLOTQ_TRACE_FLUSH_TIMEOUT=%q: %v; want an error naming it", v, err)
		}
	}
}
