package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	lambdasvc "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/internal/cli/console"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/lambdafn/admin"
	"github.com/slotq/slotq/internal/lambdafn/enqueue"
	"github.com/slotq/slotq/internal/lambdafn/resume"
	workerfn "github.com/slotq/slotq/internal/lambdafn/worker"
	"github.com/slotq/slotq/internal/local/esm"
	"github.com/slotq/slotq/internal/local/lambdahost"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/metrics"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/internal/sqstransport"
	"github.com/slotq/slotq/internal/startlog"
	"github.com/slotq/slotq/internal/tracing"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
	"github.com/slotq/slotq/pkg/target"
)

// DefaultAddr is where the Invoke API listens by default, as `sam local
// start-lambda` does.
const DefaultAddr = "127.0.0.1:3001"

// Options configure Run. The zero value runs the stack on the embedded
// backend with template.yaml's settings.
type Options struct {
	// Addr is the Invoke API's address. Default DefaultAddr.
	Addr string
	// Mux holds the worker's Go handlers by job kind. The built-in kinds
	// (echo, sleep, fail) are added unless Mux has a handler of that name. Default: a
	// Mux with the built-ins only.
	Mux *target.Mux
	// AWS, if set, runs the stack on DynamoDB and SQS with this
	// configuration (its endpoints: AWS_ENDPOINT_URL_DYNAMODB and
	// AWS_ENDPOINT_URL_SQS, or AWS itself), creating the table and
	// queues if they are missing. Default nil: the embedded backend, in
	// memory, gone when Run returns.
	AWS *aws.Config
	// StackName prefixes the table and queue names on AWS, as
	// `slotq sam` and samlocal do: <stack>-Table,
	// <stack>-SlotQueue and <stack>-SlotQueue-dlq. Default "slotq".
	StackName string
	// Stack holds the template's settings. Zero fields take
	// StackDefaults'.
	Stack Stack
	// Defaults configure queues created without a configuration (the
	// stack's AllowedTargets and AllowedNetworks, and its limit and skew
	// over Stack.Defaults'). A limit given in any form (Interval, Rate
	// with Burst, Window, Limits) is kept whole: Stack.Defaults' limit
	// fills only a Defaults that gives none.
	Defaults api.Config
	// Lead is how long before a start a worker goes to the gate (the
	// stack's SlotLead). Default: 2ms on the embedded backend, whose
	// store is in the process; the stack's SlotLead on
	// DynamoDB and SQS endpoints (a local DynamoDB or SQS emulator on a
	// busy host may need more).
	Lead time.Duration
	// Concurrency caps the worker invocations in flight at once. Default 5.
	Concurrency int
	// Lease is how long a running attempt may go without an outcome
	// before its redelivered message retries it. Default: the worker's
	// timeout plus a minute, as on the stack.
	Lease time.Duration
	// Logger receives the functions' logs. Default: text at level Warn
	// to stderr.
	Logger *slog.Logger
	// Out receives the live view: a line per start, failure, retry,
	// park and release, and the summary. Default os.Stdout; io.Discard
	// for none.
	Out io.Writer
	// JSON makes the live view JSON lines.
	JSON bool
	// Ready, if set, is called once the Invoke API serves, instead of
	// printing the banner to Out.
	Ready func(Endpoints)
	// Console, if set, is the address of the web console served beside
	// the stack (DefaultConsoleAddr, as `slotq local` and `make run`
	// serve it): pages over the admin function, on loopback only.
	// Default "": none.
	Console string
	// Getenv reads the OTEL_* variables that turn tracing on, as on the
	// stack (docs/tracing.md): OTEL_TRACES_EXPORTER=console prints each
	// span to TraceOut, otlp sends them to a collector. Default
	// os.Getenv. (The SDK reads its own, OTEL_BSP_* and the sampler's,
	// from the process.)
	Getenv func(string) string
	// TraceOut receives the console exporter's spans, one JSON object a
	// line. Default os.Stdout.
	TraceOut io.Writer
}

