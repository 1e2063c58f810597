package lambdafn

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// The environment variables the functions read. template.yaml sets them.
const (
	// EnvTable is the DynamoDB table holding queues and jobs. Required.
	EnvTable = "SLOTQ_TABLE"
	// EnvQueueURL is the URL of the SQS slot queue. Required.
	EnvQueueURL = "SLOTQ_QUEUE_URL"
	// EnvDefaultInterval is the interval of queues created without one
	// (on first enqueue, or by admin create without config.interval), as
	// a Go duration such as "1s". Default 1s.
	EnvDefaultInterval = "SLOTQ_DEFAULT_INTERVAL"
	// EnvDefaultLimit is the limit of queues created without one, in
	// another form than an interval, in the words a queue's limits are
	// printed in (api.ParseLimits): "rate 100/1m burst 10", "window
	// 5000/1h", or up to slot.MaxLimits of them separated by semicolons
	// ("rate 10/1s burst 2; window 1000/1h"). Set, it takes the place of
	// SLOTQ_DEFAULT_INTERVAL. Default empty: the interval.
	EnvDefaultLimit = "SLOTQ_DEFAULT_LIMIT"
	// EnvDefaultKeyLimit is the limit every key of a queue created without
	// key_limits keeps beside the queue's, in the words of
	// SLOTQ_DEFAULT_LIMIT. Default empty: none.
	EnvDefaultKeyLimit = "SLOTQ_DEFAULT_KEY_LIMIT"
	// EnvDefaultSkew is the skew of queues created without one (capped at
	// a quarter of their interval), as a Go duration such as "10ms".
	// Default slot.DefaultSkew.
	EnvDefaultSkew = "SLOTQ_DEFAULT_SKEW"
	// EnvAllowedTargets is a comma-separated list of target patterns
	// (http(s) URLs, lambda:NAME, function ARNs; a trailing * matches by
	// prefix) that queues created without a target list allow. Default:
	// none.
	EnvAllowedTargets = "SLOTQ_ALLOWED_TARGETS"
	// EnvAllowedNetworks is a comma-separated list of address prefixes
	// (CIDR) that HTTP targets of queues created without allow_networks
	// may reach although they are loopback, private, link-local or
	// metadata addresses (slot.Config.AllowNetworks). Default: none.
	EnvAllowedNetworks = "SLOTQ_ALLOWED_NETWORKS"
	// EnvDeadLetterQueueURL is the URL of the slot queue's dead-letter
	// queue, which the admin function's redrive reads. Optional: without
	// it, redrive answers no_dead_letter_queue.
	EnvDeadLetterQueueURL = "SLOTQ_DLQ_URL"
	// EnvWorkerLogGroup is the worker function's log group, whose start
	// lines the admin function's starts reads (logs:FilterLogEvents).
	// Optional: without it, starts answers starts_error.
	EnvWorkerLogGroup = "SLOTQ_WORKER_LOG_GROUP"
	// EnvWorkerTimeout is the worker function's timeout in whole seconds:
	// template.yaml sets both from its WorkerTimeout parameter. Every function reads it: the worker and the resume
	// function derive the lease of a running attempt from it, enqueue and
	// admin refuse a queue's target_timeout that cannot fit in it.
	// Required; between the default target timeout plus the time kept for
	// recording (see engine.MinWorkerTimeout) and 900.
	EnvWorkerTimeout = "SLOTQ_WORKER_TIMEOUT"
	// EnvLead is how long before a start a worker goes to the gate
	// (engine.Options.Lead), as a Go duration such as "50ms": every
	// function reads it, since enqueue, resume and admin send messages to
	// arrive that long before their slots and book an idle queue's next
	// slot that far ahead. Default slot.DefaultLead; at most 1s.
	EnvLead = "SLOTQ_LEAD"
	// EnvMetricsNamespace is the CloudWatch namespace of the metrics the
	// functions write (internal/metrics). Default "slotq".
	EnvMetricsNamespace = "SLOTQ_METRICS_NAMESPACE"
	// EnvMetricsDimension is the name of the metrics' queue dimension:
	// set, each queue's metrics are published under it as well (custom
	// metrics per queue), and the resume function reads every queue's
	// figures each run. Default empty: stack-wide metrics only, each
	// line naming its queue as a property (docs/operations.md).
	EnvMetricsDimension = "SLOTQ_METRICS_DIMENSION"
	// EnvLogLevel is the level below which the functions drop their log
	// records (DEBUG, INFO, WARN or ERROR), the metrics' lines aside,
	// which are written whatever it is. template.yaml sets it from the
	// LogLevel parameter and keeps Lambda's own filter
	// (AWS_LAMBDA_LOG_LEVEL) at INFO or below, so that the metrics reach
	// the logs. Default: AWS_LAMBDA_LOG_LEVEL's level.
	EnvLogLevel = "SLOTQ_LOG_LEVEL"
)

