package engine_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Tracing: a job's W3C trace context travels from its producer through
// its record to its attempts' spans and its target.

// traced is an in-memory trace: the engine's provider, and a producer's
// span that enqueues under it.
type traced struct {
	exp      *tracetest.InMemoryExporter
	tp       *sdktrace.TracerProvider
	producer trace.SpanContext
	// parent is the producer's traceparent, as a producer in another
	// language puts it in the enqueue request (the Go client does the
	// same from its context).
	parent string
}

func newTraced(t *testing.T) *traced {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("producer").Start(context.Background(), "produce")
	span.End()
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return &traced{exp: exp, tp: tp, producer: span.SpanContext(), parent: c["traceparent"]}
}

// named returns the spans of that name, in the order they ended.
func (tr *traced) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range tr.exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attrOf(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func hasLink(s tracetest.SpanStub, sc trace.SpanContext, kind string) bool {
	for _, l := range s.Links {
		if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
			for _, a := range l.Attributes {
				if string(a.Key) == "slotq.link" && a.Value.AsString() == kind {
					return true
				}
			}
		}
	}
	return false
}

// A job enqueued with its producer's traceparent has an enqueue span and
// an attempt span per attempt in the producer's trace, each attempt with
// the queue, job id, ticket, attempt, slot, lateness and outcome; the
// second attempt links to the first and both to the producer; the Go
// handler runs in the attempt's trace (the call span); and the record
// keeps the producer's context through the retry.
func TestTraceAttemptsInProducersTrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTraced(t)
		var mu sync.Mutex
		var seen []trace.SpanContext // the span context each run's handler saw
		run := runFunc(func(ctx context.Context, j *job.Job, _ slot.Config) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, trace.SpanContextFromContext(ctx))
			if j.Attempt == 1 {
				return errors.New("first attempt fails")
			}
			return nil
		})
		b := newWorkBench(t, engine.Options{Runner: run, Tracer: tr.tp}, nil)
		ctx := context.Background()
		cfg := slot.Config{Interval: 100 * time.Millisecond, MaxAttempts: 2, Backoff: time.Second}
		if _, err := b.eng.CreateQueue(ctx, "q", cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &job.Spec{ID: "j1", Kind: "k", TraceParent: tr.parent}}); err != nil {
			t.Fatal(err)
		}
		first := b.job("q", "j1")
		if err := b.eng.Work(ctx, first.Envelope()); err != nil {
			t.Fatal(err)
		}
		second := b.job("q", "j1")
		if second.Status != job.Queued || second.Attempt != 2 || second.TraceParent != tr.parent {
			t.Fatalf("after the failed attempt: %s attempt %d traceparent %q; want queued, 2, the producer's %q",
				second.Status, second.Attempt, second.TraceParent, tr.parent)
		}
		if err := b.eng.Work(ctx, second.Envelope()); err != nil {
			t.Fatal(err)
		}
		if j := b.job("q", "j1"); j.Status != job.Succeeded || j.TraceParent != tr.parent {
			t.Fatalf("end: %s, traceparent %q; want succeeded with the producer's", j.Status, j.TraceParent)
		}

		enq := tr.named("enqueue q")
		if len(enq) != 1 || enq[0].SpanContext.TraceID() != tr.producer.TraceID() || enq[0].Parent.SpanID() != tr.producer.SpanID() ||
			enq[0].SpanKind != trace.SpanKindProducer {
			t.Fatalf("enqueue spans: %+v; want one, a producer child of the producer's span", enq)
		}
		attempts := tr.named("attempt q")
		if len(attempts) != 2 {
			t.Fatalf("%d attempt spans; want 2", len(attempts))
		}
		tickets := []int64{first.Ticket, second.Ticket}
		outcomes := []string{engine.OutcomeFailed, engine.OutcomeSucceeded}
		for i, a := range attempts {
			if a.SpanContext.TraceID() != tr.producer.TraceID() || a.Parent.SpanID() != tr.producer.SpanID() {
				t.Errorf("attempt %d: trace %s parent %s; want the producer's trace %s and span %s",
					i+1, a.SpanContext.TraceID(), a.Parent.SpanID(), tr.producer.TraceID(), tr.producer.SpanID())
			}
			if !hasLink(a, tr.producer, "producer") {
				t.Errorf("attempt %d: no link to the producer's span: %+v", i+1, a.Links)
			}
			want := map[string]attribute.Value{
				"messaging.destination.name": attribute.StringValue("q"),
				"messaging.message.id":       attribute.StringValue("j1"),
				"slotq.ticket":               attribute.Int64Value(tickets[i]),
				"slotq.attempt":              attribute.IntValue(i + 1),
				"slotq.outcome":              attribute.StringValue(outcomes[i]),
			}
			for k, v := range want {
				if got, ok := attrOf(a, k); !ok || got != v {
					t.Errorf("attempt %d: %s = %v; want %v", i+1, k, got.Emit(), v.Emit())
				}
			}
			for _, k := range []string{"slotq.slot_at", "slotq.lateness_ms"} {
				if _, ok := attrOf(a, k); !ok {
					t.Errorf("attempt %d: no %s", i+1, k)
				}
			}
		}
		if slotAt, _ := attrOf(attempts[1], "slotq.slot_at"); slotAt.AsString() != second.SlotAt.UTC().Format(time.RFC3339Nano) {
			t.Errorf("attempt 2: slot_at %s; want %s", slotAt.Emit(), second.SlotAt.UTC().Format(time.RFC3339Nano))
		}
		if !hasLink(attempts[1], attempts[0].SpanContext, "previous_attempt") {
			t.Errorf("attempt 2 does not link to attempt 1: %+v", attempts[1].Links)
		}
		if len(attempts[0].Links) != 1 {
			t.Errorf("attempt 1 links %+v; want the producer's alone", attempts[0].Links)
		}
		calls := tr.named("call q")
		if len(calls) != 2 || len(seen) != 2 {
			t.Fatalf("%d call spans, %d runs; want 2 each", len(calls), len(seen))
		}
		for i, c := range calls {
			if c.Parent.SpanID() != attempts[i].SpanContext.SpanID() || seen[i].SpanID() != c.SpanContext.SpanID() {
				t.Errorf("call %d: parent %s, the handler saw %s; want the attempt %s and the call %s",
					i+1, c.Parent.SpanID(), seen[i].SpanID(), attempts[i].SpanContext.SpanID(), c.SpanContext.SpanID())
			}
		}
	})
}

