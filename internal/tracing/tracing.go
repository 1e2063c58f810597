// Package tracing builds the OpenTelemetry tracer provider slotq's
// runtime hands the engine (engine.Options.Tracer), from OpenTelemetry's
// standard environment variables, the way the contrib autoexport module
// reads them, for traces only and without its metrics and logs
// exporters (which would double a Lambda binary):
//
//	OTEL_TRACES_EXPORTER   none (or unset): no tracing at all; console:
//	                       spans as JSON lines on the console writer
//	                       (stdout); otlp: OTLP to a collector; a list
//	                       ("otlp,console") uses each
//	OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL
//	                       http/protobuf, the only one (and the default)
//	OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
//	                       the collector (default http://localhost:4318,
//	                       where the ADOT Lambda layer listens)
//	OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS,
//	OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
//	OTEL_EXPORTER_OTLP_COMPRESSION, OTEL_EXPORTER_OTLP_TRACES_COMPRESSION
//	                       headers, timeout (ms), gzip
//	OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_BSP_*
//	                       read by the SDK (default: parent-based,
//	                       always on)
//	OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
//	                       the resource (service.name defaults to the
//	                       function's name)
//	OTEL_SDK_DISABLED      true: no tracing, whatever else is set
//	SLOTQ_TRACE_FLUSH_TIMEOUT
//	                       slotq's own: how long a Lambda invocation
//	                       waits for its spans to be exported before it
//	                       returns (a Go duration, default 500ms; see
//	                       Flushed)
//
// Unlike autoexport, an unset OTEL_TRACES_EXPORTER means none, not
// otlp: slotq exports nothing, and costs nothing, unless asked to. The
// OTLP exporter is slotq's own (otlp.go), OTLP/HTTP with protobuf: the
// SDK's otlptracehttp links the gRPC runtime through the collector's
// service stubs and would double the size of every function's binary.
//
// Where it sits: in slotq's runtime, beside internal/engine; the
// functions (internal/lambdafn, pkg/worker) and the local runtime
// (pkg/local) build one from their environment. docs/tracing.md is the
// user's page.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The variables FromEnv reads itself; the exporters and the SDK read
// the others.
const (
	EnvExporter          = "OTEL_TRACES_EXPORTER"
	EnvProtocol          = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol    = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvDisabled          = "OTEL_SDK_DISABLED"
	EnvEndpoint          = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint    = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvHeaders           = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders     = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvTimeout           = "OTEL_EXPORTER_OTLP_TIMEOUT"
	EnvTracesTimeout     = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
	EnvCompression       = "OTEL_EXPORTER_OTLP_COMPRESSION"
	EnvTracesCompression = "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"
	EnvFlushTimeout      = "SLOTQ_TRACE_FLUSH_TIMEOUT"
	envLambdaFunction    = "AWS_LAMBDA_FUNCTION_NAME"
	envRegion            = "AWS_REGION"
	protocolHTTPProtobuf = "http/protobuf"
)

// Options configure FromEnv. The zero value reads the process's
// environment and writes console spans to stdout.
type Options struct {
	// Getenv reads the variables FromEnv decides on. Default os.Getenv.
	// (The exporters and the SDK read theirs from the process.)
	Getenv func(string) string
	// Console receives the console exporter's spans, one JSON object a
	// line. Default os.Stdout.
	Console io.Writer
	// ServiceName is service.name when OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES name none. Default the Lambda function's
	// name (AWS_LAMBDA_FUNCTION_NAME), else "slotq".
	ServiceName string
	// Logger receives a warning when an invocation's spans could not be
	// exported. Default: nothing is logged.
	Logger *slog.Logger
}

// DefaultFlushTimeout bounds the export of an invocation's spans before
// it returns (SLOTQ_TRACE_FLUSH_TIMEOUT). An export to the collector
// beside the function (the ADOT layer on localhost) takes milliseconds;
// the bound only matters when the collector does not answer, and then it
// keeps an invocation's answer late by at most this much: well inside the
// 7 s the worker keeps in hand after its targets and the enqueue
// function's 15 s timeout. The exporter's own timeout
// (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s) would not.
const DefaultFlushTimeout = 500 * time.Millisecond

// flushReserve is what a flush leaves of the invocation's time: Lambda
// must still get the answer before the deadline.
const flushReserve = 100 * time.Millisecond

// Tracing is the tracer provider built from the environment, or nothing
// when tracing is off. A nil *Tracing is off.
type Tracing struct {
	provider     *sdktrace.TracerProvider
	flushTimeout time.Duration
	log          *slog.Logger
	// dropped counts the spans an exporter failed to send (the batch
	// processor does not send them again).
	dropped atomic.Int64
}

