package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/bench/benchdoc"
	"github.com/slotq/slotq/internal/cli/timeline"
)

// defaultBench is the workload of `slotq bench` (issue 2's benchmark):
// 8 producers × 100 jobs at 10ms.
var defaultBench = demoConfig{
	Queue: "bench", Producers: 8, Jobs: 100, Batch: 3, Workers: 4,
	Interval: 10 * time.Millisecond, Seed: 1, KeyMaxRunning: 1,
}

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
	cfg := demoFlags(cmd.Flags(), defaultBench)
	runs := cmd.Flags().Int("runs", 5, "number of runs")
	logLevel := logFlag(cmd.Flags())
	out := docFlags(cmd.Flags())
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		return bench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, *runs, *logLevel, out.with(cmd))
	})
	cmd.AddCommand(newBenchLanesCmd(), newBenchFairCmd())
	return cmd
}

func bench(ctx context.Context, stdout, stderr io.Writer, cfg *demoConfig, runs int, logLevel string, out docOut) int {
	if code, ok := checkWorkload("bench", cfg, logLevel, stderr); !ok {
		return code
	}
	if code, ok := out.checkRuns("bench", runs, stderr); !ok {
		return code
	}

	hiccups := ""
	if cfg.Stall > 0 {
		hiccups += fmt.Sprintf(", one worker stalled %s once", cfg.Stall)
	}
	if cfg.SlowGates > 0 {
		hiccups += fmt.Sprintf(", %g%% of gate writes 20–50ms slow", 100*cfg.SlowGates)
	}
	fmt.Fprintf(stdout, "slotq bench: demo workload, %d producers × %d jobs, %s, %d workers%s, %d runs\n\n",
		cfg.Producers, cfg.Jobs, cfg.limits(), cfg.Workers, hiccups, runs)
	header := []string{"run", "starts", "violations", "(handler)", "inversions", "re-tickets", "re-ticketed", "most/job", "missed",
		"late p50", "late p99", "p99 others", "1st decile", "10th decile", "gate→handler p99", "makespan", "ideal", "ratio"}
	row := "%6s %7s %11s %10s %11s %11s %12s %9s %7s %10s %10s %11s %11s %11s %17s %10s %10s %8s"
	onModel := cfg.Store == storeModel
	if onModel {
		header = append(header, unitsHeader...)
		row += strings.Repeat(" %12s", len(unitsHeader))
	}
	row += "\n"
	printRow := func(cells []string) {
		args := make([]any, len(cells))
		for i, c := range cells {
			args[i] = c
		}
		fmt.Fprintf(stdout, row, args...)
	}
	printRow(header)
	code := exitOK
	var reps []report
	var rows [][]string
	for i := range runs {
		c := *cfg
		c.Seed = cfg.Seed + uint64(i)
		res, err := runDemo(ctx, c, nil)
		if err != nil {
			fmt.Fprintf(stderr, "slotq bench: run %d: %v\n", i+1, err)
			return exitFail
		}
		r := newReport(c, res)
		reps = append(reps, r)
		p, rt := r.promise, r.retickets
		rows = append(rows, []string{strconv.Itoa(i + 1), strconv.Itoa(r.handler.Starts),
			strconv.Itoa(r.gate.Violations), strconv.Itoa(r.handler.Violations), strconv.Itoa(r.handler.Inversions),
			strconv.Itoa(res.Retickets), fmt.Sprintf("%.1f %%", rt.Share()), strconv.Itoa(rt.Most),
			strconv.Itoa(len(res.Missed)), human(p.P50), human(p.P99), human(p.P99Others),
			human(p.Deciles[0]), human(p.Deciles[9]),
			human(r.delay[1]), human(r.handler.Makespan), human(r.handler.Ideal), fmt.Sprintf("%.4f", r.handler.Ratio())})
		if onModel && res.Units != nil {
			rows[len(rows)-1] = append(rows[len(rows)-1], newUnitsPerStart(*res.Units, len(res.Starts)).cells()...)
		}
		printRow(rows[len(rows)-1])
		if r.keys.Keys > 0 {
			fmt.Fprintf(stdout, "%6s %d keys, busiest %d jobs: %d violations of a key's limit at the gate, %d between handler begins\n",
				"", r.keys.Keys, r.keys.Busiest, r.keys.Gate, r.keys.Handler)
		}
		if r.verdict(stderr, fmt.Sprintf("slotq bench: run %d", i+1)) != exitOK {
			code = exitFail
		}
		if ctx.Err() != nil {
			break
		}
	}
	med := func(f func(report) time.Duration) string {
		ds := make([]time.Duration, len(reps))
		for i, r := range reps {
			ds[i] = f(r)
		}
		return human(timeline.Percentile(ds, 50))
	}
	medInt := func(f func(report) int) string {
		ns := make([]int, len(reps))
		for i, r := range reps {
			ns[i] = f(r)
		}
		slices.Sort(ns)
		return strconv.Itoa(ns[(len(ns)-1)/2])
	}
	medFloat := func(f func(report) float64) float64 {
		xs := make([]float64, len(reps))
		for i, r := range reps {
			xs[i] = f(r)
		}
		slices.Sort(xs)
		return xs[(len(xs)-1)/2]
	}
	violations := 0
	for _, r := range reps {
		violations += r.gate.Violations
	}
	rows = append(rows, []string{"median", "",
		medInt(func(r report) int { return r.gate.Violations }),
		medInt(func(r report) int { return r.handler.Violations }),
		medInt(func(r report) int { return r.handler.Inversions }),
		medInt(func(r report) int { return r.res.Retickets }),
		fmt.Sprintf("%.1f %%", medFloat(func(r report) float64 { return r.retickets.Share() })),
		medInt(func(r report) int { return r.retickets.Most }),
		medInt(func(r report) int { return len(r.res.Missed) }),
		med(func(r report) time.Duration { return r.promise.P50 }),
		med(func(r report) time.Duration { return r.promise.P99 }),
		med(func(r report) time.Duration { return r.promise.P99Others }),
		med(func(r report) time.Duration { return r.promise.Deciles[0] }),
		med(func(r report) time.Duration { return r.promise.Deciles[9] }),
		med(func(r report) time.Duration { return r.delay[1] }),
		med(func(r report) time.Duration { return r.handler.Makespan }),
		med(func(r report) time.Duration { return r.handler.Ideal }),
		fmt.Sprintf("%.4f", medFloat(func(r report) float64 { return r.handler.Ratio() }))})
	if onModel {
		for i := range unitsHeader {
			rows[len(rows)-1] = append(rows[len(rows)-1], medCell(rows[:len(rows)-1], len(rows[0])-len(unitsHeader)+i))
		}
	}
	printRow(rows[len(rows)-1])
	fmt.Fprintf(stdout, "\nspacing violations at the gate, all runs: %d (must be 0)\n", violations)
	fmt.Fprintf(stdout, "violations: starts closer than interval − skew, timed at the gate; (handler): the same, timed as the handler began\n")
	fmt.Fprintf(stdout, "lateness: handler begin − the slot_at the job's enqueue answered; p99 others: of the jobs that missed no slot;\n"+
		"  deciles: median lateness of the first and the last tenth of those jobs' starts (a ratchet makes the last later)\n")
	fmt.Fprintf(stdout, "re-ticketed: share of starts whose job took a new ticket first; most/job: the most new tickets one job took\n")
	fmt.Fprintf(stdout, "missed: jobs whose worker came more than skew late for their start and gave the slot up (a new ticket)\n")
	fmt.Fprintf(stdout, "ratio: makespan / ideal, ideal = (n−1)·interval (the limit's arithmetic; with keys, the busiest key's under its own limit if longer)\n")
	if onModel {
		fmt.Fprintf(stdout, "on the model of DynamoDB, per start: hot writes, the write units billed on the queue's own partition (its state item: the takes, "+
			"the gates, every refused condition); hot reads, the reads of it; refused, conditions refused there; throttled, calls refused there "+
			"for its throughput; all writes, the write units of every item; peak, the most write units the queue's partition took in one second\n")
	}
	header = slices.Clone(header)
	header[2] = "violations at the gate"
	return out.finish("bench", stdout, stderr, benchdoc.Table{Command: out.Command, Header: header, Rows: rows}, code)
}

