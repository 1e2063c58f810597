// Package samrun runs slotq's built Lambda bootstraps locally the way
// `sam local invoke` and `sam local start-lambda` do, without Docker: it
// builds each function's bootstrap with its Makefile target for this
// machine (internal/local/samlocal), runs it under a local Lambda Runtime API
// (internal/local/lambdahost) with the environment template.yaml gives it, and invokes
// it (Invoke) or serves the Invoke API for every function (Serve).
//
// Serve also plays what AWS plays after deployment (esm.Emulation):
// the SQS event source mapping that feeds the slot queue to WorkerFunction
// (several bootstraps of it at once) and the schedule that invokes
// ResumeFunction, so the deployed binaries run the whole flow locally.
//
// DynamoDB and SQS endpoints come from AWS_ENDPOINT_URL_DYNAMODB and
// AWS_ENDPOINT_URL_SQS (or AWS_ENDPOINT_URL for both). For a service with
// no endpoint set it starts an emulator on loopback for the run: DynamoDB
// Local for DynamoDB (internal/dev/dynamolocal; it needs Java 17, and the first
// run fetches it with npm) and moto_server for SQS, in a program of their
// own built from the checkout (internal/dev/emulator/cmd/emulators), so
// that the slotq command links no emulator launcher. Either way it creates
// the table and queues template.yaml declares, if they do not exist.
//
// `slotq sam invoke` (`make invoke`) and `slotq sam start-lambda`
// (`make start-lambda`) call it. It is internal: a tool of slotq's
// repository (it runs `make` in it), not a promise to users.
package samrun

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/internal/local/esm"
	"github.com/slotq/slotq/internal/local/lambdahost"
	"github.com/slotq/slotq/internal/local/samlocal"
	"github.com/slotq/slotq/pkg/local"
)

// Options are what Invoke and Serve share.
type Options struct {
	// Template is the SAM template; its folder is the repository whose
	// Makefile builds the bootstraps. Default "template.yaml".
	Template string
	// StackName prefixes the table and queue names. Default "slotq".
	StackName string
	// Params override template parameters, like sam's
	// --parameter-overrides.
	Params map[string]string
	// Log gets progress lines and the bootstraps' own output (their JSON
	// logs). Default os.Stderr.
	Log io.Writer
}

// ServeOptions configure Serve.
type ServeOptions struct {
	Options
	// Addr is the address of the Invoke API. Default local.DefaultAddr
	// (127.0.0.1:3001).
	Addr string
	// ResumeEvery, if above 0, invokes ResumeFunction this often instead of
	// at the template's rate.
	ResumeEvery time.Duration
	// Concurrency is the most WorkerFunction invocations (bootstrap
	// processes) at once. Default 5.
	Concurrency int
}

// run is one local stack: the template, the AWS configuration pointing at
// the emulators, the created resources and the host of the bootstraps.
type run struct {
	tmpl  string
	log   io.Writer
	cfg   aws.Config
	stack *samlocal.Stack
	host  *lambdahost.Host
	ids   []string
	stops []func()
}

func (r *run) close() {
	for _, f := range slices.Backward(r.stops) {
		f()
	}
}

// up starts the emulators the environment lacks, creates the template's
// resources, builds the bootstraps of ids (every function if none) and
// hosts them. Call close even on error.
func up(ctx context.Context, o Options, addr string, concurrency int, ids ...string) (*run, error) {
	if o.Template == "" {
		o.Template = "template.yaml"
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	r := &run{tmpl: o.Template, log: o.Log}
	t, err := samlocal.Load(o.Template)
	if err != nil {
		return r, err
	}
	if err := r.startEmulators(ctx); err != nil {
		return r, err
	}
	if r.cfg, err = config.LoadDefaultConfig(ctx); err != nil {
		return r, err
	}
	if r.stack, err = samlocal.Up(ctx, t, r.cfg, samlocal.Options{StackName: o.StackName, Params: o.Params}); err != nil {
		return r, err
	}
	r.ids = ids
	if len(ids) == 0 {
		r.ids = t.Functions()
	}
	dir, err := os.MkdirTemp("", "slotq-sam")
	if err != nil {
		return r, err
	}
	r.stops = append(r.stops, func() { os.RemoveAll(dir) })
	root, _ := filepath.Abs(filepath.Dir(o.Template))
	fmt.Fprintf(r.log, "slotq sam: building %s\n", strings.Join(r.ids, ", "))
	if err := samlocal.Build(ctx, root, dir, r.ids...); err != nil {
		return r, err
	}
	fns, err := r.stack.Host(dir, r.ids...)
	if err != nil {
		return r, err
	}
	for i := range fns {
		if fns[i].Name == local.WorkerFunction && concurrency > 0 {
			fns[i].Concurrency = concurrency
		}
	}
	if r.host, err = lambdahost.Start(fns, lambdahost.Options{Addr: addr, Output: r.log}); err != nil {
		return r, err
	}
	r.stops = append(r.stops, func() { r.host.Close() })
	return r, nil
}

// Invoke builds the bootstrap of the function with logical id fn, invokes
// it once with payload and returns its answer: a function error is in the
// Result, not the error.
func Invoke(ctx context.Context, o Options, fn string, payload []byte) (lambdahost.Result, error) {
	r, err := up(ctx, o, "", 0, fn)
	defer r.close()
	if err != nil {
		return lambdahost.Result{}, err
	}
	return r.host.Invoke(ctx, fn, payload)
}

// Serve builds every function's bootstrap, serves the Invoke API for them
// on o.Addr with the emulated SQS event source and schedule in front, and
// returns when ctx ends.
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Addr == "" {
		o.Addr = local.DefaultAddr
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 5
	}
	r, err := up(ctx, o.Options, o.Addr, o.Concurrency)
	defer r.close()
	if err != nil {
		return err
	}
	stk, err := local.FromTemplate(r.tmpl)
	if err != nil {
		return err
	}
	if o.ResumeEvery > 0 {
		stk.ResumeEvery = o.ResumeEvery
	}
	st, url := r.stack, r.host.URL()
	fmt.Fprintf(r.log, "slotq sam: Invoke API for %s on %s\n", strings.Join(r.ids, ", "), url)
	for _, id := range slices.Sorted(maps.Keys(st.Tables)) {
		fmt.Fprintf(r.log, "  %-16s table %s\n", id, st.Tables[id])
	}
	for _, id := range slices.Sorted(maps.Keys(st.Queues)) {
		fmt.Fprintf(r.log, "  %-16s queue %s\n", id, st.Queues[id])
	}
	fmt.Fprintf(r.log, "  event source    SlotQueue → WorkerFunction, batches of %d, up to %d at once\n", stk.BatchSize, o.Concurrency)
	fmt.Fprintf(r.log, "  schedule        ResumeFunction every %s\n", stk.ResumeEvery)
	fmt.Fprintf(r.log, "try (AWS CLI v1; with v2 add --cli-binary-format raw-in-base64-out):\n  AWS_DEFAULT_REGION=us-east-1 aws lambda invoke --endpoint-url %s --function-name EnqueueFunction --payload file://events/enqueue.json out.json\n", url)
	return Emulation(stk, r.host, esm.NewSQS(sqs.NewFromConfig(r.cfg), st.Queues["SlotQueue"]), o.Concurrency,
		slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelWarn}))).Run(ctx)
}