// An HTTP target on loopback receives a traceparent of the producer's
// trace: the call span's, when the engine traces; the producer's own,
// when it does not (the context passes through, nothing is exported).
func TestTraceHTTPTargetGetsTraceparent(t *testing.T) {
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "tracing on", false: "tracing off"}[on]
		t.Run(name, func(t *testing.T) {
			tr := newTraced(t)
			got := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case got <- r.Header.Get("traceparent"):
				default:
				}
			}))
			defer srv.Close()
			o := engine.Options{Runner: &dispatch.Dispatcher{}}
			if on {
				o.Tracer = tr.tp
			}
			b := newWorkBench(t, o, nil)
			ctx := context.Background()
			cfg := slot.Config{Interval: time.Second, Skew: 500 * time.Millisecond, Targets: []string{srv.URL + "/*"}, AllowNetworks: []string{"127.0.0.1/32"}}
			if _, err := b.eng.CreateQueue(ctx, "q", cfg); err != nil {
				t.Fatal(err)
			}
			spec := &job.Spec{ID: "j1", Target: srv.URL + "/hook", TraceParent: tr.parent, TraceState: "rojo=00f067aa0ba902b7"}
			if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: spec}); err != nil {
				t.Fatal(err)
			}
			j := b.job("q", "j1")
			if err := b.eng.Work(ctx, j.Envelope()); err != nil {
				t.Fatal(err)
			}
			if j := b.job("q", "j1"); j.Status != job.Succeeded {
				t.Fatalf("job %s (%s); want succeeded", j.Status, j.LastError)
			}
			var header string
			select {
			case header = <-got:
			default:
				t.Fatal("the target got no request")
			}
			sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": header}))
			if !sc.IsValid() || sc.TraceID() != tr.producer.TraceID() {
				t.Fatalf("target's traceparent %q; want one of the producer's trace %s", header, tr.producer.TraceID())
			}
			if !on {
				if header != tr.parent {
					t.Errorf("traceparent %q; want the producer's own %q", header, tr.parent)
				}
				if n := len(tr.exp.GetSpans()) - len(tr.named("produce")); n != 0 {
					t.Errorf("%d spans of slotq exported with tracing off", n)
				}
				return
			}
			calls := tr.named("call q")
			if len(calls) != 1 || calls[0].SpanContext.SpanID() != sc.SpanID() {
				t.Errorf("target's parent id %s; want the call span's (%+v)", sc.SpanID(), calls)
			}
		})
	}
}