// Spec names a function and the environment variables it reads. The
// template test checks that template.yaml gives each function exactly
// these.
type Spec struct {
	// Function is the function's directory under functions/.
	Function string
	// Vars are the variables Load reads for it.
	Vars []string
}

// The functions' specs.
var (
	Enqueue = Spec{Function: "enqueue", Vars: []string{EnvTable, EnvQueueURL, EnvWorkerTimeout, EnvLead, EnvMetricsNamespace, EnvMetricsDimension, EnvLogLevel, EnvDefaultInterval, EnvDefaultLimit, EnvDefaultKeyLimit, EnvDefaultSkew, EnvAllowedTargets, EnvAllowedNetworks}}
	Worker  = Spec{Function: "worker", Vars: []string{EnvTable, EnvQueueURL, EnvWorkerTimeout, EnvLead, EnvMetricsNamespace, EnvMetricsDimension, EnvLogLevel}}
	Resume  = Spec{Function: "resume", Vars: []string{EnvTable, EnvQueueURL, EnvWorkerTimeout, EnvLead, EnvMetricsNamespace, EnvMetricsDimension, EnvLogLevel}}
	Admin   = Spec{Function: "admin", Vars: []string{EnvTable, EnvQueueURL, EnvDeadLetterQueueURL, EnvWorkerLogGroup, EnvWorkerTimeout, EnvLead, EnvMetricsNamespace, EnvMetricsDimension, EnvLogLevel, EnvDefaultInterval, EnvDefaultLimit, EnvDefaultKeyLimit, EnvDefaultSkew, EnvAllowedTargets, EnvAllowedNetworks}}
	// Specs lists every function.
	Specs = []Spec{Enqueue, Worker, Resume, Admin}
)

// Config is a function's configuration, read from its environment.
type Config struct {
	// Table is the DynamoDB table (SLOTQ_TABLE).
	Table string
	// QueueURL is the SQS slot queue (SLOTQ_QUEUE_URL).
	QueueURL string
	// DeadLetterQueueURL is its dead-letter queue (SLOTQ_DLQ_URL), for
	// the admin function's redrive; empty if not set.
	DeadLetterQueueURL string
	// WorkerLogGroup is the worker's log group (SLOTQ_WORKER_LOG_GROUP),
	// for the admin function's starts; empty if not set.
	WorkerLogGroup string
	// LogLevel is SLOTQ_LOG_LEVEL as given (DEBUG, INFO, WARN, ERROR or
	// empty).
	LogLevel string
	// Defaults configures queues created without a configuration: the
	// limit from SLOTQ_DEFAULT_LIMIT, else the interval from
	// SLOTQ_DEFAULT_INTERVAL; key limits from SLOTQ_DEFAULT_KEY_LIMIT;
	// skew from SLOTQ_DEFAULT_SKEW, targets from
	// SLOTQ_ALLOWED_TARGETS, the rest slot's defaults.
	Defaults slot.Config
	// WorkerTimeout is the worker function's timeout
	// (SLOTQ_WORKER_TIMEOUT).
	WorkerTimeout time.Duration
	// Lead is engine.Options.Lead (SLOTQ_LEAD); 0 takes its default.
	Lead time.Duration
	// MetricsNamespace and MetricsDimension name the metrics' namespace
	// and queue dimension (SLOTQ_METRICS_NAMESPACE,
	// SLOTQ_METRICS_DIMENSION); an empty namespace takes internal/metrics'
	// default, an empty dimension means no per-queue metrics.
	MetricsNamespace, MetricsDimension string
	// Observer, if set, is the engine's (engine.Options.Observer): a
	// function's main sets it to the Recorder its handler flushes.
	Observer engine.Observer
	// Tracer, if set, makes the engine's spans (engine.Options.Tracer):
	// a function's main builds it from the OTEL_* variables
	// (internal/tracing). Nil: no span is made.
	Tracer trace.TracerProvider
}

