package engine

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotq/slotq/internal/job"
)

// Tracing. A job carries a W3C trace context in its record
// (job.Job.TraceParent): its producer's, or, for a job enqueued without
// one while the engine traces, its enqueue span's. With a Tracer
// (Options.Tracer) the engine makes these spans:
//
//	enqueue <queue>  one per Enqueue call (kind producer), a child of the
//	                 caller's span (ctx) or of the first job's context,
//	                 linked to every other job's
//	attempt <queue>  one per attempt, from the gate's reservation to the
//	                 recorded outcome (kind consumer): a child of the
//	                 job's context, linked to it and to the job's
//	                 previous attempt (job.Job.AttemptSpan)
//	call <queue>     the target's call inside the attempt (kind client);
//	                 its context is the target's: a Go handler's ctx, an
//	                 HTTP target's traceparent header, a Lambda target's
//	                 client context (internal/dispatch)
//	resume           one per Resume run, with a child per queue's pass:
//	release <queue>  what the pass lifted, re-ticketed and released
//
// Without a Tracer none of this runs: the only work left is that a job
// carrying a traceparent hands it to its target (remoteContext), so a
// producer's trace reaches the target even when slotq does not export.

// tracerName is the instrumentation scope of slotq's spans.
const tracerName = "github.com/slotq/slotq"

// Attribute keys: OpenTelemetry's messaging conventions where one
// fits, slotq's own (slotq.*) for the rest.
const (
	attrSystem      = attribute.Key("messaging.system")
	attrDestination = attribute.Key("messaging.destination.name")
	attrOperation   = attribute.Key("messaging.operation.type")
	attrMessageID   = attribute.Key("messaging.message.id")
	attrBatchCount  = attribute.Key("messaging.batch.message_count")
	attrTicket      = attribute.Key("slotq.ticket")
	attrAttempt     = attribute.Key("slotq.attempt")
	attrSlotAt      = attribute.Key("slotq.slot_at")
	attrLateness    = attribute.Key("slotq.lateness_ms")
	attrOutcome     = attribute.Key("slotq.outcome")
	attrKey         = attribute.Key("slotq.key")
	attrTarget      = attribute.Key("slotq.target")
	attrLink        = attribute.Key("slotq.link")
)

// Outcomes of an attempt's span (slotq.outcome).
const (
	// OutcomeSucceeded and OutcomeFailed: the target ran; the record
	// says whether a failed job is retried or dead-lettered.
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	// OutcomeNotClaimed: the gate passed the ticket but the claim was
	// refused (another delivery of the message claimed it, or the job
	// was cancelled) or failed; the target did not run.
	OutcomeNotClaimed = "not_claimed"
	// OutcomeMissed: the worker woke too late for the start the gate
	// reserved; the target did not run, and the job took a new ticket
	// or the next opening.
	OutcomeMissed = "missed"
	// OutcomeSlowedDown: the target answered "slow down"; the job waits
	// at its ticket for the slow-down's end (not a failed attempt).
	OutcomeSlowedDown = "slowed_down"
)

var w3c propagation.TraceContext

// remoteContext returns ctx carrying the span context of a W3C
// traceparent and tracestate; ctx as it is when parent is empty or does
// not parse.
func remoteContext(ctx context.Context, parent, state string) context.Context {
	if parent == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": parent, "tracestate": state})
}

// spanContextOf parses a W3C traceparent (and tracestate); invalid when
// it is empty or does not parse.
func spanContextOf(parent, state string) trace.SpanContext {
	if parent == "" {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(remoteContext(context.Background(), parent, state))
}

// traceParentOf formats the span context of ctx as W3C traceparent and
// tracestate; empty when ctx carries none.
func traceParentOf(ctx context.Context) (parent, state string) {
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

func endNothing(error) {}

// traceEnqueue starts an Enqueue call's span. It returns the context
// the call's jobs take their trace context from (see carryTrace) and
// the function that ends the span.
func (e *core) traceEnqueue(ctx context.Context, req *job.EnqueueRequest) (context.Context, func(error)) {
	if e.tracer == nil {
		return ctx, endNothing
	}
	specs := req.Specs()
	parent, links := ctx, []trace.Link(nil)
	caller := trace.SpanContextFromContext(ctx)
	for _, s := range specs {
		sc := spanContextOf(s.TraceParent, s.TraceState)
		switch {
		case !sc.IsValid() || sc.Equal(caller):
		case !caller.IsValid():
			caller, parent = sc, trace.ContextWithRemoteSpanContext(ctx, sc)
		case !hasLink(links, sc):
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attrLink.String("producer")}})
		}
	}
	attrs := []attribute.KeyValue{
		attrSystem.String("slotq"), attrDestination.String(req.Queue), attrOperation.String("send"),
		attrBatchCount.Int(len(specs)),
	}
	if len(specs) == 1 && specs[0].ID != "" {
		attrs = append(attrs, attrMessageID.String(specs[0].ID))
	}
	sctx, span := e.tracer.Start(parent, "enqueue "+req.Queue, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithTimestamp(e.now()), trace.WithLinks(links...), trace.WithAttributes(attrs...))
	return sctx, func(err error) { e.endSpan(span, err) }
}