// FromEnv builds tracing as the OTEL_* variables say (see the package
// comment). Tracing off is a Tracing whose Provider is nil. An error
// names the bad variable.
func FromEnv(ctx context.Context, o Options) (*Tracing, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Console == nil {
		o.Console = os.Stdout
	}
	if strings.EqualFold(strings.TrimSpace(o.Getenv(EnvDisabled)), "true") {
		return &Tracing{}, nil
	}
	flushTimeout := DefaultFlushTimeout
	if v := strings.TrimSpace(o.Getenv(EnvFlushTimeout)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s: %q is no positive duration (such as 500ms)", EnvFlushTimeout, v)
		}
		flushTimeout = d
	}
	var exporters []sdktrace.SpanExporter
	for name := range strings.SplitSeq(o.Getenv(EnvExporter), ",") {
		var exp sdktrace.SpanExporter
		var err error
		switch name = strings.TrimSpace(name); name {
		case "", "none":
			continue
		case "console":
			exp, err = stdouttrace.New(stdouttrace.WithWriter(o.Console))
		case "otlp":
			exp, err = otlp(ctx, o.Getenv)
		default:
			err = fmt.Errorf("%s: %q is no exporter slotq knows: want otlp, console or none", EnvExporter, name)
		}
		if err != nil {
			for _, e := range exporters {
				_ = e.Shutdown(ctx)
			}
			return nil, err
		}
		exporters = append(exporters, exp)
	}
	if len(exporters) == 0 {
		return &Tracing{}, nil
	}
	res, err := newResource(ctx, o)
	if err != nil {
		return nil, err
	}
	t := &Tracing{flushTimeout: flushTimeout, log: o.Logger}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, e := range exporters {
		opts = append(opts, sdktrace.WithBatcher(counted{e, &t.dropped}))
	}
	t.provider = sdktrace.NewTracerProvider(opts...)
	return t, nil
}

// counted is an exporter that counts the spans it failed to send.
type counted struct {
	sdktrace.SpanExporter
	dropped *atomic.Int64
}

func (c counted) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		c.dropped.Add(int64(len(spans)))
	}
	return err
}

// MustFromEnv is FromEnv for a function's main, at init: on a bad
// variable it logs the error, naming it, and exits (Lambda reports the
// init failure).
func MustFromEnv(log *slog.Logger) *Tracing {
	t, err := FromEnv(context.Background(), Options{Logger: log})
	if err != nil {
		log.Error("bad tracing configuration", "error", err.Error())
		os.Exit(1)
	}
	return t
}

// otlp returns the OTLP exporter of the protocol the variables name.
func otlp(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	name, proto := EnvTracesProtocol, strings.TrimSpace(getenv(EnvTracesProtocol))
	if proto == "" {
		name, proto = EnvProtocol, strings.TrimSpace(getenv(EnvProtocol))
	}
	if proto != "" && proto != protocolHTTPProtobuf {
		// gRPC would take the gRPC runtime into every function: OTLP
		// over HTTP is what collectors (and the ADOT layer) take too.
		return nil, fmt.Errorf("%s: %q is no OTLP protocol slotq exports with: want %s", name, proto, protocolHTTPProtobuf)
	}
	return newOTLP(getenv)
}

// newResource is the resource of slotq's spans: service.name (and, on
// Lambda, the function and region) under what OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES say.
func newResource(ctx context.Context, o Options) (*resource.Resource, error) {
	fn := o.Getenv(envLambdaFunction)
	service := o.ServiceName
	if service == "" {
		service = fn
	}
	if service == "" {
		service = "slotq"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", service)}
	if fn != "" {
		attrs = append(attrs, attribute.String("cloud.provider", "aws"), attribute.String("faas.name", fn))
		if r := o.Getenv(envRegion); r != "" {
			attrs = append(attrs, attribute.String("cloud.region", r))
		}
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return res, nil
}

// Provider returns the tracer provider for engine.Options.Tracer; nil
// when tracing is off.
func (t *Tracing) Provider() trace.TracerProvider {
	if !t.On() {
		return nil
	}
	return t.provider
}

// On reports whether spans are exported.
func (t *Tracing) On() bool { return t != nil && t.provider != nil }

// Flush exports the spans ended so far, waiting at most the flush
// timeout (SLOTQ_TRACE_FLUSH_TIMEOUT) and never past ctx's deadline less
// a moment for the answer. A Lambda function calls it before each
// invocation returns: a frozen function exports nothing, and one that is
// never thawed again loses what it kept. An error says the spans were not
// all sent (Dropped counts those an exporter failed on).
func (t *Tracing) Flush(ctx context.Context) error {
	if !t.On() {
		return nil
	}
	bound := t.flushTimeout
	if bound <= 0 {
		bound = DefaultFlushTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		bound = min(bound, time.Until(dl)-flushReserve)
	}
	if bound <= 0 {
		// No time left: the spans stay queued for a later invocation.
		return fmt.Errorf("flush spans: no time left before the invocation's deadline")
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if err := t.provider.ForceFlush(ctx); err != nil {
		return fmt.Errorf("flush spans within %v: %w", bound, err)
	}
	return nil
}

// Dropped returns how many spans an exporter failed to send since
// tracing was built (a collector that refused them, or did not answer
// within the flush's bound).
func (t *Tracing) Dropped() int64 {
	if !t.On() {
		return 0
	}
	return t.dropped.Load()
}

// Shutdown flushes and stops the exporters.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.On() {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Flushed wraps a Lambda handler so that each invocation's spans are
// exported (Flush) before it returns; with tracing off it is h itself.
// The flush is bounded (Flush) and never changes the invocation's
// answer: a collector that is away or slow costs spans, counted and
// logged as a warning (dropped_spans, the total so far), not the
// invocation.
func Flushed[E, R any](t *Tracing, h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	if !t.On() {
		return h
	}
	return func(ctx context.Context, ev E) (R, error) {
		r, err := h(ctx, ev)
		if ferr := t.Flush(ctx); ferr != nil && t.log != nil {
			t.log.WarnContext(ctx, "spans not exported", "error", ferr.Error(), "dropped_spans", t.Dropped())
		}
		return r, err
	}
}