// logGroupName is what CloudWatch Logs allows in a log group's name.
var logGroupName = regexp.MustCompile(`^[A-Za-z0-9._/#-]{1,512}$`)

// maxWorkerTimeout is Lambda's longest timeout.
const maxWorkerTimeout = 15 * time.Minute

// Load reads the variables of spec through getenv (os.Getenv in main) and
// validates them. Its error names the bad variable.
func Load(spec Spec, getenv func(string) string) (Config, error) {
	var c Config
	var limit *slot.Config
	for _, name := range spec.Vars {
		v := strings.TrimSpace(getenv(name))
		switch name {
		case EnvTable:
			if v == "" {
				return c, fmt.Errorf("%s is required: the DynamoDB table name", name)
			}
			c.Table = v
		case EnvQueueURL:
			if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
				return c, fmt.Errorf("%s must be the SQS queue URL, got %q", name, v)
			}
			c.QueueURL = v
		case EnvDeadLetterQueueURL:
			if v != "" && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
				return c, fmt.Errorf("%s must be the SQS dead-letter queue's URL, got %q", name, v)
			}
			c.DeadLetterQueueURL = v
		case EnvWorkerLogGroup:
			if v != "" && !logGroupName.MatchString(v) {
				return c, fmt.Errorf("%s must be a CloudWatch Logs log group name ([A-Za-z0-9._/#-], at most 512), got %q", name, v)
			}
			c.WorkerLogGroup = v
		case EnvWorkerTimeout:
			n, err := strconv.Atoi(v)
			d := time.Duration(n) * time.Second
			if err != nil || d < engine.MinWorkerTimeout || d > maxWorkerTimeout {
				return c, fmt.Errorf("%s must be the worker function's timeout in whole seconds, between %d and %d, got %q",
					name, int(engine.MinWorkerTimeout.Seconds()), int(maxWorkerTimeout.Seconds()), v)
			}
			c.WorkerTimeout = d
		case EnvLead:
			if v == "" {
				break
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 || d > time.Second {
				return c, fmt.Errorf("%s must be a duration between 0 and 1s such as \"50ms\", got %q", name, v)
			}
			c.Lead = d
		case EnvMetricsNamespace, EnvMetricsDimension:
			if len(v) > 255 || strings.HasPrefix(v, ":") {
				return c, fmt.Errorf("%s must be at most 255 characters and not start with a colon, got %q", name, v)
			}
			if name == EnvMetricsNamespace {
				c.MetricsNamespace = v
			} else {
				c.MetricsDimension = v
			}
		case EnvLogLevel:
			if _, err := logLevel(v); err != nil {
				return c, fmt.Errorf("%s: %v", name, err)
			}
			c.LogLevel = v
		case EnvDefaultInterval:
			if err := setDuration(&c.Defaults.Interval, name, v, "1s"); err != nil {
				return c, err
			}
		case EnvDefaultLimit:
			if v == "" {
				break
			}
			l, err := ParseDefaultLimit(v)
			if err != nil {
				return c, fmt.Errorf("%s %q: %v", name, v, err)
			}
			limit = &l
		case EnvDefaultKeyLimit:
			if v == "" {
				break
			}
			ls, err := api.ParseLimits(v)
			if err == nil {
				err = slot.ValidateKeyLimits(ls, "")
			}
			if err != nil {
				return c, fmt.Errorf("%s %q: %v", name, v, err)
			}
			c.Defaults.KeyLimits = ls
		case EnvDefaultSkew:
			if err := setDuration(&c.Defaults.Skew, name, v, "10ms"); err != nil {
				return c, err
			}
		case EnvAllowedTargets:
			for i, t := range strings.Split(v, ",") {
				t = strings.TrimSpace(t)
				if t == "" {
					continue
				}
				if err := slot.ValidatePattern(t); err != nil {
					return c, fmt.Errorf("%s: entry %d %q: %v", name, i, t, err)
				}
				c.Defaults.Targets = append(c.Defaults.Targets, t)
			}
		case EnvAllowedNetworks:
			for _, n := range strings.Split(v, ",") {
				if n = strings.TrimSpace(n); n != "" {
					c.Defaults.AllowNetworks = append(c.Defaults.AllowNetworks, n)
				}
			}
		default:
			return c, fmt.Errorf("lambdafn: unknown variable %s in spec %s", name, spec.Function)
		}
	}
	if limit != nil {
		// in the place of the interval
		d := &c.Defaults
		d.Interval, d.Rate, d.Burst, d.Window, d.Limits = limit.Interval, limit.Rate, limit.Burst, limit.Window, limit.Limits
	}
	if err := c.Defaults.WithDefaults().Validate(); err != nil {
		return c, fmt.Errorf("%s/%s/%s/%s: %v", EnvDefaultInterval, EnvDefaultLimit, EnvAllowedTargets, EnvAllowedNetworks, err)
	}
	return c, nil
}

