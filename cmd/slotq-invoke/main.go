// Command slotq-invoke runs slotq's Lambda functions locally the way
// `sam local invoke` and `sam local start-lambda` do, without Docker:
// it builds each function's bootstrap with its Makefile target for this
// machine, runs it under a local Lambda Runtime API (pkg/lambdahost) with
// the environment template.yaml gives it, and invokes it.
//
//	slotq-invoke -fn EnqueueFunction -event events/enqueue.json
//	slotq-invoke -serve 127.0.0.1:3001     # Invoke API for every function
//
// With -serve it also plays what AWS plays after deployment (pkg/local's
// Emulate): the SQS event source mapping that feeds the slot queue to
// WorkerFunction (several bootstraps of it at once, -concurrency) and the
// schedule that invokes ResumeFunction (-resume-every to shorten it), so
// the deployed binaries run the whole flow locally.
//
// DynamoDB and SQS endpoints come from AWS_ENDPOINT_URL_DYNAMODB and
// AWS_ENDPOINT_URL_SQS (or AWS_ENDPOINT_URL for both). For a service with
// no endpoint set it starts an emulator on loopback for the run: DynamoDB
// Local for DynamoDB (internal/dynamolocal; it needs Java 17, and the first
// run fetches it with npm) and moto_server for SQS. Either way it creates
// the table and queues template.yaml declares, if they do not exist.
//
// `make invoke FN=… EVENT=…` and `make start-lambda` call it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/internal/dynamolocal"
	"github.com/slotq/slotq/internal/esm"
	"github.com/slotq/slotq/internal/motoserver"
	"github.com/slotq/slotq/internal/samlocal"
	"github.com/slotq/slotq/pkg/lambdahost"
	"github.com/slotq/slotq/pkg/local"
)

type params map[string]string

func (p params) String() string { return fmt.Sprint(map[string]string(p)) }
func (p params) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want Name=value, got %q", s)
	}
	p[k] = v
	return nil
}

