package client_test

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// Enqueue puts the W3C trace context of its ctx on each job that has none
// of its own, leaves a job's own alone, and changes nothing of the
// caller's input.
func TestEnqueueCarriesTraceContext(t *testing.T) {
	s, c := newStub(t)
	s.answer = `{"queue":"q","jobs":[]}`
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("rojo=1")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts,
	}))
	const want = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const own = "00-11111111111111111111111111111111-2222222222222222-00"
	in := &client.EnqueueInput{Queue: "q", Jobs: []api.Spec{{Kind: "k"}, {Kind: "k", TraceParent: own}}}
	if _, err := c.Enqueue(ctx, in); err != nil {
		t.Fatal(err)
	}
	_, body := s.last()
	var sent api.EnqueueRequest
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	if got := sent.Jobs[0]; got.TraceParent != want || got.TraceState != "rojo=1" {
		t.Errorf("job 0 sent with %q, %q; want %q, rojo=1", got.TraceParent, got.TraceState, want)
	}
	if got := sent.Jobs[1]; got.TraceParent != own || got.TraceState != "" {
		t.Errorf("job 1 sent with %q, %q; want its own %q", got.TraceParent, got.TraceState, own)
	}
	if in.Jobs[0].TraceParent != "" {
		t.Errorf("the caller's input was changed: %q", in.Jobs[0].TraceParent)
	}
	// Without a span in ctx, nothing is added.
	if _, err := c.Enqueue(context.Background(), &client.EnqueueInput{Queue: "q", Job: &api.Spec{Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	_, body = s.last()
	if err := json.Unmarshal(body, &sent); err != nil || sent.Job.TraceParent != "" {
		t.Errorf("sent %s; want no traceparent", body)
	}
}
