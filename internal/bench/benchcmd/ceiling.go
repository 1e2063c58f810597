package benchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/slotq/slotq/internal/bench/awssim"
	"github.com/slotq/slotq/internal/dev/dynamolocal"
)

// runCeiling measures one queue's ceiling on DynamoDB Local
// (awssim.Ceiling): a rate queue at rising rates, with producers
// enqueueing in calls of 1 job, then of 10. It starts DynamoDB Local
// itself (Java 17), prints a `figures:` line of cells per run and a
// `ceiling:` line per batch size: the highest rate kept at ≤ ×1.05 of
// the ideal makespan. `make bench` writes the figures into
// docs/performance.md (table ceiling) through internal/bench/benchdoc.
// Its figures depend on the host: DynamoDB Local is a JVM on the same
// cores as the workers.
func runCeiling(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rates := fs.String("rates", "50,100,200,400,800", "the queue's rates per second to run, comma-separated")
	batches := fs.String("batches", "1,10", "jobs per enqueue call to run each rate with, comma-separated")
	jobs := fs.Int("jobs", 0, fmt.Sprintf("jobs per run, a multiple of %d × the batch (0: max(320, 2×rate))", awssim.CeilingProducers))
	lead := fs.Duration("lead", awssim.CeilingLead, "how long before a start its worker goes to the gate")
	verbose := fs.Bool("v", false, "print the workers' failures and the requests by step")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	rs, err := ints(*rates)
	if err == nil {
		var bs []int
		if bs, err = ints(*batches); err == nil {
			o := awssim.CeilingOptions{Jobs: *jobs, Lead: *lead}
			if *verbose {
				o.Log = stderr
			}
			err = ceiling(ctx, stdout, rs, bs, o)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "ceiling:", err)
		return exitFail
	}
	return exitOK
}

func ceiling(ctx context.Context, stdout io.Writer, rates, batches []int, o awssim.CeilingOptions) error {
	db, err := dynamolocal.Start(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	for k, v := range db.Env() {
		os.Setenv(k, v)
	}
	cl, err := awssim.Open(ctx)
	if err != nil {
		return err
	}
	for _, batch := range batches {
		best := 0
		for _, rate := range rates {
			o.Rate, o.Batch = rate, batch
			r, err := awssim.Ceiling(ctx, cl, o)
			if err != nil {
				return fmt.Errorf("rate %d/1s, batches of %d: %w", rate, batch, err)
			}
			fmt.Fprintf(stdout, "figures: %s\n", r.Cells())
			if r.Kept() {
				best = max(best, rate)
			}
		}
		fmt.Fprintf(stdout, "ceiling: batches of %d: the highest rate kept at ≤ ×%.2f of the ideal is %d/1s\n", batch, awssim.CeilingKept, best)
	}
	return nil
}

// ints reads a comma-separated list of positive whole numbers.
func ints(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive whole number", f)
		}
		out = append(out, n)
	}
	return out, nil
}
