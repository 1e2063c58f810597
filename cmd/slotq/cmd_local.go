package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/cli/console"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/local"
)

func newLocalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run the stack in this process: Invoke API on 127.0.0.1:3001, SQS event source, schedule (make run)",
		Long: "Runs the stack in this process: the enqueue, worker, resume and admin handlers behind the\n" +
			"Lambda Invoke API (as `sam local start-lambda` would), the SQS event source that feeds the\n" +
			"worker and the schedule that runs resume. On the embedded backend by default; on DynamoDB and\n" +
			"SQS when AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS (or AWS_ENDPOINT_URL) are set, or with --aws.\n\n" +
			"It shows a live view of starts, outcomes, retries and parks on stdout. The functions' own logs go\n" +
			"to stderr at --log's level (warn): the built-in echo kind logs its payload at info, so its lines\n" +
			"show with --log info (make run ARGS='--log info'), or as \"echo\" events with --json.\n\n" +
			"Tracing follows the OTEL_* variables as on the stack: OTEL_TRACES_EXPORTER=console prints each\n" +
			"span as a JSON line on stdout, otlp sends them to OTEL_EXPORTER_OTLP_ENDPOINT (docs/tracing.md).",
		Example: "  $ slotq local --resume-every 1s\n" +
			"  $ slotq local --log info 2>run.log      # a log 'slotq timeline --log run.log' reads",
		Args: nArgs(0, 0),
	}
	fs := cmd.Flags()
	var (
		addr        = fs.String("addr", local.DefaultAddr, "address of the Lambda Invoke API")
		tmpl        = fs.String("template", "template.yaml", "SAM template to read the event source, schedule and timeouts from (its built-in copy if the file is missing)")
		resumeEvery = fs.Duration("resume-every", 0, "invoke ResumeFunction this often instead of at the template's rate (1m), such as 1s while developing")
		concurrency = fs.Int("concurrency", 5, "most worker invocations in flight at once")
		visibility  = fs.Duration("visibility-timeout", 0, "the slot queue's visibility timeout (whole seconds) instead of the template's (720s): how soon a message whose worker died comes back")
		lease       = fs.Duration("lease", 0, "how long a running attempt may go without an outcome before its message retries it (default: the worker's timeout plus a minute)")
		useAWS      = fs.Bool("aws", false, "run on DynamoDB and SQS even though no AWS_ENDPOINT_URL_* variable is set (real AWS: mind the costs)")
		stackName   = fs.String("stack", "slotq", "on DynamoDB/SQS: prefix of the table and queue names")
		targets     = fs.String("allowed-targets", "", "comma-separated target `patterns` queues created without targets allow (the stack's AllowedTargets)")
		networks    = fs.String("allowed-networks", "", "comma-separated CIDR `prefixes` such queues' HTTP targets may reach although private or loopback (AllowedNetworks)")
		asJSON      = fs.Bool("json", false, "print JSON lines instead of the live view")
		logLevel    = fs.String("log", "warn", "`level` of the functions' logs on stderr (debug, info, warn, error)")
		consoleAddr = fs.String("console", local.DefaultConsoleAddr, "address of the web console (loopback only; empty for none)")
	)
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		return runLocal(cmd.Context(), stdout, stderr, localFlags{*addr, *tmpl, fs.Changed("template"), *resumeEvery, *concurrency,
			*visibility, *lease, *useAWS, *stackName, *targets, *networks, *asJSON, *logLevel, *consoleAddr})
	})
	return cmd
}

// localFlags are local's flags.
type localFlags struct {
	addr, tmpl        string
	tmplGiven         bool
	resumeEvery       time.Duration
	concurrency       int
	visibility, lease time.Duration
	useAWS            bool
	stackName         string
	targets, networks string
	asJSON            bool
	logLevel          string
	console           string
}