// newTracedBench is a work bench that traces to tr, whose target
// succeeds, with queue "q" (one start a second) created.
func newTracedBench(t *testing.T) (*traced, *workBench) {
	t.Helper()
	tr := newTraced(t)
	b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error { return nil }), Tracer: tr.tp}, nil)
	if _, err := b.eng.CreateQueue(context.Background(), "q", slot.Config{Interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	return tr, b
}

// A job enqueued without a trace context, while the engine traces, takes
// its enqueue span's: its attempts are in the enqueue's trace. Parked far
// ahead, it keeps it through the resume run that releases it, which has
// a span per queue's release round.
func TestTraceWithoutProducerAndThroughPark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, b := newTracedBench(t)
		ctx := context.Background()
		nb := time.Now().Add(time.Hour)
		if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &job.Spec{ID: "j1", Kind: "k", NotBefore: &nb}}); err != nil {
			t.Fatal(err)
		}
		enq := tr.named("enqueue q")
		parked := b.job("q", "j1")
		if len(enq) != 1 || parked.Status != job.Parked {
			t.Fatalf("%d enqueue spans, job %s; want 1, parked", len(enq), parked.Status)
		}
		want := enq[0].SpanContext
		if sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": parked.TraceParent})); sc.SpanID() != want.SpanID() {
			t.Fatalf("record's traceparent %q; want the enqueue span's %s", parked.TraceParent, want.SpanID())
		}
		time.Sleep(time.Hour)
		if _, err := b.eng.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		released := b.job("q", "j1")
		if released.Status != job.Queued || released.TraceParent != parked.TraceParent {
			t.Fatalf("after resume: %s, traceparent %q; want queued with %q", released.Status, released.TraceParent, parked.TraceParent)
		}
		rounds := tr.named("release q")
		if len(rounds) != 1 || len(tr.named("resume")) != 1 || rounds[0].Parent.SpanID() != tr.named("resume")[0].SpanContext.SpanID() {
			t.Fatalf("release spans %d, resume spans %d; want one round inside one run", len(rounds), len(tr.named("resume")))
		}
		if v, _ := attrOf(rounds[0], "slotq.released"); v.AsInt64() != 1 {
			t.Errorf("release round: released %v; want 1", v.Emit())
		}
		if err := b.eng.Work(ctx, released.Envelope()); err != nil {
			t.Fatal(err)
		}
		attempts := tr.named("attempt q")
		if len(attempts) != 1 || attempts[0].SpanContext.TraceID() != want.TraceID() || attempts[0].Parent.SpanID() != want.SpanID() {
			t.Fatalf("attempt spans %+v; want one, a child of the enqueue span", attempts)
		}
	})
}

// Jobs held by a pause keep their producer's context through the release
// round that gives them new tickets after it.
func TestTraceSurvivesReticket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, b := newTracedBench(t)
		ctx := context.Background()
		specs := []job.Spec{{ID: "a", Kind: "k", TraceParent: tr.parent}, {ID: "b", Kind: "k", TraceParent: tr.parent, TraceState: "rojo=1"}}
		before := map[string]job.Job{}
		if _, err := b.eng.Pause(ctx, "q", time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Jobs: specs}); err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			before[s.ID] = b.job("q", s.ID)
		}
		time.Sleep(time.Hour) // their slots pass while the queue is paused
		if _, err := b.eng.Unpause(ctx, "q"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			j := b.job("q", s.ID)
			if j.Ticket == before[s.ID].Ticket || j.Status != job.Queued {
				t.Fatalf("%s: %s at ticket %d (was %d, %s); want queued at a new ticket", s.ID, j.Status, j.Ticket, before[s.ID].Ticket, before[s.ID].Status)
			}
			if j.TraceParent != s.TraceParent || j.TraceState != s.TraceState {
				t.Errorf("%s after its re-ticket: %q, %q; want %q, %q", s.ID, j.TraceParent, j.TraceState, s.TraceParent, s.TraceState)
			}
		}
	})
}