// unitsHeader heads the columns of what a run would cost on DynamoDB
// (unitsPerStart.cells), when it ran on the model of it.
var unitsHeader = []string{"hot writes", "hot reads", "refused", "throttled", "all writes", "peak WCU/s"}

// cells are u's columns under unitsHeader.
func (u unitsPerStart) cells() []string {
	return []string{fmt.Sprintf("%.2f", u.HotWriteUnits), fmt.Sprintf("%.2f", u.HotReads), fmt.Sprintf("%.3f", u.RefusedConditions),
		fmt.Sprintf("%.3f", u.Throttled), fmt.Sprintf("%.2f", u.All.WriteUnits), fmt.Sprintf("%.0f", u.HotPeakWriteUnitsSec)}
}

// medCell is the median of column col of rows, read as numbers, written
// as its cells are.
func medCell(rows [][]string, col int) string {
	var xs []float64
	digits := 0
	for _, r := range rows {
		if col >= len(r) {
			continue
		}
		x, err := strconv.ParseFloat(r[col], 64)
		if err != nil {
			continue
		}
		if i := strings.IndexByte(r[col], '.'); i >= 0 {
			digits = len(r[col]) - i - 1
		}
		xs = append(xs, x)
	}
	if len(xs) == 0 {
		return ""
	}
	slices.Sort(xs)
	return strconv.FormatFloat(xs[(len(xs)-1)/2], 'f', digits, 64)
}

