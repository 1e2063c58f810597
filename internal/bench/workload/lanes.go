package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/bench/benchdoc"
	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// laneKind is the job kind of the lanes workload: it runs for its
// payload's run_ns and records when it began and ended.
const laneKind = "bench.lane"

// LanesConfig is one run of the lanes workload (slotq bench lanes (docs/guarantees.md §12): Keys
// keys × Jobs jobs, each running a random MinRun..MaxRun intervals.
type LanesConfig struct {
	Queue          string
	Keys, Jobs     int
	MinRun, MaxRun float64 // in intervals
	// Batch is the most jobs of one enqueue call.
	Batch      int
	Workers    int
	Interval   time.Duration
	MaxRunning int
	Seed       uint64
	// Timeout bounds the wait for all jobs; 0 means twice the ideal
	// makespan plus 30s.
	Timeout time.Duration
	Logger  *slog.Logger
}

func (c LanesConfig) validate() error {
	switch {
	case c.Keys < 1:
		return errors.New("--keys must be at least 1")
	case c.Jobs < 1:
		return errors.New("--jobs must be at least 1")
	case c.MinRun < 0 || c.MaxRun < c.MinRun:
		return errors.New("--min-run must be at least 0 and at most --max-run")
	case c.Batch < 1 || c.Batch > job.MaxBatch:
		return fmt.Errorf("--batch must be between 1 and %d", job.MaxBatch)
	case c.Workers < 1:
		return errors.New("--workers must be at least 1")
	case c.Interval <= 0:
		return errors.New("--interval must be greater than 0")
	case c.MaxRunning < 0 || c.MaxRunning > slot.MaxRunningLimit:
		return fmt.Errorf("--max-running must be between 0 (no cap) and %d", slot.MaxRunningLimit)
	case c.Timeout < 0:
		return errors.New("--timeout must not be negative")
	}
	return slot.ValidateName(c.Queue)
}

// lanePayload is what a job of the lanes workload carries.
type lanePayload struct {
	RunNS int64 `json:"run_ns"`
}

// laneRun is one run of a job of the workload, as its handler saw it.
type laneRun struct {
	ID, Key string
	// Ticket is the job's ticket as it ran; Accepted its place in the
	// enqueue order.
	Ticket     int64
	Accepted   int
	SlotAt     time.Time
	Gate       time.Time // when the gate let it start (job.Job.StartedAt)
	Begin, End time.Time // the handler's
}

// lanesResult is what a run of the lanes workload saw.
type lanesResult struct {
	Runs []laneRun
	// Work is each key's total run time, as asked.
	Work map[string]time.Duration
	Skew time.Duration
	// Enqueued counts accepted jobs.
	Enqueued int
	// jobCounts is what the accepted jobs came to.
	jobCounts
}