// DefaultConsoleAddr is where `slotq local` serves the web console.
const DefaultConsoleAddr = console.DefaultAddr

// consoleTimeouts are the console server's (console.DefaultTimeouts where
// zero); tests shorten them.
var consoleTimeouts console.Timeouts

// Endpoints tell where the running stack is.
type Endpoints struct {
	// InvokeURL is the Invoke API's base URL (AWS_ENDPOINT_URL_LAMBDA).
	InvokeURL string
	// Functions are the logical ids it serves.
	Functions []string
	// Backend says what holds the state: "embedded", or the table and
	// queue names.
	Backend string
	// Table and QueueURL, on AWS.
	Table, QueueURL string
	// ConsoleURL is the web console's address, when Options.Console
	// asked for one.
	ConsoleURL string
}

// noLimit reports whether c gives a queue's limit in no form.
func noLimit(c api.Config) bool {
	return c.Interval == 0 && c.Rate.IsZero() && c.Burst == 0 && c.Window.IsZero() && len(c.Limits) == 0
}

func (o *Options) defaults() {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.StackName == "" {
		o.StackName = "slotq"
	}
	d := StackDefaults()
	s := &o.Stack
	if s.Timeouts == nil {
		s.Timeouts = d.Timeouts
	}
	if s.BatchSize <= 0 {
		s.BatchSize = d.BatchSize
		s.ReportBatchItemFailures = d.ReportBatchItemFailures
	}
	if s.VisibilityTimeout <= 0 {
		s.VisibilityTimeout = d.VisibilityTimeout
	}
	if s.MaxReceiveCount <= 0 {
		s.MaxReceiveCount = d.MaxReceiveCount
	}
	if s.ResumeEvery <= 0 {
		s.ResumeEvery = d.ResumeEvery
	}
	if s.ResumeInput == "" {
		s.ResumeInput, s.ResumeRetries = d.ResumeInput, d.ResumeRetries
	}
	if noLimit(s.Defaults) {
		s.Defaults.Interval = d.Defaults.Interval
	}
	if s.Defaults.Skew == 0 {
		s.Defaults.Skew = d.Defaults.Skew
	}
	if s.Lead == 0 {
		s.Lead = d.Lead
	}
	if o.Lead == 0 && o.AWS != nil {
		o.Lead = s.Lead
	}
	if noLimit(o.Defaults) {
		d := s.Defaults
		o.Defaults.Interval, o.Defaults.Rate, o.Defaults.Burst, o.Defaults.Window, o.Defaults.Limits = d.Interval, d.Rate, d.Burst, d.Window, d.Limits
	}
	if o.Defaults.Skew == 0 {
		o.Defaults.Skew = s.Defaults.Skew
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 5
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Mux == nil {
		o.Mux = target.NewMux()
	}
}

// backend is where the stack keeps its state and messages.
type backend struct {
	state     engine.State
	transport engine.Transport
	queue     esm.Queue
	dlq       engine.DeadLetterQueue
	lambda    *dispatch.Lambda
	ends      Endpoints
}

func newBackend(ctx context.Context, o Options) (*backend, error) {
	if o.AWS == nil {
		tr := memstore.NewTransport(memstore.TransportOptions{
			// Whole seconds, as SQS delays: messages arrive a little
			// before their slot and the worker sleeps out the rest.
			WholeSeconds:      true,
			VisibilityTimeout: o.Stack.VisibilityTimeout,
			MaxReceiveCount:   o.Stack.MaxReceiveCount,
		})
		return &backend{
			state: memstore.New(memstore.Options{}), transport: tr, dlq: tr.DeadLetterQueue(),
			queue: esm.NewMemory(tr, "arn:aws:sqs:us-east-1:123456789012:"+o.StackName+"-SlotQueue"),
			ends:  Endpoints{Backend: "embedded (in memory: gone on exit)"},
		}, nil
	}
	ddb := dynamodb.NewFromConfig(*o.AWS, func(d *dynamodb.Options) {
		// DynamoDB Local answers some responses with a CRC32 the SDK
		// refuses (and warns about); a local endpoint needs no check.
		if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" || os.Getenv("AWS_ENDPOINT_URL") != "" {
			d.DisableValidateResponseChecksum = true
		}
	})
	sq := sqs.NewFromConfig(*o.AWS)
	table := o.StackName + "-Table"
	if err := dynamostore.CreateTable(ctx, ddb, table); err != nil {
		return nil, fmt.Errorf("table %s: %w", table, err)
	}
	url, dlqURL, err := sqstransport.CreateQueues(ctx, sq, o.StackName+"-SlotQueue", o.Stack.VisibilityTimeout)
	if err != nil {
		return nil, err
	}
	return &backend{
		state:     dynamostore.New(ddb, table, dynamostore.Options{}),
		transport: sqstransport.New(sq, url, sqstransport.Options{}),
		queue:     esm.NewSQS(sq, url),
		dlq:       sqstransport.NewDeadLetterQueue(sq, dlqURL),
		lambda:    &dispatch.Lambda{API: lambdasvc.NewFromConfig(*o.AWS)},
		ends:      Endpoints{Backend: "DynamoDB table " + table + ", SQS queue " + url, Table: table, QueueURL: url},
	}, nil
}

