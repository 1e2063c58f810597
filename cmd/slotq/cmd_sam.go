package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/slotq/slotq/internal/samrun"
	"github.com/slotq/slotq/pkg/local"
)

// samCmd runs the built bootstraps as the SAM CLI's local commands do
// (internal/samrun): `slotq sam invoke` is `sam local invoke`, `slotq sam
// start-lambda` is `sam local start-lambda` with the event source and the
// schedule in front.
func samCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return subcommands(ctx, "sam", map[string]runFunc{"invoke": samInvokeCmd, "start-lambda": samStartLambdaCmd},
		"Usage: slotq sam COMMAND [flags] ...\n\n"+
			"Runs the functions' built bootstraps as `sam local` does, without Docker: each is built with\n"+
			"its Makefile target for this machine and run under a local Lambda Runtime API with the\n"+
			"environment template.yaml gives it.\n\nCommands:\n"+
			"  invoke        invoke one function with an event and print its answer (make invoke)\n"+
			"  start-lambda  serve the Invoke API for every function, with the SQS event source and the\n"+
			"                schedule in front (make start-lambda)\n\n"+
			"Run 'slotq sam COMMAND --help' for a command's flags.\n", args, stdout, stderr)
}

// samEndpoints is what both sam commands' help says about AWS endpoints.
const samEndpoints = "\nDynamoDB and SQS endpoints come from AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SQS\n" +
	"(or AWS_ENDPOINT_URL); for a service with none, DynamoDB Local (Java 17; the first run\n" +
	"fetches it with npm) or moto_server starts on loopback for the run. The template's table\n" +
	"and queues are created if missing."

// samFlags registers the flags both sam commands take.
func samFlags(c *cmdLine) *samrun.Options {
	o := &samrun.Options{Params: map[string]string{}}
	c.fs.StringVar(&o.Template, "template", "template.yaml", "the SAM template; its folder's Makefile builds the bootstraps")
	c.fs.StringVar(&o.StackName, "stack", "slotq", "stack name, the prefix of table and queue names")
	c.fs.Var(params(o.Params), "param", "override a template parameter, Name=value (repeatable)")
	o.Log = c.stderr
	return o
}

// params is a repeatable Name=value flag.
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

func samInvokeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCmdLine("sam invoke", "FUNCTION", "Builds the bootstrap of FUNCTION (a logical id: EnqueueFunction, WorkerFunction, …), runs it\n"+
		"under a local Lambda Runtime API, invokes it once with the event, as `sam local invoke` does,\n"+
		"and prints the answer; the function's logs go to stderr. Exits 1 on a function error.\n"+
		samEndpoints, stdout, stderr)
	o := samFlags(c)
	event := c.fs.String("event", "", "file holding the event (- for stdin; default {})")
	pos, code := c.parse(args, 1, 1)
	if code >= 0 {
		return code
	}
	payload, err := readEvent(*event)
	if err != nil {
		fmt.Fprintf(stderr, "slotq sam invoke: --event: %v\n", err)
		return exitUsage
	}
	res, err := samrun.Invoke(ctx, *o, pos[0], payload)
	if err != nil {
		fmt.Fprintf(stderr, "slotq sam invoke: %v\n", err)
		return exitFail
	}
	fmt.Fprintln(stdout, string(res.Payload))
	if res.FunctionError != "" {
		fmt.Fprintf(stderr, "slotq sam invoke: function error (%s), request %s\n", res.FunctionError, res.RequestID)
		return exitFail
	}
	return exitOK
}

func samStartLambdaCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCmdLine("sam start-lambda", "", "Builds every function's bootstrap and serves the Lambda Invoke API for them, as\n"+
		"`sam local start-lambda` does, with what AWS adds after deployment in front: the SQS event\n"+
		"source that feeds the slot queue to WorkerFunction and the schedule that invokes\n"+
		"ResumeFunction. Runs until interrupted.\n"+samEndpoints, stdout, stderr)
	shared := samFlags(c)
	var o samrun.ServeOptions
	c.fs.StringVar(&o.Addr, "addr", local.DefaultAddr, "address of the Invoke API")
	c.fs.DurationVar(&o.ResumeEvery, "resume-every", 0, "invoke ResumeFunction this often instead of at the template's rate")
	c.fs.IntVar(&o.Concurrency, "concurrency", 5, "most WorkerFunction invocations (bootstrap processes) at once")
	if _, code := c.parse(args, 0, 0); code >= 0 {
		return code
	}
	o.Options = *shared
	if o.Concurrency < 1 {
		fmt.Fprintf(stderr, "slotq sam start-lambda: --concurrency must be at least 1\n")
		return exitUsage
	}
	if err := samrun.Serve(ctx, o); err != nil {
		fmt.Fprintf(stderr, "slotq sam start-lambda: %v\n", err)
		return exitFail
	}
	return exitOK
}

// readEvent reads an event file; - is stdin, "" the empty event {}.
func readEvent(path string) ([]byte, error) {
	switch path {
	case "":
		return []byte("{}"), nil
	case "-":
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}
