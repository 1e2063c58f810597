package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/local/samrun"
	"github.com/slotq/slotq/pkg/local"
)

// newSamCmd runs the built bootstraps as the SAM CLI's local commands do
// (internal/local/samrun): `slotq sam invoke` is `sam local invoke`, `slotq sam
// start-lambda` is `sam local start-lambda` with the event source and the
// schedule in front.
func newSamCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "sam <command>",
		Short: "Run the built bootstraps as sam local does, without Docker (sam invoke|start-lambda)",
		Long: "Runs the functions' built bootstraps as `sam local` does, without Docker: each is built with\n" +
			"its Makefile target for this machine and run under a local Lambda Runtime API with the\n" +
			"environment template.yaml gives it.",
	}, newSamInvokeCmd(), newSamStartLambdaCmd())
}

// samEndpoints is what both sam commands' help says about AWS endpoints.
const samEndpoints = "\nDynamoDB and SQS endpoints come from AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SQS\n" +
	"(or AWS_ENDPOINT_URL); for a service with none, DynamoDB Local (Java 17; the first run\n" +
	"fetches it with npm) or moto_server starts on loopback for the run. The template's table\n" +
	"and queues are created if missing."

// samFlags registers the flags both sam commands take.
func samFlags(fs *pflag.FlagSet) *samrun.Options {
	o := &samrun.Options{Params: map[string]string{}}
	fs.StringVar(&o.Template, "template", "template.yaml", "the SAM template; its folder's Makefile builds the bootstraps")
	fs.StringVar(&o.StackName, "stack", "slotq", "stack name, the prefix of table and queue names")
	fs.Var(params(o.Params), "param", "override a template parameter, `Name=value` (repeatable)")
	return o
}

// params is a repeatable Name=value flag.
type params map[string]string

func (p params) String() string { return "" }
func (p params) Type() string   { return "Name=value" }
func (p params) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want Name=value, got %q", s)
	}
	p[k] = v
	return nil
}

func newSamInvokeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "invoke FUNCTION",
		Short: "Invoke one function with an event and print its answer (make invoke)",
		Long: "Builds the bootstrap of FUNCTION (a logical id: EnqueueFunction, WorkerFunction, …), runs it\n" +
			"under a local Lambda Runtime API, invokes it once with the event, as `sam local invoke` does,\n" +
			"and prints the answer; the function's logs go to stderr. Exits 1 on a function error.\n" +
			samEndpoints,
		Example: "  $ slotq sam invoke EnqueueFunction --event events/enqueue.json",
		Args:    nArgs(1, 1),
	}
	o := samFlags(cmd.Flags())
	event := cmd.Flags().String("event", "", "`file` holding the event (- for stdin; default {})")
	cmd.RunE = runE(func(cmd *cobra.Command, pos []string) int {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		o.Log = stderr
		payload, err := readEvent(*event)
		if err != nil {
			fmt.Fprintf(stderr, "slotq sam invoke: --event: %v\n", err)
			return clikit.ExitUsage
		}
		res, err := samrun.Invoke(cmd.Context(), *o, pos[0], payload)
		if err != nil {
			fmt.Fprintf(stderr, "slotq sam invoke: %v\n", err)
			return clikit.ExitFail
		}
		fmt.Fprintln(stdout, string(res.Payload))
		if res.FunctionError != "" {
			fmt.Fprintf(stderr, "slotq sam invoke: function error (%s), request %s\n", res.FunctionError, res.RequestID)
			return clikit.ExitFail
		}
		return clikit.ExitOK
	})
	return cmd
}

func newSamStartLambdaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "start-lambda",
		Short: "Serve the Invoke API for every function, with the SQS event source and the schedule in front (make start-lambda)",
		Long: "Builds every function's bootstrap and serves the Lambda Invoke API for them, as\n" +
			"`sam local start-lambda` does, with what AWS adds after deployment in front: the SQS event\n" +
			"source that feeds the slot queue to WorkerFunction and the schedule that invokes\n" +
			"ResumeFunction. Runs until interrupted.\n" + samEndpoints,
		Args: nArgs(0, 0),
	}
	shared := samFlags(cmd.Flags())
	var o samrun.ServeOptions
	cmd.Flags().StringVar(&o.Addr, "addr", local.DefaultAddr, "address of the Invoke API")
	cmd.Flags().DurationVar(&o.ResumeEvery, "resume-every", 0, "invoke ResumeFunction this often instead of at the template's rate")
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", 5, "most WorkerFunction invocations (bootstrap processes) at once")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		stderr := cmd.ErrOrStderr()
		shared.Log = stderr
		o.Options = *shared
		if o.Concurrency < 1 {
			fmt.Fprintf(stderr, "slotq sam start-lambda: --concurrency must be at least 1\n")
			return clikit.ExitUsage
		}
		if err := samrun.Serve(cmd.Context(), o); err != nil {
			fmt.Fprintf(stderr, "slotq sam start-lambda: %v\n", err)
			return clikit.ExitFail
		}
		return clikit.ExitOK
	})
	return cmd
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
