package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slotq/slotq/internal/bench/workload"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// slotq demo and slotq bench run internal/bench/workload's workloads:
// these are their commands and flags.

func newDemoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run producers and workers on the embedded backend and show a live timeline of starts",
		Long: "Runs slotq in this process on the embedded backend: producers enqueue jobs onto one\n" +
			"queue while several workers run them, and shows each start as it happens, then a\n" +
			"summary. Exits 1 if the starts broke the queue's limit at the gate or a job did not finish.",
		Example: "  $ slotq demo --producers 8 --interval 100ms",
		Args:    nArgs(0, 0),
	}
	cfg := demoFlags(cmd.Flags(), workload.DefaultDemo)
	asJSON := cmd.Flags().Bool("json", false, "print one JSON line per start on stdout and nothing else")
	logLevel := logFlag(cmd.Flags())
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		return workload.Demo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg(), *asJSON, *logLevel)
	})
	return cmd
}

// logFlag is --log of the commands that run a workload.
func logFlag(fs *pflag.FlagSet) *string {
	return fs.String("log", "", "log the engine at this `level` (debug, info, warn, error) to stderr; default off")
}

// demoFlags registers the flags of the demo workload on fs, with the given
// defaults, and returns what reads the config they filled once they are
// parsed.
func demoFlags(fs *pflag.FlagSet, def workload.Config) func() workload.Config {
	c := def
	fs.StringVar(&c.Queue, "queue", def.Queue, "queue name")
	fs.IntVar(&c.Producers, "producers", def.Producers, "number of concurrent producers")
	fs.IntVar(&c.Jobs, "jobs", def.Jobs, "jobs each producer enqueues")
	fs.IntVar(&c.Batch, "batch", def.Batch, "most jobs in one enqueue call (each call takes 1..batch)")
	fs.IntVar(&c.Workers, "workers", def.Workers, "concurrent workers, as that many Lambda invocations")
	fs.DurationVar(&c.Interval, "interval", def.Interval, "the queue's interval: least time between two starts")
	fs.Var(rateFlag{&c.Rate}, "rate", "the queue's limit as a rate `N/PERIOD` (such as 500/1s) instead of an interval: GCRA, with --burst")
	fs.IntVar(&c.Burst, "burst", def.Burst, "with --rate: how many starts beyond one may come together after an idle time")
	fs.Var(rateFlag{&c.Window}, "window", "the queue's limit as a window `N/PERIOD` (such as 5000/1h) instead of an interval: at most N starts in any PERIOD")
	fs.IntVar(&c.Keys, "keys", def.Keys, "spread the jobs over this many keys (key0, key1, …; 0: no keys)")
	fs.Var(rateFlag{&c.KeyRate}, "key-rate", "with --keys: each key's own limit as a rate `N/PERIOD` (such as 2/1s), kept beside the queue's; with --key-burst")
	fs.IntVar(&c.KeyBurst, "key-burst", def.KeyBurst, "with --key-rate: how many starts of a key beyond one may come together after an idle time")
	fs.Var(rateFlag{&c.KeyWindow}, "key-window", "with --keys: each key's own limit as a window `N/PERIOD`: at most N starts of a key in any PERIOD")
	fs.IntVar(&c.KeyMaxRunning, "key-max-running", def.KeyMaxRunning, fmt.Sprintf("how many jobs of one key run at once: 1 (one at a time) to %d, or 0 (no cap: the key's limit alone spaces them)", slot.MaxKeyRunning))
	fs.DurationVar(&c.Skew, "skew", def.Skew, "the queue's skew: any j starts after a start come at least j·interval − skew after it (0: the default, min(2ms, interval/4))")
	fs.DurationVar(&c.Jitter, "jitter", def.Jitter, "delay each delivery by a random extra up to this (the transport's jitter)")
	fs.Uint64Var(&c.Seed, "seed", def.Seed, "seed for producer gaps, batch sizes and jitter")
	fs.DurationVar(&c.Lead, "lead", def.Lead, "how long before a start its worker goes to the gate (0: the default, 2ms; 50ms with --store dynamodb-model)")
	fs.DurationVar(&c.Stall, "stall", def.Stall, "stall one worker this long, once, halfway through the run (as it wakes for its job)")
	fs.Float64Var(&c.SlowGates, "slow-gates", def.SlowGates, "share of gate writes (0–1) that take 20–50ms longer: a slow store's tail")
	fs.StringVar(&c.Store, "store", workload.StoreEmbedded, fmt.Sprintf("the state store: %s (in memory), or %s (the embedded store behind DynamoDB's latencies and each partition's units a second; the run ends with what its calls would cost)", workload.StoreEmbedded, workload.StoreModel))
	fs.DurationVar(&c.Timeout, "timeout", def.Timeout, "give up waiting for the jobs after this (0: 2·jobs·interval + 30s)")
	return func() workload.Config {
		c.IntervalSet, c.WorkersSet = fs.Changed("interval"), fs.Changed("workers")
		return c
	}
}

// rateFlag is a flag whose value is a rate N/PERIOD (api.ParseRate).
type rateFlag struct{ r *api.Rate }

func (f rateFlag) String() string {
	if f.r == nil || f.r.IsZero() {
		return ""
	}
	return f.r.String()
}

func (f rateFlag) Set(s string) error {
	r, err := api.ParseRate(s)
	if err != nil {
		return err
	}
	*f.r = r
	return nil
}

func (f rateFlag) Type() string { return "rate" }
