package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// DefaultDemo is the workload of `slotq demo` (and `make run`): 40 jobs
// at 500ms, about 20 seconds.
var DefaultDemo = Config{
	Queue: "q", Producers: 4, Jobs: 10, Batch: 3, Workers: 4,
	Interval: 500 * time.Millisecond, Seed: 1, KeyMaxRunning: 1,
}

// Demo runs the demo workload once, as `slotq demo` does: a line a start
// as it happens and a summary on stdout, or with asJSON a JSON record a
// start (and on the model of DynamoDB a last {"units": …} line) with the
// summary on stderr. logLevel is --log's. It returns the exit code: 1 if
// the starts broke the queue's limit at the gate or a job did not finish.
func Demo(ctx context.Context, stdout, stderr io.Writer, cfg Config, asJSON bool, logLevel string) int {
	if code, ok := cfg.check("demo", logLevel, stderr); !ok {
		return code
	}
	logger := cfg.Logger

	var onStart func(timeline.Start, *api.Job)
	var lines *liveTimeline
	if asJSON {
		enc := json.NewEncoder(stdout)
		onStart = func(s timeline.Start, _ *api.Job) {
			if err := enc.Encode(s); err != nil {
				logger.Error("write start record", "error", err)
			}
		}
	} else {
		backend := "embedded backend"
		if cfg.Store == StoreModel {
			backend = fmt.Sprintf("the model of DynamoDB (lead %s)", clikit.Human(cfg.lead()))
		}
		fmt.Fprintf(stdout, "slotq demo: %d producers × %d jobs onto queue %q (%s), %d workers, %s\n\n",
			cfg.Producers, cfg.Jobs, cfg.Queue, cfg.limits(), cfg.Workers, backend)
		lines = &liveTimeline{w: stdout, interval: cfg.tick(), begin: time.Now()}
		onStart = lines.print
	}

	res, err := runDemo(ctx, cfg, onStart)
	if err != nil {
		fmt.Fprintf(stderr, "slotq demo: %v\n", err)
		return clikit.ExitFail
	}
	r := newReport(cfg, res)
	if asJSON && res.Units != nil {
		if err := json.NewEncoder(stdout).Encode(struct {
			Units unitsPerStart `json:"units"`
		}{newUnitsPerStart(*res.Units, len(res.Starts))}); err != nil {
			logger.Error("write units", "error", err)
		}
	}
	if asJSON {
		fmt.Fprintf(stderr, "slotq demo: %d starts, %d spacing violations at the gate (%d between handler begins), "+
			"lateness p50 %s p99 %s, makespan ×%.4f of ideal, %d re-tickets (re-ticketed %s)\n",
			r.handler.Starts, r.gate.Violations, r.handler.Violations, clikit.Human(r.handler.LatenessP50),
			clikit.Human(r.handler.LatenessP99), r.handler.Ratio(), res.Retickets, r.retickets)
		if r.keys.Keys > 0 {
			fmt.Fprintf(stderr, "slotq demo: %d keys, busiest %d jobs: %d violations of a key's limit at the gate (%d between handler begins)\n",
				r.keys.Keys, r.keys.Busiest, r.keys.Gate, r.keys.Handler)
		}
	} else {
		fmt.Fprintln(stdout)
		r.print(stdout)
	}
	return r.verdict(stderr, "slotq demo")
}

// check makes c ready to run as the command name runs it: on the model
// of DynamoDB without --workers, at least as many workers as the stack
// would run; its logger at --log's level; and c checked. When ok is
// false the command ends with code.
func (c *Config) check(name, logLevel string, stderr io.Writer) (code int, ok bool) {
	if c.Store == StoreModel && !c.WorkersSet && c.tick() > 0 {
		c.Workers = max(c.Workers, c.modelWorkers())
	}
	return setLogger(name, logLevel, stderr, &c.Logger, func() error { return c.validate() })
}

// report is what one run shows: the starts summarized twice, timed at the
// handler (the start records) and at the gate (what slotq guarantees).
type report struct {
	cfg     Config
	res     demoResult
	handler timeline.Summary
	gate    timeline.Summary
	// call is timed by each worker's last look at the clock before it
	// called the handler: between the gate and the handler.
	call timeline.Summary
	// delay is how long after the gate the handler began: p50, p99, max.
	delay [3]time.Duration
	// promise is the lateness against the slot_at each job was promised.
	promise promiseFigures
	// keys are the figures of each key's own limit, when the run has
	// keys with a limit.
	keys keyFigures
	// retickets are the run's re-tickets as its starts saw them.
	retickets reticketFigures
}

// reticketFigures are a run's re-tickets seen from its starts: how many
// starts came after their job took a new ticket, and the most new
// tickets one job took before it started.
type reticketFigures struct {
	Reticketed, Starts, Most int
}

