// Package costs measures what one slotq job costs on AWS: it runs the
// engine on its real adapters (internal/dynamostore, internal/sqstransport) against
// DynamoDB Local and moto_server's SQS on loopback, counts DynamoDB request
// units, SQS requests, Lambda invocations and Lambda time per job for five
// kinds of job, turns them into dollars per million jobs with the prices in
// internal/bench/costs/pricelist, and measures enqueue throughput.
//
// `slotq-bench costs` (internal/bench/cmd/slotq-bench, which `slotq costs`
// and the last step of `make bench` run) starts the emulators and calls
// Run; docs/costs.md holds its output. Run's options and their flags are
// internal/bench/costs/costopt's, a leaf, so that the slotq command names
// the flags without linking the measurement. It is internal: a
// measurement of slotq's own stack, not a promise to users.
package costs

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/slotq/slotq/internal/bench/costs/costopt"
)

// Emulators start DynamoDB Local and moto_server on loopback and return
// the environment that points the AWS SDK at them, and how to stop them.
type Emulators func(ctx context.Context) (env []map[string]string, stop func(), err error)

// Run starts DynamoDB Local and moto_server on loopback (start), points
// this process's AWS environment at them, measures every scenario and
// writes the report (Markdown tables) to w.
func Run(ctx context.Context, w io.Writer, o costopt.Options, start Emulators) error {
	for _, name := range o.Scenarios {
		if !slices.ContainsFunc(scenarios, func(sc scenario) bool { return sc.name == name }) {
			return fmt.Errorf("no scenario %q", name)
		}
	}
	if o.Template == "" {
		o.Template = "template.yaml"
	}
	if o.Runs <= 0 {
		o.Runs = 3
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, costopt.Timeout)
	defer cancel()
	envs, stop, err := start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	for _, env := range envs {
		for k, v := range env {
			os.Setenv(k, v)
		}
	}

	mem := memorySizes(o.Template)
	skew := templateSkew(o.Template)
	b, err := newBench(ctx, skew, o.Calls)
	if err != nil {
		return err
	}
	var idle []fixed
	for _, n := range idleQueues {
		fmt.Fprintf(progress, "resume runs, %d idle queues …\n", n)
		f, err := b.fixedResume(ctx, n)
		if err != nil {
			return fmt.Errorf("fixed resume cost, %d queues: %w", n, err)
		}
		idle = append(idle, f)
	}
	var results []result
	for _, sc := range scenarios {
		if len(o.Scenarios) > 0 && !slices.Contains(o.Scenarios, sc.name) {
			continue
		}
		fmt.Fprintf(progress, "scenario %s …\n", sc.name)
		r, err := b.measure(ctx, sc)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sc.name, err)
		}
		results = append(results, r)
	}
	fmt.Fprintf(progress, "throughput …\n")
	tp, err := b.throughput(ctx, o.Runs)
	if err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	report(w, mem, skew, results, idle, tp, o.Template)
	reportCalls(w, results)
	return nil
}