// promiseFigures is a run's lateness against the slot_at each job was
// promised at enqueue: its first start's, whatever slot it started on.
type promiseFigures struct {
	P50, P99 time.Duration
	// P99Others leaves out the jobs that missed a slot.
	P99Others time.Duration
	// Deciles holds the median lateness of each tenth of those starts
	// (the jobs that missed no slot), in start order.
	Deciles [10]time.Duration
}

func newPromiseFigures(res demoResult) promiseFigures {
	var all, others []time.Duration
	seen := map[string]bool{}
	for _, st := range res.Starts { // in start order
		slotAt, ok := res.Promised[st.JobID]
		if !ok || seen[st.JobID] {
			continue
		}
		seen[st.JobID] = true
		d := st.At.Sub(slotAt)
		all = append(all, d)
		if !res.Missed[st.JobID] {
			others = append(others, d)
		}
	}
	var f promiseFigures
	if len(all) == 0 {
		return f
	}
	if n := len(others); n > 0 {
		for i := range f.Deciles {
			f.Deciles[i] = timeline.Percentile(others[i*n/10:max((i+1)*n/10, i*n/10+1)], 50)
		}
	}
	f.P50, f.P99 = timeline.Percentile(all, 50), timeline.Percentile(all, 99)
	f.P99Others = timeline.Percentile(others, 99)
	return f
}

// defaultLanes is the workload of `slotq bench lanes`: 20 keys × 20 jobs,
// each running 1–5 intervals, at 10ms, with workers enough that they never
// hold a job back.
var defaultLanes = lanesConfig{
	Queue: "lanes", Keys: 20, Jobs: 20, MinRun: 1, MaxRun: 5, Batch: 100, Workers: 64,
	Interval: 10 * time.Millisecond, Seed: 1,
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
	c := defaultLanes
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
	runs := fs.Int("runs", 5, "number of runs")
	logLevel := logFlag(fs)
	out := docFlags(fs)
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		return benchLanes(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), c, *runs, *logLevel, out.with(cmd))
	})
	return cmd
}