func newReticketFigures(starts []timeline.Start) reticketFigures {
	f := reticketFigures{Starts: len(starts)}
	for _, s := range starts {
		if s.Retickets > 0 {
			f.Reticketed++
		}
		f.Most = max(f.Most, s.Retickets)
	}
	return f
}

// Share is the share of starts whose job was re-ticketed first, in
// percent.
func (f reticketFigures) Share() float64 {
	if f.Starts == 0 {
		return 0
	}
	return 100 * float64(f.Reticketed) / float64(f.Starts)
}

// String writes the share and the most: "4.2 % of starts, most 2 of one job".
func (f reticketFigures) String() string {
	return fmt.Sprintf("%.1f %% of starts, most %d of one job", f.Share(), f.Most)
}

// keyFigures judge a run's starts key by key against the key's limit.
type keyFigures struct {
	// Keys is how many keys started jobs; Busiest the most jobs one key
	// started.
	Keys, Busiest int
	// Handler and Gate count the starts, key by key, that broke the
	// key's limit beyond the skew: between handler begins, and at the
	// gate.
	Handler, Gate int
	// Ideal is the least span the busiest key's starts can take under
	// the key's limit.
	Ideal time.Duration
}

func newKeyFigures(cfg Config, starts []timeline.Start, skew time.Duration) keyFigures {
	ls := slot.Limits(cfg.keyLimits())
	if len(ls) == 0 {
		return keyFigures{}
	}
	byKey := map[string][]timeline.Start{}
	for _, s := range starts {
		byKey[s.Key] = append(byKey[s.Key], s)
	}
	var f keyFigures
	for _, ss := range byKey {
		f.Keys++
		f.Busiest = max(f.Busiest, len(ss))
		f.Handler += len(slot.Breaches(ls, skew, timeline.Times(ss)))
		f.Gate += len(slot.Breaches(ls, skew, timeline.Times(timeline.AtGate(ss))))
	}
	f.Ideal = timeline.Ideal(ls, f.Busiest)
	return f
}

func newReport(cfg Config, res demoResult) report {
	d := timeline.Delays(res.Starts)
	r := report{
		cfg: cfg, res: res,
		handler: timeline.Summarize(res.Starts, cfg.limits(), res.Skew),
		gate:    timeline.Summarize(timeline.AtGate(res.Starts), cfg.limits(), res.Skew),
		call:    timeline.Summarize(atCall(res.Starts, res.Calls), cfg.limits(), res.Skew),
		delay:   [3]time.Duration{timeline.Percentile(d, 50), timeline.Percentile(d, 99), timeline.Percentile(d, 100)},
		promise: newPromiseFigures(res),
		keys:    newKeyFigures(cfg, res.Starts, res.Skew),

		retickets: newReticketFigures(res.Starts),
	}
	// The binding limit's ideal: the queue's for all starts, or the
	// busiest key's for its own, whichever is longer.
	r.handler.Ideal = max(r.handler.Ideal, r.keys.Ideal)
	r.gate.Ideal = max(r.gate.Ideal, r.keys.Ideal)
	return r
}

// verdict reports on stderr what makes a run fail and returns the exit
// code. A run fails on spacing violations at the gate (docs/guarantees.md §3),
// jobs not finished, or jobs started twice. Handler begins closer than the
// interval are noted, not failed: they come after the gate, by however
// long the worker took to reach the handler, which slotq cannot bound.
func (r report) verdict(stderr io.Writer, prog string) int {
	var problems []string
	if r.gate.Violations > 0 {
		problems = append(problems, fmt.Sprintf("%d spacing violations at the gate", r.gate.Violations))
	}
	if r.keys.Gate > 0 {
		problems = append(problems, fmt.Sprintf("%d violations of a key's limit at the gate", r.keys.Gate))
	}
	if r.res.Unfinished > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d jobs not finished", r.res.Unfinished, r.res.Enqueued))
	}
	if r.res.StartedTwice > 0 {
		problems = append(problems, fmt.Sprintf("%d jobs started more than once", r.res.StartedTwice))
	}
	if r.res.Enqueued == 0 {
		problems = append(problems, "no job was enqueued")
	}
	if len(problems) == 0 {
		if r.handler.Violations > 0 {
			fmt.Fprintf(stderr, "%s: note: %d handler begins broke the limit (beyond the skew) although the gate kept "+
				"its spacing: workers took up to %s from the gate to the handler; %s\n",
				prog, r.handler.Violations, clikit.Human(r.delay[2]), r.callVerdict())
		}
		return clikit.ExitOK
	}
	fmt.Fprintf(stderr, "%s: FAIL: %s\n", prog, strings.Join(problems, "; "))
	return clikit.ExitFail
}

