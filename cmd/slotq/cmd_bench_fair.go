package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/dev/benchdoc"
)

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
