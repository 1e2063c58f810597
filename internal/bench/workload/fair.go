package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/bench/benchdoc"
	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// FairConfig is one run of `slotq bench fair`: one heavy key enqueues a
// flood at once, late keys come a while after with a few jobs each, then
// urgent jobs of priority 1.
type FairConfig struct {
	Queue string
	// Rate (with Burst) is the queue's limit.
	Rate  api.Rate
	Burst int
	// BookAhead and KeyBookAhead are the queue's bounds (0: none, every
	// job booked at enqueue, as a queue without a bound).
	BookAhead, KeyBookAhead int
	// KeyMaxRunning is the queue's key_max_running (0: the default, one
	// job of a key at a time).
	KeyMaxRunning int
	// Heavy is how many jobs key A enqueues at once.
	Heavy int
	// LateKeys each enqueue LateJobs jobs, LateAfter after A's flood.
	LateKeys, LateJobs int
	LateAfter          time.Duration
	// Urgent jobs of priority 1, of key UrgentKey ("" : no key), come
	// UrgentAfter after A's flood.
	Urgent      int
	UrgentKey   string
	UrgentAfter time.Duration
	Workers     int
	Seed        uint64
	// Timeout bounds the wait for all jobs (0: 2·ideal + 30s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// DefaultFair is the workload of `slotq bench fair`.
var DefaultFair = FairConfig{
	Queue: "fair", Rate: api.Rate{N: 200, Per: time.Second}, KeyBookAhead: 5, KeyMaxRunning: slot.MaxKeyRunning,
	Heavy: 4000, LateKeys: 20, LateJobs: 10, LateAfter: time.Second,
	Urgent: 50, UrgentKey: "A", UrgentAfter: 2 * time.Second, Workers: 32, Seed: 1,
}

// heavyKey is the key of the flood.
const heavyKey = "A"

func (c FairConfig) validate() error {
	switch {
	case c.Rate.IsZero():
		return errors.New("--rate must be given")
	case c.Heavy < 0 || c.LateKeys < 0 || c.LateJobs < 0 || c.Urgent < 0:
		return errors.New("--heavy, --late-keys, --late-jobs and --urgent must not be negative")
	case c.total() == 0:
		return errors.New("the workload has no job: give --heavy, --late-keys with --late-jobs, or --urgent")
	case c.LateAfter < 0 || c.UrgentAfter < 0:
		return errors.New("--late-after and --urgent-after must not be negative")
	case c.Workers < 1:
		return errors.New("--workers must be at least 1")
	case c.Timeout < 0:
		return errors.New("--timeout must not be negative")
	case c.KeyMaxRunning < 1 || c.KeyMaxRunning > slot.MaxKeyRunning:
		return fmt.Errorf("--key-max-running must be 1 to %d", slot.MaxKeyRunning)
	}
	if err := c.queueConfig().WithDefaults().Validate(); err != nil {
		return fmt.Errorf("the queue: %w", err)
	}
	return slot.ValidateName(c.Queue)
}

func (c FairConfig) queueConfig() slot.Config {
	return slot.Config{Rate: c.Rate, Burst: c.Burst, BookAhead: c.BookAhead, KeyBookAhead: c.KeyBookAhead, KeyMaxRunning: c.KeyMaxRunning}
}

func (c FairConfig) limits() slot.Limits { return c.queueConfig().LimitList() }

func (c FairConfig) total() int { return c.Heavy + c.LateKeys*c.LateJobs + c.Urgent }

// seeded is run i's config: the workload's seed + i.
func (c FairConfig) seeded(i int) FairConfig { c.Seed += uint64(i); return c }

// lateKey names late key i.
func lateKey(i int) string { return fmt.Sprintf("k%02d", i+1) }

// fairResult is what a run of the fair workload saw.
type fairResult struct {
	Skew   time.Duration
	Starts []timeline.Start
	// Enqueued is when each job's enqueue call was made; Keys each job's
	// key and Urgent the urgent jobs.
	Enqueued map[string]time.Time
	Keys     map[string]string
	Urgent   map[string]bool
	// Booked is when each job got its slot (its enqueue, or its booking
	// from the waiting room), and Told the slot_at it was told then.
	Booked, Told map[string]time.Time
	// Waited counts the jobs accepted into the waiting room.
	Waited int
	// jobCounts is what the accepted jobs came to.
	jobCounts
}

// bookingState records, as the engine writes them, the jobs booked from
// the waiting room: when, and the slot_at their booking gave.
type bookingState struct {
	engine.State
	mu     sync.Mutex
	booked map[string]time.Time
	told   map[string]time.Time
}

func (b *bookingState) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	err := b.State.UpdateJob(ctx, j, from)
	// The write that books a job ends its history with the booked event,
	// whether it sends the job (queued) or parks it for its key or gate.
	if err != nil || len(j.History) == 0 || j.History[len(j.History)-1].Kind != job.BookedEvent {
		return err
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.booked[j.ID]; !ok {
		b.booked[j.ID], b.told[j.ID] = now, j.SlotAt
	}
	return nil
}

// runFair runs the fair workload on the embedded backend and returns what
// it saw, every goroutine it started returned.
func runFair(ctx context.Context, cfg FairConfig) (fairResult, error) {
	if err := cfg.validate(); err != nil {
		return fairResult{}, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2*timeline.Ideal(cfg.limits(), cfg.total()) + 30*time.Second
	}
	var starts startLog
	mux := target.NewMux()
	mux.HandleFunc(demoKind, func(ctx context.Context, j *api.Job) error {
		starts.add(handlerStart(ctx, j, time.Now()), nil)
		return nil
	})
	state := &bookingState{booked: map[string]time.Time{}, told: map[string]time.Time{}}
	w, err := newBackend(ctx, backendOptions{
		Queue: cfg.Queue, Config: cfg.queueConfig(), Workers: cfg.Workers, Timeout: cfg.Timeout, Logger: cfg.Logger,
		Mux: mux, Seed: cfg.Seed,
		State: func(store *memstore.Store) engine.State { state.State = store; return state },
	})
	if err != nil {
		return fairResult{}, err
	}
	res := fairResult{Skew: w.skew, Enqueued: map[string]time.Time{}, Keys: map[string]string{},
		Urgent: map[string]bool{}, Booked: map[string]time.Time{}, Told: map[string]time.Time{}}

	var accepted []string
	enqueue := func(ctx context.Context, key string, n, priority int) error {
		for n > 0 {
			k := min(n, job.MaxBatch)
			req := job.EnqueueRequest{Queue: cfg.Queue}
			for range k {
				req.Jobs = append(req.Jobs, job.Spec{Kind: demoKind, Key: key, Priority: priority, Payload: json.RawMessage(`{}`)})
			}
			at := time.Now()
			out, err := w.eng.Enqueue(ctx, req)
			if err != nil {
				return err
			}
			for _, a := range out.Jobs {
				accepted = append(accepted, a.JobID)
				res.Enqueued[a.JobID], res.Keys[a.JobID] = at, key
				res.Urgent[a.JobID] = priority == api.MinPriority
				if a.Status == api.StatusWaiting {
					res.Waited++
					continue
				}
				res.Booked[a.JobID], res.Told[a.JobID] = at, a.SlotAt
			}
			n -= k
		}
		return nil
	}
	err = w.run(ctx, func(ctx context.Context) error {
		begin := time.Now()
		sleepUntil := func(t time.Time) {
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(t)):
			}
		}
		if err := enqueue(ctx, heavyKey, cfg.Heavy, 0); err != nil {
			return err
		}
		sleepUntil(begin.Add(cfg.LateAfter))
		for i := range cfg.LateKeys {
			if err := enqueue(ctx, lateKey(i), cfg.LateJobs, 0); err != nil {
				return err
			}
		}
		sleepUntil(begin.Add(cfg.UrgentAfter))
		return enqueue(ctx, cfg.UrgentKey, cfg.Urgent, api.MinPriority)
	})

	res.Starts = starts.all()
	state.mu.Lock()
	for id, at := range state.booked {
		if _, ok := res.Booked[id]; !ok {
			res.Booked[id], res.Told[id] = at, state.told[id]
		}
	}
	state.mu.Unlock()
	if cerr := res.count(context.WithoutCancel(ctx), w.eng, cfg.Queue, accepted, startsOf(res.Starts), nil); cerr != nil {
		return res, cerr
	}
	return res, err
}