// runLanes runs the lanes workload on the embedded backend as runDemo runs
// the demo's: one producer enqueues every job at once, keys interleaved
// at random, while Workers worker goroutines take deliveries, one message
// each, and the resume function runs once a minute, as the schedule does.
func runLanes(ctx context.Context, cfg LanesConfig) (lanesResult, error) {
	if err := cfg.validate(); err != nil {
		return lanesResult{}, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 2))
	// The jobs in enqueue order: each key's Jobs jobs, keys shuffled.
	order := make([]int, 0, cfg.Keys*cfg.Jobs)
	for k := range cfg.Keys {
		for range cfg.Jobs {
			order = append(order, k)
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	res := lanesResult{Work: map[string]time.Duration{}}
	specs := make([]job.Spec, len(order))
	accepted := map[string]int{}
	seen := make([]int, cfg.Keys)
	for i, k := range order {
		key := fmt.Sprintf("k%02d", k)
		run := time.Duration((cfg.MinRun + rng.Float64()*(cfg.MaxRun-cfg.MinRun)) * float64(cfg.Interval))
		res.Work[key] += run
		p, _ := json.Marshal(lanePayload{RunNS: int64(run)})
		id := fmt.Sprintf("%s-%02d", key, seen[k])
		seen[k]++
		specs[i] = job.Spec{ID: id, Kind: laneKind, Key: key, Payload: p}
		accepted[id] = i
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2*lanesIdeal(cfg.Interval, len(specs), res.Work) + 30*time.Second
	}

	var mu sync.Mutex
	mux := target.NewMux()
	mux.HandleFunc(laneKind, func(ctx context.Context, j *api.Job) error {
		begin := time.Now()
		var p lanePayload
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			return target.SkipRetry(err)
		}
		t := time.NewTimer(time.Duration(p.RunNS))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		r := laneRun{ID: j.ID, Key: j.Key, Ticket: j.Ticket, Accepted: accepted[j.ID], SlotAt: j.SlotAt,
			Gate: j.StartedAt, Begin: begin, End: time.Now()}
		mu.Lock()
		res.Runs = append(res.Runs, r)
		mu.Unlock()
		return nil
	})

	w, err := newBackend(ctx, backendOptions{
		Queue: cfg.Queue, Config: slot.Config{Interval: cfg.Interval, MaxRunning: cfg.MaxRunning},
		Workers: cfg.Workers, Timeout: cfg.Timeout, Logger: cfg.Logger, Mux: mux, Seed: cfg.Seed,
	})
	if err != nil {
		return lanesResult{}, err
	}
	res.Skew = w.skew

	err = w.run(ctx, func(ctx context.Context) error {
		for i := 0; i < len(specs); i += cfg.Batch {
			out, err := w.eng.Enqueue(ctx, job.EnqueueRequest{Queue: cfg.Queue, Jobs: specs[i:min(i+cfg.Batch, len(specs))]})
			res.Enqueued += len(out.Jobs)
			if err != nil {
				return err
			}
		}
		return nil
	})

	ran := map[string]int{}
	ids := make([]string, res.Enqueued)
	for _, r := range res.Runs {
		ran[r.ID]++
	}
	for i, s := range specs[:res.Enqueued] {
		ids[i] = s.ID
	}
	if cerr := res.count(context.WithoutCancel(ctx), w.eng, cfg.Queue, ids, ran, nil); cerr != nil {
		return res, errors.Join(err, cerr)
	}
	return res, err
}

// seeded is run i's config: the workload's seed + i.
func (c LanesConfig) seeded(i int) LanesConfig { c.Seed += uint64(i); return c }

// lanesIdeal is the least makespan of n jobs at interval whose keys take
// work each: the starts need (n−1)·interval, and each key's runs follow
// one another.
func lanesIdeal(interval time.Duration, n int, work map[string]time.Duration) time.Duration {
	ideal := time.Duration(n-1) * interval
	for _, w := range work {
		ideal = max(ideal, w)
	}
	return ideal
}

// lanesReport is what a run of the lanes workload shows.
type lanesReport struct {
	cfg LanesConfig
	res lanesResult
	// Overlaps counts runs that began before the previous run of their
	// key ended; OrderViolations runs that began after a run of their key
	// with a higher ticket (both must be 0, §5.12). Reordered counts
	// runs that began after a run of their key accepted later: a passed
	// job takes a new ticket behind its key's later jobs.
	Overlaps, OrderViolations, Reordered int
	// PerKey is the most runs of one key at once (1); Concurrent the most
	// runs of the queue at once (at most MaxRunning, if set).
	PerKey, Concurrent int
	// GateViolations counts starts at the gate closer than the queue's
	// spacing allows (docs/guarantees.md §3).
	GateViolations int
	// LatenessP50, P99: handler begin − slot.
	LatenessP50, LatenessP99 time.Duration
	Makespan, Ideal          time.Duration
}