// callVerdict says where handler begins that broke the limit came late:
// after the workers' calls, which kept it (the host ran the handlers
// late), or at the calls themselves (the workers called late: a defect).
func (r report) callVerdict() string {
	if r.call.Violations == 0 {
		return "the workers' calls kept it (timed at their last look at the clock): the host ran the handlers late after it"
	}
	return fmt.Sprintf("%d workers' calls broke it as well (timed at their last look at the clock)", r.call.Violations)
}

func (r report) print(w io.Writer) {
	cfg, res, h := r.cfg, r.res, r.handler
	once := "each exactly once"
	if res.StartedTwice > 0 || res.Unstarted > 0 {
		once = fmt.Sprintf("%d started twice, %d never", res.StartedTwice, res.Unstarted)
	}
	fmt.Fprintf(w, "summary  queue %s, %s, skew %s, %d producers, %d workers\n",
		cfg.Queue, cfg.limits(), res.Skew, cfg.Producers, cfg.Workers)
	fmt.Fprintf(w, "  jobs          %d enqueued, %d started (%s), %d succeeded, %d not finished\n",
		res.Enqueued, len(res.Starts), once, res.Succeeded, res.Unfinished)
	fmt.Fprintf(w, "  spacing       min %s  p50 %s  (between handler begins; at the gate min %s)\n",
		clikit.Human(h.SpacingMin), clikit.Human(h.SpacingP50), clikit.Human(r.gate.SpacingMin))
	fmt.Fprintf(w, "  lateness      p50 %s  p99 %s  max %s  (handler begin − slot)\n",
		clikit.Human(h.LatenessP50), clikit.Human(h.LatenessP99), clikit.Human(h.LatenessMax))
	fmt.Fprintf(w, "  order         %d inversions, %d re-tickets (re-ticketed %s)\n", h.Inversions, res.Retickets, r.retickets)
	fmt.Fprintf(w, "  violations    %d at the gate, %d between handler begins (breaking the limit beyond the skew)\n",
		r.gate.Violations, h.Violations)
	if r.keys.Keys > 0 {
		fmt.Fprintf(w, "  keys          %d keys (%s each), busiest %d jobs; %d violations of a key's limit at the gate, %d between handler begins\n",
			r.keys.Keys, slot.Limits(cfg.keyLimits()), r.keys.Busiest, r.keys.Gate, r.keys.Handler)
	}
	fmt.Fprintf(w, "  gate→handler  p50 %s  p99 %s  max %s\n", clikit.Human(r.delay[0]), clikit.Human(r.delay[1]), clikit.Human(r.delay[2]))
	fmt.Fprintf(w, "  makespan      %s vs ideal %s (×%.4f)\n", clikit.Human(h.Makespan), clikit.Human(h.Ideal), h.Ratio())
	if res.Units != nil {
		u := newUnitsPerStart(*res.Units, len(res.Starts))
		fmt.Fprintf(w, "  dynamodb      per start: the queue's item %.2f write units, %.2f reads, %.2f refused conditions, %.2f throttled; "+
			"all items %.2f write units, %.2f reads (busiest second on the queue's item: %.0f write units)\n",
			u.HotWriteUnits, u.HotReads, u.RefusedConditions, u.Throttled, u.All.WriteUnits, u.All.Reads, u.HotPeakWriteUnitsSec)
	}
}

// liveTimeline prints one line per start:
//
//	+1.502s  q  #7     job 3f2a9c1b  p3→w1  late 0.412ms  gap 500.3ms ██████████
//
// The bar is the gap since the previous start, ten cells per interval.
type liveTimeline struct {
	w        io.Writer
	interval time.Duration
	begin    time.Time

	mu   sync.Mutex
	last time.Time
}

func (l *liveTimeline) print(s timeline.Start, j *api.Job) {
	l.mu.Lock()
	defer l.mu.Unlock()
	gap := "gap     —"
	if !l.last.IsZero() {
		d := s.At.Sub(l.last)
		gap = fmt.Sprintf("gap %9s %s", clikit.Human(d), bar(d, l.interval))
	}
	l.last = s.At
	note := ""
	if j.Retickets > 0 {
		note = fmt.Sprintf("  re-ticketed ×%d", j.Retickets)
	}
	id := s.JobID
	if len(id) > 8 {
		id = id[:8]
	}
	fmt.Fprintf(l.w, "%+8.3fs  %s  #%-5d job %-8s  %s→%s  late %9s  %s%s\n",
		s.At.Sub(l.begin).Seconds(), s.Queue, s.Ticket, id, s.Producer, s.Worker,
		clikit.Human(s.Lateness()), gap, note)
}

// bar draws d at ten cells per interval, at most 30 cells.
func bar(d, interval time.Duration) string {
	n := int(10 * d / interval)
	if n > 30 {
		return strings.Repeat("█", 29) + "…"
	}
	return strings.Repeat("█", max(n, 0))
}
