package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/local"
)

func localCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("slotq local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr        = fs.String("addr", local.DefaultAddr, "address of the Lambda Invoke API")
		tmpl        = fs.String("template", "template.yaml", "SAM template to read the event source, schedule and timeouts from (its built-in copy if the file is missing)")
		resumeEvery = fs.Duration("resume-every", 0, "invoke ResumeFunction this often instead of at the template's rate (1m), such as 1s while developing")
		concurrency = fs.Int("concurrency", 5, "most worker invocations in flight at once")
		visibility  = fs.Duration("visibility-timeout", 0, "the slot queue's visibility timeout (whole seconds) instead of the template's (720s): how soon a message whose worker died comes back")
		lease       = fs.Duration("lease", 0, "how long a running attempt may go without an outcome before its message retries it (default: the worker's timeout plus a minute)")
		useAWS      = fs.Bool("aws", false, "run on DynamoDB and SQS even though no AWS_ENDPOINT_URL_* variable is set (real AWS: mind the costs)")
		stackName   = fs.String("stack", "slotq", "on DynamoDB/SQS: prefix of the table and queue names")
		targets     = fs.String("allowed-targets", "", "comma-separated target patterns queues created without targets allow (the stack's AllowedTargets)")
		networks    = fs.String("allowed-networks", "", "comma-separated CIDR prefixes such queues' HTTP targets may reach although private or loopback (AllowedNetworks)")
		asJSON      = fs.Bool("json", false, "print JSON lines instead of the live view")
		logLevel    = fs.String("log", "warn", "level of the functions' logs on stderr (debug, info, warn, error)")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: slotq local [flags]\n\n"+
			"Runs the stack in this process: the enqueue, worker, resume and admin handlers behind the\n"+
			"Lambda Invoke API (as `sam local start-lambda` would), the SQS event source that feeds the\n"+
			"worker and the schedule that runs resume. On the embedded backend by default; on DynamoDB and\n"+
			"SQS when AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS (or AWS_ENDPOINT_URL) are set, or with --aws.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "slotq local: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "slotq local: --log: %v\n", err)
		return exitUsage
	}
	var logger *slog.Logger
	if *asJSON {
		logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	} else {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	}
	o := local.Options{Addr: *addr, Concurrency: *concurrency, Lease: *lease, StackName: *stackName,
		Logger: logger, Out: stdout, JSON: *asJSON}
	if _, err := os.Stat(*tmpl); err == nil {
		st, err := local.FromTemplate(*tmpl)
		if err != nil {
			fmt.Fprintf(stderr, "slotq local: %v\n", err)
			return exitUsage
		}
		o.Stack = st
	} else if fs.Lookup("template").Value.String() != "template.yaml" {
		fmt.Fprintf(stderr, "slotq local: %v\n", err)
		return exitUsage
	}
	if *resumeEvery > 0 {
		o.Stack.ResumeEvery = *resumeEvery
	}
	if *visibility > 0 {
		if *visibility%time.Second != 0 {
			fmt.Fprintf(stderr, "slotq local: --visibility-timeout %v: SQS counts whole seconds\n", *visibility)
			return exitUsage
		}
		o.Stack.VisibilityTimeout = *visibility
	}
	for _, p := range split(*targets) {
		if err := slot.ValidatePattern(p); err != nil {
			fmt.Fprintf(stderr, "slotq local: --allowed-targets %q: %v\n", p, err)
			return exitUsage
		}
		o.Defaults.Targets = append(o.Defaults.Targets, p)
	}
	o.Defaults.AllowNetworks = split(*networks)
	if *useAWS || os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" || os.Getenv("AWS_ENDPOINT_URL_SQS") != "" || os.Getenv("AWS_ENDPOINT_URL") != "" {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "slotq local: AWS configuration: %v\n", err)
			return exitFail
		}
		o.AWS = &cfg
	}
	if err := local.Run(ctx, o); err != nil {
		fmt.Fprintf(stderr, "slotq local: %v\n", err)
		return exitFail
	}
	return exitOK
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// invokeCmd calls a function through the Lambda Invoke API with the AWS
// SDK, as another service would, and prints its answer.
func invokeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("slotq invoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("endpoint-url", "http://"+local.DefaultAddr, "the Invoke API (slotq local's); empty: AWS's, or AWS_ENDPOINT_URL_LAMBDA")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: slotq invoke [flags] FUNCTION [PAYLOAD | @FILE]\n\n"+
			"Invokes FUNCTION (EnqueueFunction, AdminFunction, …) with the JSON PAYLOAD (default {})\n"+
			"and prints the answer. Exits 1 on a function error.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return exitUsage
	}
	payload := []byte("{}")
	if fs.NArg() == 2 {
		payload = []byte(fs.Arg(1))
		if name, ok := strings.CutPrefix(fs.Arg(1), "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				fmt.Fprintf(stderr, "slotq invoke: %v\n", err)
				return exitUsage
			}
			payload = b
		}
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "slotq invoke: AWS configuration: %v\n", err)
		return exitFail
	}
	if *endpoint != "" {
		// A local endpoint needs no real account.
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			cfg.Credentials = aws.AnonymousCredentials{}
		}
	}
	client := lambda.NewFromConfig(cfg, func(o *lambda.Options) {
		if *endpoint != "" {
			o.BaseEndpoint = aws.String(*endpoint)
		}
	})
	out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fs.Arg(0)), Payload: payload})
	if err != nil {
		fmt.Fprintf(stderr, "slotq invoke: %v\n", err)
		return exitFail
	}
	fmt.Fprintln(stdout, string(out.Payload))
	if out.FunctionError != nil {
		fmt.Fprintf(stderr, "slotq invoke: function error (%s)\n", *out.FunctionError)
		return exitFail
	}
	return exitOK
}