// Run runs the stack until ctx ends, then stops taking invocations, lets
// the worker invocations in flight hand their messages back (on a
// persistent backend they come back after the visibility timeout), prints
// the summary and returns nil. It returns an error if the stack cannot
// start (the address is taken, DynamoDB or SQS cannot be reached).
func Run(ctx context.Context, o Options) error {
	o.defaults()
	be, err := newBackend(ctx, o)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	tr, err := tracing.FromEnv(ctx, tracing.Options{Getenv: o.Getenv, Console: o.TraceOut, ServiceName: "slotq-local"})
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tr.Shutdown(sctx) // exports what is left
	}()
	view := newView(o.Out, o.JSON)
	log := slog.New(&tap{next: o.Logger.Handler(), view: view})
	workerfn.Builtin(o.Mux, log)
	workerTimeout := o.Stack.Timeouts[WorkerFunction]
	newEngine := func(runner engine.Runner, obs engine.Observer) *engine.Engine {
		return engine.New(engine.Options{
			State: be.state, Transport: be.transport, Runner: runner, Logger: log,
			Defaults: slot.Config(o.Defaults), WorkerTimeout: workerTimeout, Lease: o.Lease, Observer: obs, Lead: o.Lead,
			// The live view and the summary show every queue's figures:
			// locally, reading every queue each run costs nothing.
			Figures: true,
			Tracer:  tr.Provider(),
		})
	}
	// As on the stack, enqueue and admin run no targets; the worker runs
	// them. Unlike the stack's enqueue function, which cannot see the
	// worker's handlers, these share the worker's Mux: a job or a
	// schedule of a kind no handler takes is refused (unknown_kind) at
	// enqueue, not failed when it comes to run. The worker, resume and enqueue write
	// their metrics (EMF lines) through log, where the view reads them.
	workMetrics, resumeMetrics, enqueueMetrics := newRecorder(log), newRecorder(log), newRecorder(log)
	// The tally answers admin stats' recent activity, as CloudWatch
	// does from the metrics on the stack.
	tally := &metrics.Tally{}
	// The ring answers admin starts, as the worker's log does on the
	// stack.
	starts := &startlog.Ring{}
	eng := newEngine(&dispatch.Dispatcher{Mux: o.Mux}, nil) // its kinds only: it runs nothing
	resumeEng := newEngine(nil, engine.Observers{resumeMetrics, tally})
	workEng := newEngine(&dispatch.Dispatcher{Mux: o.Mux, Lambda: be.lambda}, engine.Observers{workMetrics, tally, starts})
	arn := func(name string) string { return "arn:aws:lambda:us-east-1:123456789012:function:" + name }
	inv := lambdahost.NewHandlers(arn, log,
		lambdahost.Handler{Name: EnqueueFunction, Handler: (&enqueue.Handler{Engine: eng, Metrics: enqueueMetrics}).Handle, Timeout: o.Stack.Timeouts[EnqueueFunction]},
		lambdahost.Handler{Name: WorkerFunction, Handler: (&workerfn.Handler{Engine: workEng, Log: log, Metrics: workMetrics}).Handle, Timeout: workerTimeout},
		lambdahost.Handler{Name: ResumeFunction, Handler: (&resume.Handler{Engine: resumeEng, Log: log, Metrics: resumeMetrics}).Handle, Timeout: o.Stack.Timeouts[ResumeFunction]},
		lambdahost.Handler{Name: AdminFunction, Handler: (&admin.Handler{Engine: eng, Defaults: slot.Config(o.Defaults), Activity: tally, DeadLetters: be.dlq, Starts: starts}).Handle, Timeout: o.Stack.Timeouts[AdminFunction]},
	)
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("local: Invoke API: %w", err)
	}
	srv := &http.Server{Handler: lambdahost.InvokeAPI(inv, arn), ReadHeaderTimeout: 10 * time.Second}
	ends := be.ends
	ends.InvokeURL = "http://" + ln.Addr().String()
	ends.Functions = []string{EnqueueFunction, AdminFunction, ResumeFunction, WorkerFunction}
	var consoleLn net.Listener
	if o.Console != "" {
		if consoleLn, err = console.Listen(ctx, o.Console, false); err != nil {
			_ = ln.Close()
			return fmt.Errorf("local: %w", err) // "console: …"
		}
		ends.ConsoleURL = console.URL(consoleLn)
		cl := client.NewFromConfig(aws.Config{}, client.WithEndpoint(ends.InvokeURL))
		consoleSrv := console.Server(console.New(console.FromClient(cl), console.Options{Name: "local", Logger: log}), consoleTimeouts)
		go func() { _ = consoleSrv.Serve(consoleLn) }()
		defer func() { _ = consoleSrv.Close() }()
	}

	err = o.Stack.emulation(inv, be.queue, o.Concurrency, log, func(a esm.Attributes) {
		go func() { _ = srv.Serve(ln) }()
		if o.Ready != nil {
			o.Ready(ends)
		} else {
			view.banner(ends, o.Stack, a, o.Concurrency)
		}
	}).Run(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	view.summary()
	return err
}