func main() {
	var (
		tmpl  = flag.String("template", "template.yaml", "the SAM template")
		fn    = flag.String("fn", "", "logical id of the function to invoke, such as EnqueueFunction")
		event = flag.String("event", "", "file holding the event (- for stdin; default {})")
		serve = flag.String("serve", "", "serve the Invoke API for every function on this address instead")
		stack = flag.String("stack", "slotq", "stack name, the prefix of table and queue names")
		every = flag.Duration("resume-every", 0, "with -serve: invoke ResumeFunction this often instead of at the template's rate")
		conc  = flag.Int("concurrency", 5, "with -serve: most WorkerFunction invocations (bootstrap processes) at once")
		ps    = params{}
	)
	flag.Var(ps, "param", "override a template parameter, Name=value (repeatable)")
	flag.Parse()
	if (*fn == "") == (*serve == "") {
		fmt.Fprintln(os.Stderr, "slotq-invoke: give -fn (with -event) or -serve")
		flag.Usage()
		os.Exit(2)
	}
	code, err := run(*tmpl, *fn, *event, *serve, *stack, ps, *every, *conc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slotq-invoke:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(tmplPath, fn, eventPath, serve, stackName string, ps params, resumeEvery time.Duration, concurrency int) (int, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t, err := samlocal.Load(tmplPath)
	if err != nil {
		return 1, err
	}
	var payload []byte
	if fn != "" {
		if payload, err = readEvent(eventPath); err != nil {
			return 1, err
		}
	}

	stopEmulators, err := startEmulators(ctx)
	defer stopEmulators()
	if err != nil {
		return 1, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return 1, err
	}
	st, err := samlocal.Up(ctx, t, awsCfg, samlocal.Options{StackName: stackName, Params: ps})
	if err != nil {
		return 1, err
	}

	ids := t.Functions()
	if fn != "" {
		ids = []string{fn}
	}
	dir, err := os.MkdirTemp("", "slotq-invoke")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	root, _ := filepath.Abs(filepath.Dir(tmplPath))
	fmt.Fprintf(os.Stderr, "slotq-invoke: building %s\n", strings.Join(ids, ", "))
	if err := samlocal.Build(ctx, root, dir, ids...); err != nil {
		return 1, err
	}
	fns, err := st.Host(dir, ids...)
	if err != nil {
		return 1, err
	}
	for i := range fns {
		if fns[i].Name == local.WorkerFunction && serve != "" {
			fns[i].Concurrency = concurrency
		}
	}
	host, err := lambdahost.Start(fns, lambdahost.Options{Addr: serve, Output: os.Stderr})
	if err != nil {
		return 1, err
	}
	defer host.Close()

	if serve != "" {
		stk, err := local.FromTemplate(tmplPath)
		if err != nil {
			return 1, err
		}
		if resumeEvery > 0 {
			stk.ResumeEvery = resumeEvery
		}
		fmt.Fprintf(os.Stderr, "slotq-invoke: Invoke API for %s on %s\n", strings.Join(ids, ", "), host.URL())
		for _, id := range slices.Sorted(maps.Keys(st.Tables)) {
			fmt.Fprintf(os.Stderr, "  %-16s table %s\n", id, st.Tables[id])
		}
		for _, id := range slices.Sorted(maps.Keys(st.Queues)) {
			fmt.Fprintf(os.Stderr, "  %-16s queue %s\n", id, st.Queues[id])
		}
		fmt.Fprintf(os.Stderr, "  event source    SlotQueue → WorkerFunction, batches of %d, up to %d at once\n", stk.BatchSize, concurrency)
		fmt.Fprintf(os.Stderr, "  schedule        ResumeFunction every %s\n", stk.ResumeEvery)
		fmt.Fprintf(os.Stderr, "try (AWS CLI v1; with v2 add --cli-binary-format raw-in-base64-out):\n  AWS_DEFAULT_REGION=us-east-1 aws lambda invoke --endpoint-url %s --function-name EnqueueFunction --payload file://events/enqueue.json out.json\n", host.URL())
		sqsCfg := awsCfg
		err = local.Emulate(ctx, local.EmulateOptions{
			Invoker: host, Queue: esm.NewSQS(sqs.NewFromConfig(sqsCfg), st.Queues["SlotQueue"]), Stack: stk,
			Concurrency: concurrency, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		if err != nil {
			return 1, err
		}
		return 0, nil
	}
	res, err := host.Invoke(ctx, fn, payload)
	if err != nil {
		return 1, err
	}
	fmt.Println(string(res.Payload))
	if res.FunctionError != "" {
		fmt.Fprintf(os.Stderr, "slotq-invoke: function error (%s), request %s\n", res.FunctionError, res.RequestID)
		return 1, nil
	}
	return 0, nil
}

func readEvent(path string) ([]byte, error) {
	switch path {
	case "":
		return []byte("{}"), nil
	case "-":
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

// startEmulators starts DynamoDB Local and moto_server for the services
// the environment gives no endpoint for, and points the environment at
// them. stop stops what it started; call it even on error.
func startEmulators(ctx context.Context) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range stops {
			f()
		}
	}
	if !hasEndpoint("AWS_ENDPOINT_URL_DYNAMODB") {
		fmt.Fprintln(os.Stderr, "slotq-invoke: starting DynamoDB Local (the first run fetches it with npm, about 50 MB)")
		db, err := dynamolocal.Start(ctx)
		if err != nil {
			return stop, fmt.Errorf("no DynamoDB endpoint in the environment and DynamoDB Local did not start: %w", err)
		}
		stops = append(stops, db.Close)
		setEnv(db.Env())
		fmt.Fprintf(os.Stderr, "slotq-invoke: DynamoDB Local on %s (set AWS_ENDPOINT_URL_DYNAMODB to use another endpoint)\n", db.Endpoint)
	}
	if !hasEndpoint("AWS_ENDPOINT_URL_SQS") {
		moto, err := motoserver.Start()
		if err != nil {
			return stop, fmt.Errorf("no SQS endpoint in the environment and moto_server did not start: %w", err)
		}
		stops = append(stops, moto.Close)
		setEnv(moto.Env())
		fmt.Fprintf(os.Stderr, "slotq-invoke: moto_server for SQS on %s (set AWS_ENDPOINT_URL_SQS to use another endpoint)\n", moto.Endpoint)
	}
	return stop, nil
}

// hasEndpoint reports whether the AWS SDK finds an endpoint for the
// service of variable, or one for every service, in the environment.
func hasEndpoint(variable string) bool {
	return os.Getenv(variable) != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
}

func setEnv(env map[string]string) {
	for k, v := range env {
		os.Setenv(k, v)
	}
}