// ParseDefaultLimit reads a default limit in words (SLOTQ_DEFAULT_LIMIT,
// the template's DefaultLimit): limits each in range, at most
// slot.MaxLimits. It answers a configuration that gives them in the form
// they were written in (one limit as its Interval, Rate with Burst or
// Window; several as Limits) and nothing else.
func ParseDefaultLimit(v string) (slot.Config, error) {
	ls, err := api.ParseLimits(v)
	if err != nil {
		return slot.Config{}, err
	}
	if len(ls) > slot.MaxLimits {
		return slot.Config{}, fmt.Errorf("%d limits; a queue keeps at most %d at once", len(ls), slot.MaxLimits)
	}
	for i, l := range ls {
		if err := slot.ValidateLimit(l, ""); err != nil {
			if len(ls) > 1 {
				return slot.Config{}, fmt.Errorf("limit %d (%s): %v", i+1, l, err)
			}
			return slot.Config{}, err
		}
	}
	switch l := ls[0]; {
	case len(ls) > 1:
		return slot.Config{Limits: ls}, nil
	case !l.Rate.IsZero():
		return slot.Config{Rate: l.Rate, Burst: l.Burst}, nil
	case !l.Window.IsZero():
		return slot.Config{Window: l.Window}, nil
	}
	return slot.Config{Interval: ls[0].Interval}, nil
}

// Reads reports whether spec reads the variable name.
func (s Spec) Reads(name string) bool { return slices.Contains(s.Vars, name) }

// setDuration reads v, unless it is empty, into d: a duration above 0 and
// at most slot.MaxInterval, or an error naming the variable name that
// shows example.
func setDuration(d *time.Duration, name, v, example string) error {
	if v == "" {
		return nil
	}
	x, err := slot.ParseDuration(v)
	if err != nil || x <= 0 || x > slot.MaxInterval {
		return fmt.Errorf("%s must be a duration between 0 and %s such as %q, got %q", name, slot.MaxInterval, example, v)
	}
	*d = x
	return nil
}
