package lambdafn

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/pkg/dynamostore"
	"github.com/slotq/slotq/pkg/engine"
	"github.com/slotq/slotq/pkg/metrics"
	"github.com/slotq/slotq/pkg/sqstransport"
)

// Logger returns the functions' logger: JSON (or text) as the function's
// logging configuration says (AWS_LAMBDA_LOG_FORMAT, AWS_LAMBDA_LOG_LEVEL,
// which template.yaml sets), with each record carrying the request id.
func Logger() *slog.Logger {
	return slog.New(lambdacontext.NewLogHandler())
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
	})
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
	return cfg, awsCfg, log
}
