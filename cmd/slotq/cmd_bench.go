package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/bench/benchdoc"
	"github.com/slotq/slotq/internal/bench/workload"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the demo workload several times and report spacing, lateness and makespan (bench lanes: keyed jobs)",
		Long: "Runs the demo workload several times, silently, and reports per run and as medians:\n" +
			"spacing violations (must be 0), lateness p50/p99, and the makespan against the\n" +
			"ideal (n−1)·interval, and the share of starts re-ticketed with the most re-tickets of one\n" +
			"job. Exits 1 if a run had a violation or left a job unfinished. With --doc and --table it\n" +
			"also writes the table, with the command and the host's load average, between the\n" +
			"<!-- bench:TABLE begin --> and <!-- bench:TABLE end --> markers of a Markdown file (make bench).\n" +
			"'slotq bench lanes' does the same for keyed jobs and max_running.",
		Args: nArgs(0, 0),
	}
	cmd.AddCommand(newBenchLanesCmd(), newBenchFairCmd())
	return measuring(cmd, 5, demoFlags(cmd.Flags(), workload.DefaultBench), workload.Bench)
}

func newBenchLanesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lanes",
		Short: "Run a workload of keyed jobs several times: overlaps and order per key, makespan",
		Long: "Runs a workload of keyed jobs (docs/guarantees.md §12) several times on the embedded backend:\n" +
			"keys × jobs, keys interleaved at random, each job running a random min-run..max-run\n" +
			"intervals. Reports per run and as medians: runs of a key that overlapped or left ticket\n" +
			"order (must be 0), the most runs of one key at once (1), and the makespan against the ideal\n" +
			"max(longest key's total run time, (n−1)·interval). Exits 1 on an overlap, an order or\n" +
			"spacing violation, more runs at once than --max-running, or a job left unfinished.",
		Args: nArgs(0, 0),
	}
	fs := cmd.Flags()
	c := workload.DefaultLanes
	fs.StringVar(&c.Queue, "queue", c.Queue, "queue name")
	fs.IntVar(&c.Keys, "keys", c.Keys, "number of keys")
	fs.IntVar(&c.Jobs, "jobs", c.Jobs, "jobs of each key")
	fs.Float64Var(&c.MinRun, "min-run", c.MinRun, "shortest run of a job, in intervals")
	fs.Float64Var(&c.MaxRun, "max-run", c.MaxRun, "longest run of a job, in intervals (each run is uniform between the two)")
	fs.IntVar(&c.Batch, "batch", c.Batch, "jobs per enqueue call")
	fs.IntVar(&c.Workers, "workers", c.Workers, "concurrent workers, as that many Lambda invocations")
	fs.DurationVar(&c.Interval, "interval", c.Interval, "the queue's interval: least time between two starts")
	fs.IntVar(&c.MaxRunning, "max-running", c.MaxRunning, "the queue's max_running: most runs at once (0: no cap)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the key order and the run lengths (run i uses seed+i−1)")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "give up waiting for the jobs of a run after this (0: 2·ideal + 30s)")
	return measuring(cmd, 5, func() workload.LanesConfig { return c }, workload.BenchLanes)
}

func newBenchFairCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fair",
		Short: "Run a flood of one key, late keys and urgent jobs on a queue with a waiting room: fair share and priority",
		Long: "Runs, on the embedded backend, a queue with a booking horizon (--key-book-ahead, --book-ahead):\n" +
			"key A enqueues --heavy jobs at once; --late-after later --late-keys other keys enqueue\n" +
			"--late-jobs each; --urgent-after after A's flood --urgent jobs of priority 1 arrive. Reports\n" +
			"per run: each late key's first start after its enqueue (p50/p99 over the keys), the urgent\n" +
			"jobs' wait for their booking and their start, A's makespan against the ideal of every job at\n" +
			"the queue's rate, violations of the queue's limit (handler and gate), and each start against\n" +
			"the slot_at its job was told when it was booked (at enqueue, or from the waiting room).\n" +
			"--key-book-ahead 0 runs the same without a bound: every job booked at enqueue. Exits 1 on\n" +
			"a violation at the gate, a job lost or run twice. With --doc and --table it writes the table\n" +
			"between the markers of a Markdown file, as 'slotq bench' does.",
		Example: "  $ slotq bench fair --heavy 400 --late-keys 5   # a small run",
		Args:    nArgs(0, 0),
	}
	fs := cmd.Flags()
	c := workload.DefaultFair
	fs.StringVar(&c.Queue, "queue", c.Queue, "queue name")
	fs.Var(rateFlag{&c.Rate}, "rate", "the queue's limit as a rate `N/PERIOD`")
	fs.IntVar(&c.Burst, "burst", c.Burst, "with --rate: how many starts beyond one may come together after an idle time")
	fs.IntVar(&c.BookAhead, "book-ahead", c.BookAhead, "the queue's book_ahead: most of its jobs holding a slot at once (0: no bound)")
	fs.IntVar(&c.KeyBookAhead, "key-book-ahead", c.KeyBookAhead, "the queue's key_book_ahead: most of one key's jobs holding a slot at once (0: no bound)")
	fs.IntVar(&c.KeyMaxRunning, "key-max-running", c.KeyMaxRunning, "the queue's key_max_running: how many jobs of one key run at once")
	fs.IntVar(&c.Heavy, "heavy", c.Heavy, "jobs key A enqueues at once")
	fs.IntVar(&c.LateKeys, "late-keys", c.LateKeys, "keys that come late")
	fs.IntVar(&c.LateJobs, "late-jobs", c.LateJobs, "jobs each late key enqueues")
	fs.DurationVar(&c.LateAfter, "late-after", c.LateAfter, "when the late keys come, after A's flood")
	fs.IntVar(&c.Urgent, "urgent", c.Urgent, "jobs of priority 1")
	fs.StringVar(&c.UrgentKey, "urgent-key", c.UrgentKey, "the urgent jobs' key (empty: no key)")
	fs.DurationVar(&c.UrgentAfter, "urgent-after", c.UrgentAfter, "when the urgent jobs come, after A's flood")
	fs.IntVar(&c.Workers, "workers", c.Workers, "concurrent workers, as that many Lambda invocations")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the transport (run i uses seed+i−1)")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "give up waiting for the jobs of a run after this (0: 2·ideal + 30s)")
	return measuring(cmd, 1, func() workload.FairConfig { return c }, workload.BenchFair)
}

// measuring makes cmd a measuring command of slotq bench: it takes --runs
// (runs by default), --log, and --doc, --table and --note (benchdoc), and
// runs bench with them and the workload's config, read from its flags.
func measuring[C any](cmd *cobra.Command, runs int, cfg func() C,
	bench func(ctx context.Context, stdout, stderr io.Writer, c C, runs int, logLevel string, out benchdoc.Out) int) *cobra.Command {
	fs := cmd.Flags()
	n := fs.Int("runs", runs, "number of runs")
	logLevel := logFlag(fs)
	out := benchdoc.Flags(fs)
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		return bench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg(), *n, *logLevel, out.With(cmd.CommandPath(), cmd.Flags()))
	})
	return cmd
}