// Emulation is what AWS plays in front of the bootstraps inv runs, with
// the event source mapping and schedule of stk (a template's, every
// setting given: local.FromTemplate, local.StackDefaults): the worker's
// SQS event source on q and the resume function's schedule.
func Emulation(stk local.Stack, inv lambdahost.Invoker, q esm.Queue, concurrency int, log *slog.Logger) esm.Emulation {
	return esm.Emulation{
		Invoker: inv, Queue: q, Worker: local.WorkerFunction, Resume: local.ResumeFunction, Log: log,
		Mapping: esm.Config{BatchSize: stk.BatchSize, BatchingWindow: stk.BatchingWindow,
			ReportBatchItemFailures: stk.ReportBatchItemFailures, Concurrency: concurrency},
		Every: stk.ResumeEvery, Input: []byte(stk.ResumeInput), Retries: stk.ResumeRetries,
	}
}

// emulatorsPkg is the command that starts the emulators, in the
// checkout whose Makefile builds the bootstraps.
const emulatorsPkg = "./internal/dev/emulator/cmd/emulators"

// startEmulators starts DynamoDB Local and moto_server for the services
// the environment gives no endpoint for, and points the environment at
// them; close stops them. They run in a program of their own, built from
// the template's checkout (emulatorsPkg), so that the slotq command links
// no emulator launcher.
func (r *run) startEmulators(ctx context.Context) error {
	var flags []string
	if !hasEndpoint("AWS_ENDPOINT_URL_DYNAMODB") {
		fmt.Fprintln(r.log, "slotq sam: starting DynamoDB Local (the first run fetches it with npm, about 50 MB)")
		flags = append(flags, "-dynamodb")
	}
	if !hasEndpoint("AWS_ENDPOINT_URL_SQS") {
		flags = append(flags, "-sqs")
	}
	if len(flags) == 0 {
		return nil
	}
	env, stop, err := r.emulators(ctx, flags)
	if stop != nil {
		r.stops = append(r.stops, stop)
	}
	if err != nil {
		return fmt.Errorf("no DynamoDB or SQS endpoint in the environment and the emulators did not start: %w", err)
	}
	setEnv(env)
	if slices.Contains(flags, "-dynamodb") {
		fmt.Fprintf(r.log, "slotq sam: DynamoDB Local on %s (set AWS_ENDPOINT_URL_DYNAMODB to use another endpoint)\n", env["AWS_ENDPOINT_URL_DYNAMODB"])
	}
	if slices.Contains(flags, "-sqs") {
		fmt.Fprintf(r.log, "slotq sam: moto_server for SQS on %s (set AWS_ENDPOINT_URL_SQS to use another endpoint)\n", env["AWS_ENDPOINT_URL_SQS"])
	}
	return nil
}

// emulators builds emulatorsPkg in the template's checkout, runs it with
// flags and reads the environment it prints up to its line "ready". stop
// interrupts it, which stops the emulators, and waits for it.
func (r *run) emulators(ctx context.Context, flags []string) (env map[string]string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "slotq-emulators")
	if err != nil {
		return nil, nil, err
	}
	stops := []func(){func() { os.RemoveAll(dir) }}
	stop = func() {
		for _, f := range slices.Backward(stops) {
			f()
		}
	}
	bin := filepath.Join(dir, "emulators")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, emulatorsPkg)
	build.Dir, build.Stdout, build.Stderr = filepath.Dir(r.tmpl), r.log, r.log
	if err := build.Run(); err != nil {
		return nil, stop, fmt.Errorf("build %s: %w", emulatorsPkg, err)
	}
	cmd := exec.Command(bin, flags...)
	cmd.Stderr = r.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, stop, err
	}
	if err := cmd.Start(); err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	env = map[string]string{}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if lines.Text() == "ready" {
			go io.Copy(io.Discard, out)
			return env, stop, nil
		}
		if k, v, ok := strings.Cut(strings.TrimPrefix(lines.Text(), "export "), "="); ok {
			env[k] = v
		}
	}
	return nil, stop, fmt.Errorf("%s ended before it was ready", emulatorsPkg)
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