func hasLink(links []trace.Link, sc trace.SpanContext) bool {
	for _, l := range links {
		if l.SpanContext.Equal(sc) {
			return true
		}
	}
	return false
}

// carryTrace gives a new job its trace context: the one its spec
// carries, or else, when the engine traces, the enqueue span's (ctx,
// from traceEnqueue), so a job enqueued without one still has its
// attempts in one trace.
func (e *core) carryTrace(ctx context.Context, j *job.Job, s job.Spec) {
	j.TraceParent, j.TraceState = s.TraceParent, s.TraceState
	if j.TraceParent == "" && e.tracer != nil {
		j.TraceParent, j.TraceState = traceParentOf(ctx)
	}
}

// traceAttempt starts the span of the attempt whose ticket just passed
// the gate, and writes its context into the record (job.Job.AttemptSpan),
// so the claim stores it for the next attempt to link to. Without a
// Tracer it only puts the job's trace context on ctx for the target.
func (d *delivery) traceAttempt(ctx context.Context) context.Context {
	e, j := d.e, &d.j
	parent := remoteContext(ctx, j.TraceParent, j.TraceState)
	if e.tracer == nil {
		return parent
	}
	var links []trace.Link
	if sc := trace.SpanContextFromContext(parent); sc.IsValid() {
		links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attrLink.String("producer")}})
	}
	if sc := spanContextOf(j.AttemptSpan, ""); sc.IsValid() {
		links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attrLink.String("previous_attempt")}})
	}
	attrs := []attribute.KeyValue{
		attrSystem.String("slotq"), attrDestination.String(j.Queue), attrOperation.String("process"),
		attrMessageID.String(j.ID), attrTicket.Int64(j.Ticket), attrAttempt.Int(j.Attempt),
		attrSlotAt.String(j.SlotAt.UTC().Format(time.RFC3339Nano)),
	}
	if j.Key != "" {
		attrs = append(attrs, attrKey.String(j.Key))
	}
	actx, _ := e.tracer.Start(parent, "attempt "+j.Queue, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithTimestamp(e.now()), trace.WithLinks(links...), trace.WithAttributes(attrs...))
	j.AttemptSpan, _ = traceParentOf(actx)
	return actx
}

// endAttemptSpan ends the attempt's span (ctx, from traceAttempt) with its
// outcome; err is the step's error, if the step failed.
func (d *delivery) endAttemptSpan(ctx context.Context, outcome string, err error) {
	if d.e.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attrOutcome.String(outcome))
	d.e.endSpan(span, err)
}

// outcomeOf is the outcome of an attempt whose target ended with runErr.
func outcomeOf(runErr error) string {
	if _, ok := slowDownOf(runErr); ok {
		return OutcomeSlowedDown
	}
	if runErr != nil {
		return OutcomeFailed
	}
	return OutcomeSucceeded
}

// traceCall starts the span of the target's call, now, inside the
// attempt's span, and marks the attempt with the start's lateness. Its
// context is the target's. The function returned ends it.
func (d *delivery) traceCall(ctx context.Context, now time.Time) (context.Context, func(error)) {
	if d.e.tracer == nil {
		return ctx, endNothing
	}
	j := &d.j
	late := now.Sub(j.SlotAt)
	trace.SpanFromContext(ctx).SetAttributes(attrLateness.Int64(late.Milliseconds()))
	cctx, span := d.e.tracer.Start(ctx, "call "+j.Queue, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(now), trace.WithAttributes(attrTarget.String(j.What()), attrLateness.Int64(late.Milliseconds())))
	return cctx, func(err error) { d.e.endSpan(span, err) }
}

// traceResume starts a Resume run's span; the function returned ends it
// with the run's report.
func (e *core) traceResume(ctx context.Context) (context.Context, func(*ResumeReport, error)) {
	if e.tracer == nil {
		return ctx, func(*ResumeReport, error) {}
	}
	rctx, span := e.tracer.Start(ctx, "resume", trace.WithTimestamp(e.now()))
	return rctx, func(rep *ResumeReport, err error) {
		span.SetAttributes(
			attribute.Int("slotq.due", rep.Due), attribute.Int("slotq.queues", rep.Queues),
			attribute.Int("slotq.deferred", rep.Deferred))
		e.endSpan(span, err)
	}
}

// traceRound starts the span of one Resume pass over a queue (its
// release round); the function returned ends it with what it did.
func (e *core) traceRound(ctx context.Context, queue string) (context.Context, func(ResumeReport, error)) {
	if e.tracer == nil {
		return ctx, func(ResumeReport, error) {}
	}
	rctx, span := e.tracer.Start(ctx, "release "+queue, trace.WithTimestamp(e.now()),
		trace.WithAttributes(attrSystem.String("slotq"), attrDestination.String(queue)))
	return rctx, func(rep ResumeReport, err error) {
		span.SetAttributes(
			attribute.Int("slotq.lifted", rep.Lifted), attribute.Int("slotq.reticketed", rep.Reticketed),
			attribute.Int("slotq.released", rep.Released), attribute.Int("slotq.held", rep.Held),
			attribute.Int("slotq.busy", rep.Busy), attribute.Int("slotq.continued", rep.Continued))
		e.endSpan(span, err)
	}
}

// endSpan ends span now, by the engine's clock, marking it failed with
// err.
func (e *core) endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(trace.WithTimestamp(e.now()))
}