func runLocal(ctx context.Context, stdout, stderr io.Writer, f localFlags) int {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		fmt.Fprintf(stderr, "slotq local: --log: %v\n", err)
		return clikit.ExitUsage
	}
	var logger *slog.Logger
	if f.asJSON {
		logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	} else {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	}
	o := local.Options{Addr: f.addr, Concurrency: f.concurrency, Lease: f.lease, StackName: f.stackName, Console: f.console,
		Logger: logger, Out: stdout, JSON: f.asJSON, TraceOut: stdout}
	if _, err := os.Stat(f.tmpl); err == nil {
		st, err := local.FromTemplate(f.tmpl)
		if err != nil {
			fmt.Fprintf(stderr, "slotq local: %v\n", err)
			return clikit.ExitUsage
		}
		o.Stack = st
	} else if f.tmplGiven {
		fmt.Fprintf(stderr, "slotq local: %v\n", err)
		return clikit.ExitUsage
	}
	if f.resumeEvery > 0 {
		o.Stack.ResumeEvery = f.resumeEvery
	}
	if f.visibility > 0 {
		if f.visibility%time.Second != 0 {
			fmt.Fprintf(stderr, "slotq local: --visibility-timeout %v: SQS counts whole seconds\n", f.visibility)
			return clikit.ExitUsage
		}
		o.Stack.VisibilityTimeout = f.visibility
	}
	for _, p := range split(f.targets) {
		if err := slot.ValidatePattern(p); err != nil {
			fmt.Fprintf(stderr, "slotq local: --allowed-targets %q: %v\n", p, err)
			return clikit.ExitUsage
		}
		o.Defaults.Targets = append(o.Defaults.Targets, p)
	}
	o.Defaults.AllowNetworks = split(f.networks)
	if f.useAWS || os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" || os.Getenv("AWS_ENDPOINT_URL_SQS") != "" || os.Getenv("AWS_ENDPOINT_URL") != "" {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "slotq local: AWS configuration: %v\n", err)
			return clikit.ExitFail
		}
		o.AWS = &cfg
	}
	if err := local.Run(ctx, o); err != nil {
		fmt.Fprintf(stderr, "slotq local: %s\n", strings.TrimPrefix(err.Error(), "local: "))
		if h := localHint(err, f); h != "" {
			fmt.Fprintln(stderr, h)
		}
		return clikit.ExitFail
	}
	return clikit.ExitOK
}

// localHint says what to do about an error that stopped slotq local, or
// "".
func localHint(err error, f localFlags) string {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Sprintf("Another program holds the address: is another slotq local (make run) running? Stop it, "+
			"or give other addresses: --addr (now %s) for the Invoke API, --console (now %s; empty for none) for the console.", f.addr, f.console)
	case errors.Is(err, console.ErrRemote):
		return "The local runtime's console serves loopback only; for a console others reach, run " +
			"'slotq console --allow-remote' (see slotq console --help)."
	}
	return ""
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

// newInvokeCmd calls a function through the Lambda Invoke API with the
// AWS SDK, as another service would, and prints its answer.
func newInvokeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "invoke FUNCTION [PAYLOAD | @FILE]",
		Short: "Invoke a function through the Lambda Invoke API (slotq local's by default) and print its answer",
		Long: "Invokes FUNCTION (EnqueueFunction, AdminFunction, …) with the JSON PAYLOAD (default {})\n" +
			"and prints the answer: on the local runtime by default, on a deployed stack with --stack\n" +
			"(EnqueueFunction and AdminFunction are then the stack's outputs EnqueueFunctionName and\n" +
			"AdminFunctionName). Exits 1 on a function error, and on an answer that refuses the call\n" +
			"({\"error\": …}).",
		Example: "  $ slotq invoke EnqueueFunction @events/enqueue.json\n" +
			"  $ slotq invoke AdminFunction '{\"op\":\"list\"}' --stack slotq-prod",
		Args: nArgs(1, 2),
	}
	cn := connFlags(cmd.Flags())
	_ = cmd.Flags().MarkHidden("json") // the answer is JSON already
	_ = cmd.Flags().MarkHidden("enqueue-function")
	_ = cmd.Flags().MarkHidden("admin-function")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) int {
		return invokeFunction(cmd.Context(), newStackCmd(cmd, cn), args)
	})
	return cmd
}

func invokeFunction(ctx context.Context, c *stackCmd, args []string) int {
	payload := []byte("{}")
	if len(args) == 2 {
		payload = []byte(args[1])
		if name, ok := strings.CutPrefix(args[1], "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return c.Fail(clikit.Usagef("%v", err))
			}
			payload = b
		}
	}
	client, fn, err := c.Conn.Lambda(ctx, args[0])
	if err != nil {
		return c.Fail(err)
	}
	out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload})
	if err != nil {
		return c.Fail(c.Conn.Explain(err))
	}
	fmt.Fprintln(c.Stdout, string(out.Payload))
	if out.FunctionError != nil {
		fmt.Fprintf(c.Stderr, "slotq %s: function error (%s)\n", c.Name, *out.FunctionError)
		return clikit.ExitFail
	}
	// A refusal ({"error": {…}}) is an answer, not a function error, but
	// the call did nothing: a script must see it fail.
	var refusal struct {
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(out.Payload, &refusal) == nil && refusal.Error != nil {
		fmt.Fprintf(c.Stderr, "slotq %s: refused (%s)\n", c.Name, refusal.Error.Code)
		return clikit.ExitFail
	}
	return clikit.ExitOK
}