func newLanesReport(cfg LanesConfig, res lanesResult) lanesReport {
	r := lanesReport{cfg: cfg, res: res, Ideal: lanesIdeal(cfg.Interval, res.Enqueued, res.Work)}
	runs := slices.Clone(res.Runs)
	slices.SortFunc(runs, func(a, b laneRun) int { return a.Begin.Compare(b.Begin) })
	byKey := map[string][]laneRun{}
	for _, x := range runs {
		byKey[x.Key] = append(byKey[x.Key], x)
	}
	for _, rs := range byKey {
		for i := 1; i < len(rs); i++ {
			prev, x := rs[i-1], rs[i]
			if x.Begin.Before(prev.End) {
				r.Overlaps++
			}
			if x.Ticket <= prev.Ticket {
				r.OrderViolations++
			}
		}
		top := -1
		for _, x := range rs {
			if x.Accepted < top {
				r.Reordered++
			}
			top = max(top, x.Accepted)
		}
		r.PerKey = max(r.PerKey, mostAtOnce(rs))
	}
	r.Concurrent = mostAtOnce(runs)
	gates := make([]time.Time, len(runs))
	late := make([]time.Duration, len(runs))
	for i, x := range runs {
		gates[i], late[i] = x.Gate, x.Begin.Sub(x.SlotAt)
	}
	slices.SortFunc(gates, func(a, b time.Time) int { return a.Compare(b) })
	r.GateViolations = timeline.Violations(gates, cfg.Interval, res.Skew)
	r.LatenessP50, r.LatenessP99 = timeline.Percentile(late, 50), timeline.Percentile(late, 99)
	if len(runs) > 0 {
		end := runs[0].End
		for _, x := range runs {
			if x.End.After(end) {
				end = x.End
			}
		}
		r.Makespan = end.Sub(runs[0].Begin)
	}
	return r
}

// Ratio is makespan / ideal.
func (r lanesReport) Ratio() float64 {
	if r.Ideal <= 0 {
		return 0
	}
	return float64(r.Makespan) / float64(r.Ideal)
}

// mostAtOnce is the most runs that ran at one moment (timeline.MostAtOnce).
func mostAtOnce(runs []laneRun) int {
	spans := make([]timeline.Span, len(runs))
	for i, x := range runs {
		spans[i] = timeline.Span{Begin: x.Begin, End: x.End}
	}
	return timeline.MostAtOnce(spans)
}