// fairReport scores a run of the fair workload.
type fairReport struct {
	// Jobs counts the accepted jobs, Waited those that went into the
	// waiting room.
	Jobs, Waited int
	// LateFirst is, for each late key, its first start after its
	// enqueue: p50 and p99 over the keys.
	LateFirstP50, LateFirstP99 time.Duration
	// UrgentBooked is the urgent jobs' wait from their enqueue to their
	// booking, UrgentStart to their start (p50, p99).
	UrgentBookedP50, UrgentBookedP99 time.Duration
	UrgentStartP50, UrgentStartP99   time.Duration
	// HeavyMakespan is key A's first start to its last; Ideal what the
	// queue's limit allows for all the jobs' starts.
	HeavyMakespan, Ideal time.Duration
	// Violations counts starts that broke the queue's limit, timed as the
	// handler began and at the gate.
	Violations, GateViolations int
	// Told is each start against the slot_at its job was told when it was
	// booked (p50, p99, max); Untold counts starts of a job with no
	// booking seen.
	ToldP50, ToldP99, ToldMax time.Duration
	Untold                    int
	// Reticketed counts jobs that took a new ticket after their booking
	// (their worker came too late for their slot): they start on a slot
	// they were not told.
	Reticketed int
	// Lost counts accepted jobs that did not succeed or never ran; Twice
	// those that ran more than once.
	Lost, Twice int
}

