package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/slotq/slotq/internal/timeline"
)

// defaultBench is the workload of `slotq bench` (issue 2's benchmark):
// 8 producers × 100 jobs at 10ms.
var defaultBench = demoConfig{
	Queue: "bench", Producers: 8, Jobs: 100, Batch: 3, Workers: 4,
	Interval: 10 * time.Millisecond, Seed: 1,
}

func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("slotq bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: slotq bench [flags]\n\n"+
			"Runs the demo workload several times, silently, and reports per run and as medians:\n"+
			"spacing violations (must be 0), lateness p50/p99, and the makespan against the\n"+
			"ideal (n−1)·interval. Exits 1 if a run had a violation or left a job unfinished.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	cfg := demoFlags(fs, defaultBench)
	runs := fs.Int("runs", 5, "number of runs")
	if code, ok := parseWorkload("bench", fs, cfg, args, stderr); !ok {
		return code
	}
	if *runs < 1 {
		fmt.Fprintf(stderr, "slotq bench: --runs must be at least 1\n")
		return exitUsage
	}

	fmt.Fprintf(stdout, "slotq bench: demo workload, %d producers × %d jobs, interval %s, %d workers, %d runs\n\n",
		cfg.Producers, cfg.Jobs, cfg.Interval, cfg.Workers, *runs)
	const row = "%6s %7s %11s %10s %11s %11s %10s %10s %17s %10s %10s %8s\n"
	fmt.Fprintf(stdout, row, "run", "starts", "violations", "(handler)", "inversions", "re-tickets",
		"late p50", "late p99", "gate→handler p99", "makespan", "ideal", "ratio")
	code := exitOK
	var reps []report
	for i := range *runs {
		c := *cfg
		c.Seed = cfg.Seed + uint64(i)
		res, err := runDemo(ctx, c, nil)
		if err != nil {
			fmt.Fprintf(stderr, "slotq bench: run %d: %v\n", i+1, err)
			return exitFail
		}
		r := newReport(c, res)
		reps = append(reps, r)
		fmt.Fprintf(stdout, row, strconv.Itoa(i+1), strconv.Itoa(r.handler.Starts),
			strconv.Itoa(r.gate.Violations), strconv.Itoa(r.handler.Violations), strconv.Itoa(r.handler.Inversions),
			strconv.Itoa(res.Retickets), fmtDur(r.handler.LatenessP50), fmtDur(r.handler.LatenessP99),
			fmtDur(r.delay[1]), fmtDur(r.handler.Makespan), fmtDur(r.handler.Ideal), fmt.Sprintf("%.4f", r.handler.Ratio()))
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
		return fmtDur(timeline.Percentile(ds, 50))
	}
	medInt := func(f func(report) int) string {
		ns := make([]int, len(reps))
		for i, r := range reps {
			ns[i] = f(r)
		}
		slices.Sort(ns)
		return strconv.Itoa(ns[(len(ns)-1)/2])
	}
	ratios := make([]float64, len(reps))
	violations := 0
	for i, r := range reps {
		ratios[i] = r.handler.Ratio()
		violations += r.gate.Violations
	}
	slices.Sort(ratios)
	fmt.Fprintf(stdout, row, "median", "",
		medInt(func(r report) int { return r.gate.Violations }),
		medInt(func(r report) int { return r.handler.Violations }),
		medInt(func(r report) int { return r.handler.Inversions }),
		medInt(func(r report) int { return r.res.Retickets }),
		med(func(r report) time.Duration { return r.handler.LatenessP50 }),
		med(func(r report) time.Duration { return r.handler.LatenessP99 }),
		med(func(r report) time.Duration { return r.delay[1] }),
		med(func(r report) time.Duration { return r.handler.Makespan }),
		med(func(r report) time.Duration { return r.handler.Ideal }),
		fmt.Sprintf("%.4f", ratios[(len(ratios)-1)/2]))
	fmt.Fprintf(stdout, "\nspacing violations at the gate, all runs: %d (must be 0)\n", violations)
	fmt.Fprintf(stdout, "violations: starts closer than interval − skew, timed at the gate; (handler): the same, timed as the handler began\n")
	fmt.Fprintf(stdout, "lateness: handler begin − slot; ratio: makespan / ideal, ideal = (n−1)·interval\n")
	return code
}