// emulation is what AWS plays in front of the stack's functions, with
// s's event source mapping and schedule (StackDefaults' where s leaves
// them zero): the SQS event source of WorkerFunction on q, and the
// schedule of ResumeFunction.
func (s Stack) emulation(inv lambdahost.Invoker, q esm.Queue, concurrency int, log *slog.Logger, started func(esm.Attributes)) esm.Emulation {
	d := StackDefaults()
	if s.BatchSize <= 0 {
		s.BatchSize, s.ReportBatchItemFailures = d.BatchSize, d.ReportBatchItemFailures
	}
	if s.ResumeEvery <= 0 {
		s.ResumeEvery = d.ResumeEvery
	}
	if s.ResumeInput == "" {
		s.ResumeInput, s.ResumeRetries = d.ResumeInput, d.ResumeRetries
	}
	return esm.Emulation{
		Invoker: inv, Queue: q, Worker: WorkerFunction, Resume: ResumeFunction, Log: log, Started: started,
		Mapping: esm.Config{BatchSize: s.BatchSize, BatchingWindow: s.BatchingWindow,
			ReportBatchItemFailures: s.ReportBatchItemFailures, Concurrency: concurrency},
		Every: s.ResumeEvery, Input: []byte(s.ResumeInput), Retries: s.ResumeRetries,
	}
}

// newRecorder is a function's metrics recorder with the stack's default
// namespace and dimension.
func newRecorder(log *slog.Logger) *metrics.Recorder {
	return metrics.New(metrics.Options{Logger: log})
}