// Ratio is HeavyMakespan / Ideal.
func (r fairReport) Ratio() float64 {
	if r.Ideal <= 0 {
		return 0
	}
	return float64(r.HeavyMakespan) / float64(r.Ideal)
}

func newFairReport(cfg FairConfig, res fairResult) fairReport {
	r := fairReport{Jobs: len(res.Enqueued), Waited: res.Waited, Lost: max(res.Unfinished, res.Unstarted), Twice: res.StartedTwice}
	sorted := timeline.Sorted(res.Starts)
	first := map[string]time.Time{}
	var heavyFirst, heavyLast time.Time
	var urgentStart, told []time.Duration
	seen := map[string]bool{}
	for _, s := range sorted {
		if seen[s.JobID] {
			continue
		}
		seen[s.JobID] = true
		key := res.Keys[s.JobID]
		if _, ok := first[key]; !ok {
			first[key] = s.At
		}
		if key == heavyKey && !res.Urgent[s.JobID] {
			if heavyFirst.IsZero() {
				heavyFirst = s.At
			}
			heavyLast = s.At
		}
		if res.Urgent[s.JobID] {
			urgentStart = append(urgentStart, s.At.Sub(res.Enqueued[s.JobID]))
		}
		if s.Retickets > 0 {
			r.Reticketed++
		}
		if at, ok := res.Told[s.JobID]; ok {
			told = append(told, s.At.Sub(at))
		} else {
			r.Untold++
		}
	}
	var late []time.Duration
	for i := range cfg.LateKeys {
		k := lateKey(i)
		var enq time.Time
		for id, key := range res.Keys {
			if key == k && (enq.IsZero() || res.Enqueued[id].Before(enq)) {
				enq = res.Enqueued[id]
			}
		}
		if at, ok := first[k]; ok {
			late = append(late, at.Sub(enq))
		}
	}
	var urgentBooked []time.Duration
	for id := range res.Urgent {
		if !res.Urgent[id] {
			continue
		}
		if at, ok := res.Booked[id]; ok {
			urgentBooked = append(urgentBooked, at.Sub(res.Enqueued[id]))
		}
	}
	pc := func(ds []time.Duration, p float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		return timeline.Percentile(ds, p)
	}
	r.LateFirstP50, r.LateFirstP99 = pc(late, 50), pc(late, 99)
	r.UrgentBookedP50, r.UrgentBookedP99 = pc(urgentBooked, 50), pc(urgentBooked, 99)
	r.UrgentStartP50, r.UrgentStartP99 = pc(urgentStart, 50), pc(urgentStart, 99)
	r.ToldP50, r.ToldP99 = pc(told, 50), pc(told, 99)
	if len(told) > 0 {
		r.ToldMax = slices.Max(told)
	}
	r.HeavyMakespan = heavyLast.Sub(heavyFirst)
	r.Ideal = timeline.Ideal(cfg.limits(), len(seen))
	r.Violations = timeline.Summarize(res.Starts, cfg.limits(), res.Skew).Violations
	r.GateViolations = timeline.Summarize(timeline.AtGate(res.Starts), cfg.limits(), res.Skew).Violations
	return r
}

// problems are what fails a run: a start that broke the queue's limit at
// the gate, a job lost or run twice, a start whose booking was not seen.
// The figures against their goals (a late key's first start within 1s, the
// makespan within 1.02× of the ideal, starts within 2ms of their slot) are
// reported, not failed: they are wall-clock figures of a shared host.
func (r fairReport) problems() []string {
	var p []string
	if r.GateViolations > 0 {
		p = append(p, fmt.Sprintf("%d violations of the queue's limit at the gate", r.GateViolations))
	}
	if r.Lost > 0 {
		p = append(p, fmt.Sprintf("%d of %d jobs lost (not finished, or never run)", r.Lost, r.Jobs))
	}
	if r.Twice > 0 {
		p = append(p, fmt.Sprintf("%d jobs ran more than once", r.Twice))
	}
	if r.Untold > 0 {
		p = append(p, fmt.Sprintf("%d jobs started without a booking", r.Untold))
	}
	if r.Jobs == 0 {
		p = append(p, "no job was enqueued")
	}
	return p
}

