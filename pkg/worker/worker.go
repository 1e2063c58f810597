package worker

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	lambdasvc "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/lambdafn"
	workerfn "github.com/slotq/slotq/internal/lambdafn/worker"
	"github.com/slotq/slotq/internal/tracing"
	"github.com/slotq/slotq/pkg/target"
)

// Options configure NewHandler. The zero value is what Start uses.
type Options struct {
	// Logger receives the worker's logs and the built-in kinds' output.
	// Default lambdafn.Logger(): JSON or text as the function's logging
	// configuration says, each record with its request id.
	Logger *slog.Logger
	// Getenv reads the function's environment. Default os.Getenv.
	Getenv func(string) string
}

// Handler is the worker function's handler: an SQS batch of the slot
// queue's messages in, the partial batch response out.
type Handler struct {
	h       *workerfn.Handler
	tracing *tracing.Tracing
}

// Handle runs a batch: each message's job starts at its slot, through
// the queue's gate, and the messages to deliver again are listed in the
// answer's BatchItemFailures.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return tracing.Flushed(h.tracing, h.h.Handle)(ctx, ev)
}

// NewHandler returns the worker function's handler: it reads and checks
// the environment (lambdafn.Worker's variables; the error names the bad
// one), loads the AWS configuration (region, credentials, endpoints from
// AWS_ENDPOINT_URL_*) and builds the engine on the table and slot queue
// the environment names. Jobs with a kind run mux's handlers, to which
// the built-in kinds (echo, sleep, fail) are added unless mux has a handler of that
// name, as local.Run does; http(s) targets get a POST; Lambda targets an
// Invoke through a client built here. A nil mux has the built-ins only.
// Tracing follows the OTEL_* variables (docs/tracing.md): off unless
// OTEL_TRACES_EXPORTER names an exporter; each attempt's span is in the
// context a handler gets.
//
// Start calls it; call it yourself to wrap the handler, or to test your
// main's wiring.
func NewHandler(ctx context.Context, mux *target.Mux, o Options) (*Handler, error) {
	if o.Logger == nil {
		o.Logger = lambdafn.Logger()
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if mux == nil {
		mux = target.NewMux()
	}
	cfg, err := lambdafn.Load(lambdafn.Worker, o.Getenv)
	if err != nil {
		return nil, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	workerfn.Builtin(mux, o.Logger)
	runner := &dispatch.Dispatcher{
		Mux:    mux,
		Lambda: &dispatch.Lambda{API: lambdasvc.NewFromConfig(awsCfg)},
	}
	rec := cfg.Recorder(o.Logger)
	cfg.Observer = rec
	tr, err := tracing.FromEnv(ctx, tracing.Options{Getenv: o.Getenv, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	cfg.Tracer = tr.Provider()
	return &Handler{
		h:       &workerfn.Handler{Engine: cfg.Engine(awsCfg, runner, o.Logger), Log: o.Logger, Metrics: rec},
		tracing: tr,
	}, nil
}

// Start is a worker function's main: it builds the handler with
// NewHandler, once, at init, and hands it to lambda.Start, which serves
// the function's invocations and never returns. A bad environment is
// logged, naming the variable, and the process exits: Lambda reports the
// init failure.
func Start(mux *target.Mux) {
	log := lambdafn.Logger()
	h, err := NewHandler(context.Background(), mux, Options{Logger: log})
	if err != nil {
		log.Error("worker: bad configuration", "function", lambdafn.Worker.Function, "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
