package workload

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/bench/benchdoc"
	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/cli/timeline"
)

// DefaultBench is the workload of `slotq bench` (issue 2's benchmark):
// 8 producers × 100 jobs at 10ms.
var DefaultBench = Config{
	Queue: "bench", Producers: 8, Jobs: 100, Batch: 3, Workers: 4,
	Interval: 10 * time.Millisecond, Seed: 1, KeyMaxRunning: 1,
}

// benchColumns are the widths of Bench's columns.
var benchColumns = []int{6, 7, 11, 10, 11, 11, 12, 9, 7, 10, 10, 11, 11, 11, 17, 10, 10, 8}

// Bench runs the demo workload runs times, silently, seed after seed, and
// prints a row a run and the medians, as `slotq bench` does; with out's
// --doc and --table it writes the table into a Markdown file too. It
// returns the exit code: 1 if a run broke the limit at the gate or left
// a job unfinished.
func Bench(ctx context.Context, stdout, stderr io.Writer, cfg Config, runs int, logLevel string, out benchdoc.Out) int {
	if code, ok := cfg.check("bench", logLevel, stderr); !ok {
		return code
	}
	if code, ok := checkRuns(out, "bench", runs, stderr); !ok {
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
	widths := benchColumns
	onModel := cfg.Store == StoreModel
	if onModel {
		header = append(header, unitsHeader...)
		widths = slices.Concat(widths, slices.Repeat([]int{12}, len(unitsHeader)))
	}
	tw := newTable(stdout, header, widths...)
	var rows [][]string
	reps, code, ok := measurement[Config, demoResult, report]{
		name: "bench", seeded: Config.seeded, run: runQuiet, score: newReport,
		show: func(i int, r report) bool {
			p, rt, res := r.promise, r.retickets, r.res
			rows = append(rows, []string{strconv.Itoa(i + 1), strconv.Itoa(r.handler.Starts),
				strconv.Itoa(r.gate.Violations), strconv.Itoa(r.handler.Violations), strconv.Itoa(r.handler.Inversions),
				strconv.Itoa(res.Retickets), fmt.Sprintf("%.1f %%", rt.Share()), strconv.Itoa(rt.Most),
				strconv.Itoa(len(res.Missed)), clikit.Human(p.P50), clikit.Human(p.P99), clikit.Human(p.P99Others),
				clikit.Human(p.Deciles[0]), clikit.Human(p.Deciles[9]),
				clikit.Human(r.delay[1]), clikit.Human(r.handler.Makespan), clikit.Human(r.handler.Ideal), fmt.Sprintf("%.4f", r.handler.Ratio())})
			if onModel && res.Units != nil {
				rows[len(rows)-1] = append(rows[len(rows)-1], newUnitsPerStart(*res.Units, len(res.Starts)).cells()...)
			}
			tw.row(rows[len(rows)-1])
			if r.keys.Keys > 0 {
				fmt.Fprintf(stdout, "%6s %d keys, busiest %d jobs: %d violations of a key's limit at the gate, %d between handler begins\n",
					"", r.keys.Keys, r.keys.Busiest, r.keys.Gate, r.keys.Handler)
			}
			return r.verdict(stderr, fmt.Sprintf("slotq bench: run %d", i+1)) != clikit.ExitOK
		},
	}.measure(ctx, cfg, runs, stderr)
	if !ok {
		return code
	}
	violations := 0
	for _, r := range reps {
		violations += r.gate.Violations
	}
	rows = append(rows, []string{"median", "",
		medianInt(reps, func(r report) int { return r.gate.Violations }),
		medianInt(reps, func(r report) int { return r.handler.Violations }),
		medianInt(reps, func(r report) int { return r.handler.Inversions }),
		medianInt(reps, func(r report) int { return r.res.Retickets }),
		fmt.Sprintf("%.1f %%", median(reps, func(r report) float64 { return r.retickets.Share() })),
		medianInt(reps, func(r report) int { return r.retickets.Most }),
		medianInt(reps, func(r report) int { return len(r.res.Missed) }),
		medianHuman(reps, func(r report) time.Duration { return r.promise.P50 }),
		medianHuman(reps, func(r report) time.Duration { return r.promise.P99 }),
		medianHuman(reps, func(r report) time.Duration { return r.promise.P99Others }),
		medianHuman(reps, func(r report) time.Duration { return r.promise.Deciles[0] }),
		medianHuman(reps, func(r report) time.Duration { return r.promise.Deciles[9] }),
		medianHuman(reps, func(r report) time.Duration { return r.delay[1] }),
		medianHuman(reps, func(r report) time.Duration { return r.handler.Makespan }),
		medianHuman(reps, func(r report) time.Duration { return r.handler.Ideal }),
		fmt.Sprintf("%.4f", median(reps, func(r report) float64 { return r.handler.Ratio() }))})
	if onModel {
		for i := range unitsHeader {
			rows[len(rows)-1] = append(rows[len(rows)-1], medCell(rows[:len(rows)-1], len(benchColumns)+i))
		}
	}
	tw.row(rows[len(rows)-1])
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
	return finish(out, "bench", stdout, stderr, benchdoc.Table{Command: out.Command, Header: header, Rows: rows}, code)
}

// runQuiet runs the demo workload with no live timeline.
func runQuiet(ctx context.Context, cfg Config) (demoResult, error) { return runDemo(ctx, cfg, nil) }

// seeded is run i's config: the workload's seed + i.
func (c Config) seeded(i int) Config { c.Seed += uint64(i); return c }

// A measurement is how a bench command measures a workload of config C,
// run after run: each run's config (seeded), its run, its result Res
// scored into a report R, and the report shown.
type measurement[C, Res, R any] struct {
	// name is the command's, after "slotq " ("bench lanes").
	name   string
	seeded func(c C, i int) C
	run    func(ctx context.Context, c C) (Res, error)
	score  func(c C, res Res) R
	// show prints run i's row and says whether the run failed.
	show func(i int, r R) (failed bool)
}

// measure runs the workload of c runs times, until ctx ends, and returns
// the reports. A run that could not run ends it, said on stderr: ok is
// then false. code is the exit code: ExitFail if a run failed.
func (m measurement[C, Res, R]) measure(ctx context.Context, c C, runs int, stderr io.Writer) (reps []R, code int, ok bool) {
	code = clikit.ExitOK
	for i := range runs {
		rc := m.seeded(c, i)
		res, err := m.run(ctx, rc)
		if err != nil {
			fmt.Fprintf(stderr, "slotq %s: run %d: %v\n", m.name, i+1, err)
			return reps, clikit.ExitFail, false
		}
		r := m.score(rc, res)
		reps = append(reps, r)
		if m.show(i, r) {
			code = clikit.ExitFail
		}
		if ctx.Err() != nil {
			break
		}
	}
	return reps, code, true
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

// median is the median of f over the runs' reports (of an even count,
// the lower of the middle two), as timeline.Percentile's 50th.
func median[R any, T cmp.Ordered](reps []R, f func(R) T) T {
	var zero T
	if len(reps) == 0 {
		return zero
	}
	xs := make([]T, len(reps))
	for i, r := range reps {
		xs[i] = f(r)
	}
	slices.Sort(xs)
	return xs[(len(xs)-1)/2]
}

// medianInt is median as a cell.
func medianInt[R any](reps []R, f func(R) int) string { return strconv.Itoa(median(reps, f)) }

// medianHuman is median as a cell, rounded for people.
func medianHuman[R any](reps []R, f func(R) time.Duration) string {
	return clikit.Human(median(reps, f))
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

// table prints rows under a header, each cell right-aligned in its
// column: as wide as widths gives, or, past them, as its header (at
// least 8).
type table struct {
	w      io.Writer
	widths []int
}

// newTable prints header and returns the table that prints the rows
// under it.
func newTable(w io.Writer, header []string, widths ...int) *table {
	t := &table{w: w, widths: slices.Clone(widths)}
	for _, h := range header[min(len(widths), len(header)):] {
		t.widths = append(t.widths, max(8, len([]rune(h))))
	}
	t.row(header)
	return t
}

func (t *table) row(cells []string) {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%*s", t.widths[min(i, len(t.widths)-1)], c)
	}
	fmt.Fprintln(t.w, b.String())
}

// checkRuns refuses, before anything is measured, fewer than one run and
// a --doc and --table that cannot take the table, saying why on stderr.
// name is the command ("bench lanes"). When ok is false the command ends
// with code.
func checkRuns(out benchdoc.Out, name string, runs int, stderr io.Writer) (code int, ok bool) {
	if err := out.Check(runs); err != nil {
		fmt.Fprintf(stderr, "slotq %s: %v\n", name, err)
		return clikit.ExitUsage, false
	}
	return clikit.ExitOK, true
}

// begin checks a measuring command before anything is measured: its
// runs and its --doc and --table (checkRuns), then its logger and its
// workload (setLogger). When ok is false the command ends with code.
func begin(out benchdoc.Out, name string, runs int, logLevel string, stderr io.Writer, logger **slog.Logger, validate func() error) (code int, ok bool) {
	if code, ok := checkRuns(out, name, runs, stderr); !ok {
		return code, false
	}
	return setLogger(name, logLevel, stderr, logger, validate)
}

// finish ends a measuring command whose exit code is code: it writes t
// to out's Doc if --doc was given, and fails if it could not.
func finish(out benchdoc.Out, name string, stdout, stderr io.Writer, t benchdoc.Table, code int) int {
	if err := out.Finish(stdout, t); err != nil {
		fmt.Fprintf(stderr, "slotq %s: %v\n", name, err)
		return clikit.ExitFail
	}
	return code
}

// setLogger builds the logger of a command that runs a workload, at
// --log's level, into *logger, then checks the workload with validate.
// When ok is false the command ends with code.
func setLogger(name, logLevel string, stderr io.Writer, logger **slog.Logger, validate func() error) (code int, ok bool) {
	l, err := newLogger(logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "slotq %s: %v\n", name, err)
		return clikit.ExitUsage, false
	}
	*logger = l
	if err := validate(); err != nil {
		fmt.Fprintf(stderr, "slotq %s: %v\n", name, err)
		return clikit.ExitUsage, false
	}
	return clikit.ExitOK, true
}

// newLogger returns a text logger to w at level, or a discarding one for "".
func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	if level == "" {
		return slog.New(slog.DiscardHandler), nil
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