func benchLanes(ctx context.Context, stdout, stderr io.Writer, c lanesConfig, runs int, logLevel string, out docOut) int {
	if code, ok := out.checkRuns("bench lanes", runs, stderr); !ok {
		return code
	}
	if code, ok := setLogger("bench lanes", logLevel, stderr, &c.Logger, func() error { return c.validate() }); !ok {
		return code
	}

	capped := ""
	if c.MaxRunning > 0 {
		capped = fmt.Sprintf(", max_running %d", c.MaxRunning)
	}
	fmt.Fprintf(stdout, "slotq bench lanes: %d keys × %d jobs, each running %g–%g intervals, interval %s%s, %d workers, %d runs\n\n",
		c.Keys, c.Jobs, c.MinRun, c.MaxRun, c.Interval, capped, c.Workers, runs)
	const row = "%6s %5s %9s %6s %10s %11s %8s %8s %10s %10s %10s %10s %8s\n"
	header := []string{"run", "jobs", "overlaps", "order", "reordered", "re-tickets", "max/key", "at once",
		"late p50", "late p99", "makespan", "ideal", "ratio"}
	var rows [][]string
	printRow := func(cells ...string) {
		rows = append(rows, cells)
		args := make([]any, len(cells))
		for i, c := range cells {
			args[i] = c
		}
		fmt.Fprintf(stdout, row, args...)
	}
	printRow(header...)
	code := exitOK
	var reps []lanesReport
	for i := range runs {
		rc := c
		rc.Seed = c.Seed + uint64(i)
		res, err := runLanes(ctx, rc)
		if err != nil {
			fmt.Fprintf(stderr, "slotq bench lanes: run %d: %v\n", i+1, err)
			return exitFail
		}
		r := newLanesReport(rc, res)
		reps = append(reps, r)
		printRow(strconv.Itoa(i+1), strconv.Itoa(len(res.Runs)), strconv.Itoa(r.Overlaps),
			strconv.Itoa(r.OrderViolations), strconv.Itoa(r.Reordered), strconv.Itoa(res.Retickets),
			strconv.Itoa(r.PerKey), strconv.Itoa(r.Concurrent), human(r.LatenessP50), human(r.LatenessP99),
			human(r.Makespan), human(r.Ideal), fmt.Sprintf("%.4f", r.Ratio()))
		if r.verdict(stderr, fmt.Sprintf("slotq bench lanes: run %d", i+1)) != exitOK {
			code = exitFail
		}
		if ctx.Err() != nil {
			break
		}
	}
	medInt := func(f func(lanesReport) int) string {
		ns := make([]int, len(reps))
		for i, r := range reps {
			ns[i] = f(r)
		}
		slices.Sort(ns)
		return strconv.Itoa(ns[(len(ns)-1)/2])
	}
	med := func(f func(lanesReport) time.Duration) string {
		ds := make([]time.Duration, len(reps))
		for i, r := range reps {
			ds[i] = f(r)
		}
		return human(timeline.Percentile(ds, 50))
	}
	ratios := make([]float64, len(reps))
	for i, r := range reps {
		ratios[i] = r.Ratio()
	}
	slices.Sort(ratios)
	printRow("median", medInt(func(r lanesReport) int { return len(r.res.Runs) }),
		medInt(func(r lanesReport) int { return r.Overlaps }),
		medInt(func(r lanesReport) int { return r.OrderViolations }),
		medInt(func(r lanesReport) int { return r.Reordered }),
		medInt(func(r lanesReport) int { return r.res.Retickets }),
		medInt(func(r lanesReport) int { return r.PerKey }),
		medInt(func(r lanesReport) int { return r.Concurrent }),
		med(func(r lanesReport) time.Duration { return r.LatenessP50 }),
		med(func(r lanesReport) time.Duration { return r.LatenessP99 }),
		med(func(r lanesReport) time.Duration { return r.Makespan }),
		med(func(r lanesReport) time.Duration { return r.Ideal }),
		fmt.Sprintf("%.4f", ratios[(len(ratios)-1)/2]))
	overlaps, order := 0, 0
	for _, r := range reps {
		overlaps, order = overlaps+r.Overlaps, order+r.OrderViolations
	}
	fmt.Fprintf(stdout, "\noverlaps within a key, all runs: %d (must be 0); ticket-order violations: %d (must be 0)\n", overlaps, order)
	fmt.Fprintf(stdout, "overlaps: runs that began before the previous run of their key ended; order: runs that began after a higher ticket of their key\n")
	fmt.Fprintf(stdout, "reordered: runs that began after a run of their key accepted later (a passed job takes a new ticket behind them)\n")
	fmt.Fprintf(stdout, "max/key: most runs of one key at once (must be 1); at once: most runs of the queue at once\n")
	fmt.Fprintf(stdout, "lateness: handler begin − slot; ratio: makespan / ideal, ideal = max(longest key's total run time, (n−1)·interval)\n")
	return out.finish("bench lanes", stdout, stderr, benchdoc.Table{Command: out.Command, Header: rows[0], Rows: rows[1:]}, code)
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
	c := defaultFair
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
	runs := fs.Int("runs", 1, "number of runs")
	logLevel := logFlag(fs)
	out := docFlags(fs)
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		return benchFair(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), c, *runs, *logLevel, out.with(cmd))
	})
	return cmd
}

// fairHeader is the table of `slotq bench fair`, one row a run.
var fairHeader = []string{"run", "jobs", "waited", "late key 1st start p50", "p99", "priority 1 booked p50", "p99",
	"priority 1 start p50", "p99", "A's makespan", "ideal", "ratio", "violations (handler)", "(gate)",
	"start − told slot p50", "p99", "max", "re-ticketed", "lost", "twice"}