// fairHeader is the table of `slotq bench fair`, one row a run.
var fairHeader = []string{"run", "jobs", "waited", "late key 1st start p50", "p99", "priority 1 booked p50", "p99",
	"priority 1 start p50", "p99", "A's makespan", "ideal", "ratio", "violations (handler)", "(gate)",
	"start − told slot p50", "p99", "max", "re-ticketed", "lost", "twice"}

// row is r as a row of fairHeader.
func (r fairReport) row(run string) []string {
	return []string{run, strconv.Itoa(r.Jobs), strconv.Itoa(r.Waited), clikit.Human(r.LateFirstP50), clikit.Human(r.LateFirstP99),
		clikit.Human(r.UrgentBookedP50), clikit.Human(r.UrgentBookedP99), clikit.Human(r.UrgentStartP50), clikit.Human(r.UrgentStartP99),
		clikit.Human(r.HeavyMakespan), clikit.Human(r.Ideal), fmt.Sprintf("%.4f", r.Ratio()),
		strconv.Itoa(r.Violations), strconv.Itoa(r.GateViolations),
		clikit.Human(r.ToldP50), clikit.Human(r.ToldP99), clikit.Human(r.ToldMax), strconv.Itoa(r.Reticketed), strconv.Itoa(r.Lost), strconv.Itoa(r.Twice)}
}

// BenchFair runs the fair workload runs times, seed after seed, and
// prints a row a run, as `slotq bench fair` does; with out's --doc and
// --table it writes the table into a Markdown file too. It returns the
// exit code: 1 on a violation at the gate, a job lost or run twice.
func BenchFair(ctx context.Context, stdout, stderr io.Writer, c FairConfig, runs int, logLevel string, out benchdoc.Out) int {
	if code, ok := begin(out, "bench fair", runs, logLevel, stderr, &c.Logger, func() error { return c.validate() }); !ok {
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
		c.limits(), bound, c.Heavy, clikit.Human(c.LateAfter), c.LateKeys, c.LateJobs, clikit.Human(c.UrgentAfter), c.Urgent, urgentOf, c.Workers, runs)
	var rows [][]string
	tw := newTable(stdout, fairHeader)
	_, code, ok := measurement[FairConfig, fairResult, fairReport]{
		name: "bench fair", seeded: FairConfig.seeded, run: runFair, score: newFairReport,
		show: func(i int, r fairReport) bool {
			rows = append(rows, r.row(strconv.Itoa(i+1)))
			tw.row(rows[len(rows)-1])
			p := r.problems()
			if len(p) > 0 {
				fmt.Fprintf(stderr, "slotq bench fair: run %d: FAIL: %s\n", i+1, strings.Join(p, "; "))
			}
			return len(p) > 0
		},
	}.measure(ctx, c, runs, stderr)
	if !ok {
		return code
	}
	fmt.Fprintf(stdout, "\nlate key 1st start: a late key's first start after its enqueue, over the keys (goal ≤ 1s with a bound)\n")
	fmt.Fprintf(stdout, "priority 1 booked/start: an urgent job's booking (its slot) and its start after its enqueue\n")
	fmt.Fprintf(stdout, "ratio: A's makespan (its first start to its last) / ideal, the least span of every job's start at the queue's rate (goal ≤ 1.02)\n")
	fmt.Fprintf(stdout, "violations: starts that broke the queue's limit, timed as the handler began, and at the gate (must be 0)\n")
	fmt.Fprintf(stdout, "start − told slot: the handler's begin against the slot_at the job was told when booked, at enqueue or from the waiting room (goal p99 ≤ 2ms);\n"+
		"  re-ticketed: jobs whose worker came too late for their slot and took a new ticket (they start on a slot they were not told)\n")
	fmt.Fprintf(stdout, "lost: accepted jobs not succeeded or never run; twice: jobs run more than once (both must be 0)\n")
	return finish(out, "bench fair", stdout, stderr, benchdoc.Table{Command: out.Command, Header: fairHeader, Rows: rows}, code)
}
