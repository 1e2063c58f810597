package engine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// benchInterval is the shortest interval a queue may have: BenchmarkWork
// moves its clock on by it before each start, so slots never hold it back.
const benchInterval = slot.MinInterval

const benchKind = "bench"

var benchPayload = json.RawMessage(`{"n":1}`)

// newBenchEngine returns an engine on memstore with queue "bench" at
// benchInterval and a handler of kind benchKind that does nothing. now is
// the engine's clock (nil: time.Now). Its lead is 0: a benchmark measures
// the work path, not a sleep before each start. tracer, if not nil, is
// the engine's (Options.Tracer).
func newBenchEngine(b *testing.B, now func() time.Time, tracer ...trace.TracerProvider) *engine.Engine {
	b.Helper()
	mux := target.NewMux()
	mux.HandleFunc(benchKind, func(context.Context, *api.Job) error { return nil })
	o := engine.Options{
		State:     memstore.New(memstore.Options{Now: now}),
		Transport: memstore.NewTransport(memstore.TransportOptions{}),
		Runner:    &dispatch.Dispatcher{Mux: mux},
		Now:       now,
		Lead:      -1, // none
	}
	for _, t := range tracer {
		o.Tracer = t
	}
	e := engine.New(o)
	if _, err := e.CreateQueue(b.Context(), "bench", slot.Config{Interval: benchInterval}); err != nil {
		b.Fatal(err)
	}
	return e
}

func reportJobsPerSecond(b *testing.B, jobs int) {
	b.ReportMetric(float64(jobs)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEnqueueSingle enqueues one job per call: ticket, job record and
// send.
func BenchmarkEnqueueSingle(b *testing.B) {
	e := newBenchEngine(b, nil)
	ctx := b.Context()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		_, err := e.Enqueue(ctx, job.EnqueueRequest{Queue: "bench", Job: &job.Spec{Kind: benchKind, Payload: benchPayload}})
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportJobsPerSecond(b, n)
}

// BenchmarkEnqueueBatch100 enqueues 100 jobs per call: one ticket range,
// 100 records, one send.
func BenchmarkEnqueueBatch100(b *testing.B) {
	e := newBenchEngine(b, nil)
	ctx := b.Context()
	specs := make([]job.Spec, 100)
	for i := range specs {
		specs[i] = job.Spec{Kind: benchKind, Payload: benchPayload}
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		res, err := e.Enqueue(ctx, job.EnqueueRequest{Queue: "bench", Jobs: specs})
		if err != nil {
			b.Fatal(err)
		}
		n += len(res.Jobs)
	}
	reportJobsPerSecond(b, n)
}

// BenchmarkWork runs the work path for one delivered envelope whose slot
// is due: read the job and queue, pass the gate, run the handler, record
// the outcome. The jobs are enqueued before the timer starts; then the
// engine's clock jumps to each job's slot as its Work call begins, so no
// Work call waits and none comes late.
func BenchmarkWork(b *testing.B) { benchWork(b, nil, "") }

// BenchmarkWorkTraced is BenchmarkWork with tracing, as the functions
// run it with OTEL_TRACES_EXPORTER set: the SDK's provider with its
// batcher, exporting to nowhere; each job carries a producer's
// traceparent. BenchmarkWork is the same path with tracing off.
func BenchmarkWorkTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	benchWork(b, tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
}

// benchWork is BenchmarkWork with tracer as the engine's tracer provider
// (nil: none) and traceparent on each job.
func benchWork(b *testing.B, tracer trace.TracerProvider, traceparent string) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	var e *engine.Engine
	if tracer != nil {
		e = newBenchEngine(b, now, tracer)
	} else {
		e = newBenchEngine(b, now)
	}
	ctx := b.Context()
	// Its own queue at 1,000 a second with a burst: each start keeps the
	// room of its burst (slot.Room) to be made in, so a work path slowed
	// by a busy host still makes its start rather than miss its slot.
	if _, err := e.CreateQueue(ctx, "work", slot.Config{Rate: api.Rate{N: 1000, Per: time.Second}, Burst: 10}); err != nil {
		b.Fatal(err)
	}

	envs := make([]job.Envelope, 0, b.N)
	specs := make([]job.Spec, job.MaxBatch)
	for i := range specs {
		specs[i] = job.Spec{Kind: benchKind, Payload: benchPayload, TraceParent: traceparent}
	}
	for len(envs) < b.N {
		k := min(b.N-len(envs), len(specs))
		res, err := e.Enqueue(ctx, job.EnqueueRequest{Queue: "work", Jobs: specs[:k]})
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range res.Jobs {
			j, err := e.Job(ctx, job.Ref{Queue: "work", ID: a.JobID})
			if err != nil {
				b.Fatal(err)
			}
			envs = append(envs, j.Envelope())
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		offset.Store(int64(envs[i].SlotAt.Sub(time.Now())))
		if err := e.Work(ctx, envs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportJobsPerSecond(b, b.N)

	last := envs[len(envs)-1]
	if j, err := e.Job(ctx, last.Ref()); err != nil || j.Status != job.Succeeded || j.Ticket != last.Ticket {
		b.Fatalf("last job: %+v, %v; want it succeeded on its first ticket", j, err)
	}
}
