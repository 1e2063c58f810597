package dispatch_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/job"
)

// A Lambda target gets the attempt's W3C trace context in its event
// (traceparent, tracestate), and none when the attempt has none.
func TestLambdaTargetGetsTraceContext(t *testing.T) {
	fake := &fakeLambda{out: &lambda.InvokeOutput{StatusCode: 200}}
	d := &dispatch.Dispatcher{Lambda: &dispatch.Lambda{API: fake}}
	j := &job.Job{Queue: "q", ID: "j1", Ticket: 3, Attempt: 1, Target: "lambda:mailer"}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("rojo=1")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts,
	}))
	for _, tt := range []struct {
		ctx           context.Context
		parent, state string
	}{
		{ctx, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=1"},
		{context.Background(), "", ""},
	} {
		if err := d.Run(tt.ctx, j, cfg); err != nil {
			t.Fatal(err)
		}
		var ev dispatch.LambdaEvent
		if err := json.Unmarshal(fake.in.Payload, &ev); err != nil || ev.TraceParent != tt.parent || ev.TraceState != tt.state {
			t.Errorf("event %s (%v); want traceparent %q, tracestate %q", fake.in.Payload, err, tt.parent, tt.state)
		}
	}
}
