package lambdafn

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/metrics"
	"github.com/slotq/slotq/internal/sqstransport"
	"github.com/slotq/slotq/internal/startlog"
)

// Logger returns the functions' logger: JSON (or text) as the function's
// logging configuration says (AWS_LAMBDA_LOG_FORMAT, AWS_LAMBDA_LOG_LEVEL,
// which template.yaml sets), with each record carrying the request id.
// Records below SLOTQ_LOG_LEVEL, when it is set, are dropped (a bad value
// is reported by Load).
func Logger() *slog.Logger {
	h := lambdacontext.NewLogHandler()
	if lvl, err := logLevel(os.Getenv(EnvLogLevel)); err == nil && lvl != nil {
		h = minLevel{Handler: h, level: *lvl}
	}
	return slog.New(h)
}

// logLevel parses a level as Lambda spells it; "" is nil.
func logLevel(s string) (*slog.Level, error) {
	var l slog.Level
	switch strings.TrimSpace(s) {
	case "":
		return nil, nil
	case "DEBUG":
		l = slog.LevelDebug
	case "INFO":
		l = slog.LevelInfo
	case "WARN":
		l = slog.LevelWarn
	case "ERROR":
		l = slog.LevelError
	default:
		return nil, fmt.Errorf("want DEBUG, INFO, WARN or ERROR, got %q", s)
	}
	return &l, nil
}

// minLevel drops records below level. Only Enabled filters: a writer that
// calls Handle itself (the metrics' recorder) is written whatever the
// level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), level: h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), level: h.level}
}

// Engine builds the engine on the table and queue of c with clients from
// awsCfg (built once, at init). runner may be nil for functions that run
// no targets.
func (c Config) Engine(awsCfg aws.Config, runner engine.Runner, log *slog.Logger) *engine.Engine {
	return engine.New(engine.Options{
		State:     dynamostore.New(dynamodb.NewFromConfig(awsCfg), c.Table, dynamostore.Options{}),
		Transport: sqstransport.New(sqs.NewFromConfig(awsCfg), c.QueueURL, sqstransport.Options{}),
		Runner:    runner,
		Logger:    log,
		Defaults:  c.Defaults,
		// The lease of a running attempt follows from it, and queue
		// configurations are checked against it.
		WorkerTimeout: c.WorkerTimeout,
		Lead:          c.Lead,
		Observer:      c.Observer,
		// Every queue's figures cost reads of each queue each run: they
		// come with per-queue metrics only (docs/operations.md).
		Figures: c.MetricsDimension != "",
		Tracer:  c.Tracer,
	})
}

// DeadLetters returns the slot queue's dead-letter queue for the admin
// function's redrive, or nil when c names none.
func (c Config) DeadLetters(awsCfg aws.Config) engine.DeadLetterQueue {
	if c.DeadLetterQueueURL == "" {
		return nil
	}
	return sqstransport.NewDeadLetterQueue(sqs.NewFromConfig(awsCfg), c.DeadLetterQueueURL)
}

// Recorder returns a metrics recorder of c's namespace and dimension that
// writes its EMF lines to log.
func (c Config) Recorder(log *slog.Logger) *metrics.Recorder {
	return metrics.New(metrics.Options{Namespace: c.MetricsNamespace, Dimension: c.MetricsDimension, Logger: log})
}

// Activity returns the reader of queues' recent activity from the metrics
// the stack's functions write to CloudWatch (c's namespace and
// dimension), for admin stats.
func (c Config) Activity(awsCfg aws.Config) *metrics.CloudWatch {
	return &metrics.CloudWatch{API: cloudwatch.NewFromConfig(awsCfg), Namespace: c.MetricsNamespace, Dimension: c.MetricsDimension}
}

// Starts returns the reader of queues' recent starts from the worker's
// log group (c.WorkerLogGroup), for admin starts; nil when c names none.
// The start lines are INFO records: with SLOTQ_LOG_LEVEL WARN or ERROR
// the worker drops them, and the reader says so.
func (c Config) Starts(awsCfg aws.Config) startlog.Reader {
	if c.WorkerLogGroup == "" {
		return nil
	}
	if lvl, err := logLevel(c.LogLevel); err == nil && lvl != nil && *lvl > slog.LevelInfo {
		return startlog.Unavailable{Reason: fmt.Sprintf("the worker does not log its starts at log level %s (%s): deploy with LogLevel INFO or DEBUG", c.LogLevel, EnvLogLevel)}
	}
	return &startlog.Logs{API: cloudwatchlogs.NewFromConfig(awsCfg), LogGroup: c.WorkerLogGroup}
}

// Init is what every function's main does first: it makes the logger,
// loads and validates spec's variables from the environment and loads the
// AWS configuration (region, credentials, and endpoints from
// AWS_ENDPOINT_URL* when set). On failure it logs the error, naming the
// bad variable, and exits: Lambda reports the init failure.
func Init(spec Spec) (Config, aws.Config, *slog.Logger) {
	log := Logger()
	cfg, err := Load(spec, os.Getenv)
	if err != nil {
		log.Error("bad configuration", "function", spec.Function, "error", err.Error())
		os.Exit(1)
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("load AWS configuration", "function", spec.Function, "error", err.Error())
		os.Exit(1)
	}
	return cfg, pooled(awsCfg), log
}

// pooled keeps enough idle connections to a host for a resume run's
// calls at once (engine.Options.ResumeConcurrency: its passes' own calls
// and as many on job records and sends), where the SDK keeps 10: a run's
// bursts then reuse their connections instead of opening new ones.
func pooled(awsCfg aws.Config) aws.Config {
	if bc, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
		awsCfg.HTTPClient = bc.WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, 2*engine.DefaultResumeConcurrency)
			tr.MaxIdleConns = max(tr.MaxIdleConns, 4*engine.DefaultResumeConcurrency)
		})
	}
	return awsCfg
}