// row is r as a row of fairHeader.
func (r fairReport) row(run string) []string {
	return []string{run, strconv.Itoa(r.Jobs), strconv.Itoa(r.Waited), human(r.LateFirstP50), human(r.LateFirstP99),
		human(r.UrgentBookedP50), human(r.UrgentBookedP99), human(r.UrgentStartP50), human(r.UrgentStartP99),
		human(r.HeavyMakespan), human(r.Ideal), fmt.Sprintf("%.4f", r.Ratio()),
		strconv.Itoa(r.Violations), strconv.Itoa(r.GateViolations),
		human(r.ToldP50), human(r.ToldP99), human(r.ToldMax), strconv.Itoa(r.Reticketed), strconv.Itoa(r.Lost), strconv.Itoa(r.Twice)}
}

func benchFair(ctx context.Context, stdout, stderr io.Writer, c fairConfig, runs int, logLevel string, out docOut) int {
	if code, ok := out.checkRuns("bench fair", runs, stderr); !ok {
		return code
	}
	if code, ok := setLogger("bench fair", logLevel, stderr, &c.Logger, func() error { return c.validate() }); !ok {
		return code
	}
	bound := "no bound (every job booked at enqueue)"
	switch {
	case c.BookAhead > 0 && c.KeyBookAhead > 0:
		bound = fmt.Sprintf("book_ahead %d, key_book_ahead %d", c.BookAhead, c.KeyBookAhead)
	case c.BookAhead > 0:
		bound = fmt.Sprintf("book_ahead %d", c.BookAhead)
	case c.KeyBookAhead > 0:
		bound = fmt.Sprintf("key_book_ahead %d", c.KeyBookAhead)
	}
	urgentOf := "without a key"
	if c.UrgentKey != "" {
		urgentOf = "of key " + c.UrgentKey
	}
	fmt.Fprintf(stdout, "slotq bench fair: %s, %s; key A enqueues %d jobs at once, %s later %d keys %d each, %s after A %d jobs of priority 1 %s; %d workers, %d runs\n\n",
		c.limits(), bound, c.Heavy, human(c.LateAfter), c.LateKeys, c.LateJobs, human(c.UrgentAfter), c.Urgent, urgentOf, c.Workers, runs)
	var rows [][]string
	tw := newTableWriter(stdout, fairHeader)
	code := exitOK
	for i := range runs {
		rc := c
		rc.Seed = c.Seed + uint64(i)
		res, err := runFair(ctx, rc)
		if err != nil {
			fmt.Fprintf(stderr, "slotq bench fair: run %d: %v\n", i+1, err)
			return exitFail
		}
		r := newFairReport(rc, res)
		rows = append(rows, r.row(strconv.Itoa(i+1)))
		tw.row(rows[len(rows)-1])
		if p := r.problems(); len(p) > 0 {
			fmt.Fprintf(stderr, "slotq bench fair: run %d: FAIL: %s\n", i+1, strings.Join(p, "; "))
			code = exitFail
		}
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintf(stdout, "\nlate key 1st start: a late key's first start after its enqueue, over the keys (goal ≤ 1s with a bound)\n")
	fmt.Fprintf(stdout, "priority 1 booked/start: an urgent job's booking (its slot) and its start after its enqueue\n")
	fmt.Fprintf(stdout, "ratio: A's makespan (its first start to its last) / ideal, the least span of every job's start at the queue's rate (goal ≤ 1.02)\n")
	fmt.Fprintf(stdout, "violations: starts that broke the queue's limit, timed as the handler began, and at the gate (must be 0)\n")
	fmt.Fprintf(stdout, "start − told slot: the handler's begin against the slot_at the job was told when booked, at enqueue or from the waiting room (goal p99 ≤ 2ms);\n"+
		"  re-ticketed: jobs whose worker came too late for their slot and took a new ticket (they start on a slot they were not told)\n")
	fmt.Fprintf(stdout, "lost: accepted jobs not succeeded or never run; twice: jobs run more than once (both must be 0)\n")
	return out.finish("bench fair", stdout, stderr, benchdoc.Table{Command: out.Command, Header: fairHeader, Rows: rows}, code)
}

// tableWriter prints rows under a header, each cell as wide as its
// column's header (at least 8).
type tableWriter struct {
	w      io.Writer
	widths []int
}

func newTableWriter(w io.Writer, header []string) *tableWriter {
	t := &tableWriter{w: w}
	for _, h := range header {
		t.widths = append(t.widths, max(8, len([]rune(h))))
	}
	t.row(header)
	return t
}

func (t *tableWriter) row(cells []string) {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%*s", t.widths[i], c)
	}
	fmt.Fprintln(t.w, b.String())
}