// verdict reports on stderr what makes a run fail and returns the exit
// code: runs of a key that overlapped or left ticket order, more runs at
// once than max_running, spacing violations at the gate, jobs not
// finished or started twice.
func (r lanesReport) verdict(stderr io.Writer, prog string) int {
	var problems []string
	add := func(n int, what string) {
		if n > 0 {
			problems = append(problems, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(r.Overlaps, "runs began before the previous run of their key ended")
	add(r.OrderViolations, "runs began after a higher ticket of their key")
	if r.cfg.MaxRunning > 0 && r.Concurrent > r.cfg.MaxRunning {
		problems = append(problems, fmt.Sprintf("%d runs at once, above max_running %d", r.Concurrent, r.cfg.MaxRunning))
	}
	add(r.GateViolations, "spacing violations at the gate")
	add(r.res.Unfinished, "jobs not finished")
	add(r.res.StartedTwice, "jobs started more than once")
	if r.res.Enqueued == 0 {
		problems = append(problems, "no job was enqueued")
	}
	if len(problems) == 0 {
		return clikit.ExitOK
	}
	fmt.Fprintf(stderr, "%s: FAIL: %s\n", prog, strings.Join(problems, "; "))
	return clikit.ExitFail
}

// DefaultLanes is the workload of `slotq bench lanes`: 20 keys × 20 jobs,
// each running 1–5 intervals, at 10ms, with workers enough that they never
// hold a job back.
var DefaultLanes = LanesConfig{
	Queue: "lanes", Keys: 20, Jobs: 20, MinRun: 1, MaxRun: 5, Batch: 100, Workers: 64,
	Interval: 10 * time.Millisecond, Seed: 1,
}

// lanesColumns are the widths of BenchLanes' columns.
var lanesColumns = []int{6, 5, 9, 6, 10, 11, 8, 8, 10, 10, 10, 10, 8}

// BenchLanes runs the lanes workload runs times, seed after seed, and
// prints a row a run and the medians, as `slotq bench lanes` does; with
// out's --doc and --table it writes the table into a Markdown file too.
// It returns the exit code: 1 on an overlap, an order or spacing
// violation, more runs at once than max_running, or a job left
// unfinished.
func BenchLanes(ctx context.Context, stdout, stderr io.Writer, c LanesConfig, runs int, logLevel string, out benchdoc.Out) int {
	if code, ok := begin(out, "bench lanes", runs, logLevel, stderr, &c.Logger, func() error { return c.validate() }); !ok {
		return code
	}

	capped := ""
	if c.MaxRunning > 0 {
		capped = fmt.Sprintf(", max_running %d", c.MaxRunning)
	}
	fmt.Fprintf(stdout, "slotq bench lanes: %d keys × %d jobs, each running %g–%g intervals, interval %s%s, %d workers, %d runs\n\n",
		c.Keys, c.Jobs, c.MinRun, c.MaxRun, c.Interval, capped, c.Workers, runs)
	header := []string{"run", "jobs", "overlaps", "order", "reordered", "re-tickets", "max/key", "at once",
		"late p50", "late p99", "makespan", "ideal", "ratio"}
	tw := newTable(stdout, header, lanesColumns...)
	var rows [][]string
	printRow := func(cells ...string) {
		rows = append(rows, cells)
		tw.row(cells)
	}
	reps, code, ok := measurement[LanesConfig, lanesResult, lanesReport]{
		name: "bench lanes", seeded: LanesConfig.seeded, run: runLanes, score: newLanesReport,
		show: func(i int, r lanesReport) bool {
			printRow(strconv.Itoa(i+1), strconv.Itoa(len(r.res.Runs)), strconv.Itoa(r.Overlaps),
				strconv.Itoa(r.OrderViolations), strconv.Itoa(r.Reordered), strconv.Itoa(r.res.Retickets),
				strconv.Itoa(r.PerKey), strconv.Itoa(r.Concurrent), clikit.Human(r.LatenessP50), clikit.Human(r.LatenessP99),
				clikit.Human(r.Makespan), clikit.Human(r.Ideal), fmt.Sprintf("%.4f", r.Ratio()))
			return r.verdict(stderr, fmt.Sprintf("slotq bench lanes: run %d", i+1)) != clikit.ExitOK
		},
	}.measure(ctx, c, runs, stderr)
	if !ok {
		return code
	}
	printRow("median", medianInt(reps, func(r lanesReport) int { return len(r.res.Runs) }),
		medianInt(reps, func(r lanesReport) int { return r.Overlaps }),
		medianInt(reps, func(r lanesReport) int { return r.OrderViolations }),
		medianInt(reps, func(r lanesReport) int { return r.Reordered }),
		medianInt(reps, func(r lanesReport) int { return r.res.Retickets }),
		medianInt(reps, func(r lanesReport) int { return r.PerKey }),
		medianInt(reps, func(r lanesReport) int { return r.Concurrent }),
		medianHuman(reps, func(r lanesReport) time.Duration { return r.LatenessP50 }),
		medianHuman(reps, func(r lanesReport) time.Duration { return r.LatenessP99 }),
		medianHuman(reps, func(r lanesReport) time.Duration { return r.Makespan }),
		medianHuman(reps, func(r lanesReport) time.Duration { return r.Ideal }),
		fmt.Sprintf("%.4f", median(reps, lanesReport.Ratio)))
	overlaps, order := 0, 0
	for _, r := range reps {
		overlaps, order = overlaps+r.Overlaps, order+r.OrderViolations
	}
	fmt.Fprintf(stdout, "\noverlaps within a key, all runs: %d (must be 0); ticket-order violations: %d (must be 0)\n", overlaps, order)
	fmt.Fprintf(stdout, "overlaps: runs that began before the previous run of their key ended; order: runs that began after a higher ticket of their key\n")
	fmt.Fprintf(stdout, "reordered: runs that began after a run of their key accepted later (a passed job takes a new ticket behind them)\n")
	fmt.Fprintf(stdout, "max/key: most runs of one key at once (must be 1); at once: most runs of the queue at once\n")
	fmt.Fprintf(stdout, "lateness: handler begin − slot; ratio: makespan / ideal, ideal = max(longest key's total run time, (n−1)·interval)\n")
	return finish(out, "bench lanes", stdout, stderr, benchdoc.Table{Command: out.Command, Header: header, Rows: rows}, code)
}
