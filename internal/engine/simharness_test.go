package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
	"go.opentelemetry.io/otel/trace"
)

// The simulation: an engine on memstore inside a testing/synctest bubble,
// with concurrent producers and workers, a transport that may add jitter,
// duplicates and drops, a state store that may "crash" a worker between
// any two steps, and the resume function on a schedule. An hour of slots
// passes in well under a second.

// start is one handler run: what the guarantees are checked against.
type start struct {
	Queue   string
	Gen     int64
	ID      string
	Ticket  int64
	Attempt int
	SlotAt  time.Time
	At      time.Time
}

type simOptions struct {
	Workers   int
	Transport memstore.TransportOptions
	// CrashRate is the probability a worker dies right after a step: after
	// the gate claimed the attempt, or after the handler ran (before the
	// outcome is recorded).
	CrashRate float64
	// ResumeEvery is the schedule of the resume function. Default 1m.
	ResumeEvery time.Duration
	Lease       time.Duration
	// ResumeBudget is engine.Options.ResumeBudget (0: its default).
	ResumeBudget int
	// Lead is the engine's Lead. Default: the transport's Jitter if it
	// has one, else the engine's default. A lead that covers the
	// transport's delivery lateness absorbs it, as SQS's delays, rounded
	// down to whole seconds, absorb theirs: a message that comes later
	// than Lead before its slot makes its job miss the slot.
	Lead time.Duration
	Seed uint64
	// Wrap, when set, wraps the state the engine uses (around the
	// chaos wrapper).
	Wrap func(engine.State) engine.State
	// Tracer is the engine's Tracer (nil: none).
	Tracer trace.TracerProvider
	// MaxSendsBack is the engine's (0: its default).
	MaxSendsBack int
	// MoveBudget is engine.Options.MoveBudget (0: its default).
	MoveBudget int
	// Invocation, if set, is each delivery's time, as a worker
	// function's timeout bounds it (0: none).
	Invocation time.Duration
}

type sim struct {
	t     *testing.T
	store *memstore.Store
	tr    *memstore.Transport
	eng   *engine.Engine
	chaos *chaosState
	mux   *target.Mux // a test may register handlers of its own

	mu       sync.Mutex
	starts   []start
	runs     []run
	failFor  map[string]int // job id → attempts that fail
	warnings []string       // the engine's warnings, as "message key=value…"
	workErrs []string       // errors Work returned (the transport redelivers)

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// newSim builds and starts a simulation. Call it inside synctest.Test, and
// stop it with s.stop() before the bubble ends.
func newSim(t *testing.T, o simOptions) *sim {
	t.Helper()
	if o.Workers == 0 {
		o.Workers = 4
	}
	if o.ResumeEvery == 0 {
		o.ResumeEvery = time.Minute
	}
	if o.Lease == 0 {
		o.Lease = 2 * time.Minute
	}
	if o.Lead == 0 {
		o.Lead = o.Transport.Jitter
	}
	s := &sim{t: t, failFor: map[string]int{}}
	s.store = memstore.New(memstore.Options{})
	s.chaos = &chaosState{State: s.store, rate: o.CrashRate, rnd: rand.New(rand.NewPCG(o.Seed, 7)), t: t}
	if o.Transport.Seed == 0 {
		o.Transport.Seed = o.Seed + 1
	}
	s.tr = memstore.NewTransport(o.Transport)
	mux := target.NewMux()
	mux.HandleFunc("sim", s.handle)
	mux.HandleFunc("lane", s.handleLane)
	s.mux = mux
	var st engine.State = s.chaos
	if o.Wrap != nil {
		st = o.Wrap(st)
	}
	s.eng = engine.New(engine.Options{
		State: st, Transport: s.tr, Runner: &dispatch.Dispatcher{Mux: mux},
		Lease: o.Lease, Lead: o.Lead, Logger: slog.New(warnLog{s}), ResumeBudget: o.ResumeBudget,
		Schedules: schedulesOf(st, s.store), Tracer: o.Tracer, MaxSendsBack: o.MaxSendsBack,
		MoveBudget: o.MoveBudget,
	})
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done.Go(func() {
		_ = s.tr.Run(ctx, o.Workers, func(ctx context.Context, env job.Envelope) error {
			if o.Invocation > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, o.Invocation)
				defer cancel()
			}
			err := s.eng.Work(ctx, env)
			if err != nil && ctx.Err() == nil {
				s.mu.Lock()
				s.workErrs = append(s.workErrs, err.Error())
				s.mu.Unlock()
			}
			return err
		})
	})
	s.done.Go(func() { resumeEvery(ctx, s.eng, o.ResumeEvery) })
	return s
}

// resumeEvery runs eng's resume function every period until ctx ends, as
// its schedule would.
func resumeEvery(ctx context.Context, eng *engine.Engine, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_, _ = eng.Resume(ctx)
		}
	}
}

func (s *sim) stop() {
	s.cancel()
	s.done.Wait()
}

// warnLog records the engine's warnings in its sim.
type warnLog struct{ s *sim }

func (h warnLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h warnLog) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		return true
	})
	h.s.mu.Lock()
	h.s.warnings = append(h.s.warnings, msg)
	h.s.mu.Unlock()
	return nil
}

func (h warnLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h warnLog) WithGroup(string) slog.Handler      { return h }

func (s *sim) handle(ctx context.Context, j *api.Job) error {
	if s.recordStart(j, time.Now()) {
		return fmt.Errorf("attempt %d of %s fails on purpose", j.Attempt, j.ID)
	}
	return nil
}

// recordStart notes j's start at at, and reports whether this attempt is
// one of the job's first failFor, which fail on purpose.
func (s *sim) recordStart(j *api.Job, at time.Time) (fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starts = append(s.starts, start{Queue: j.Queue, Gen: j.Gen, ID: j.ID, Ticket: j.Ticket, Attempt: j.Attempt, SlotAt: j.SlotAt, At: at})
	return j.Attempt <= s.failFor[j.ID]
}

// run is one run of a "lane" job: its begin and end.
type run struct {
	Queue, Key, ID string
	Gen            int64
	Ticket         int64
	Attempt        int
	SlotAt         time.Time
	Begin, End     time.Time
}

// handleLane runs a "lane" job: it takes the payload's "ms" milliseconds
// and records its begin and end; it fails the job's first failFor
// attempts, as handle does.
func (s *sim) handleLane(ctx context.Context, j *api.Job) error {
	var p struct {
		Ms int `json:"ms"`
	}
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return err
	}
	begin := time.Now()
	fail := s.recordStart(j, begin)
	time.Sleep(time.Duration(p.Ms) * time.Millisecond)
	s.mu.Lock()
	s.runs = append(s.runs, run{Queue: j.Queue, Gen: j.Gen, Key: j.Key, ID: j.ID, Ticket: j.Ticket, Attempt: j.Attempt, SlotAt: j.SlotAt, Begin: begin, End: time.Now()})
	s.mu.Unlock()
	if fail {
		return fmt.Errorf("attempt %d of %s fails on purpose", j.Attempt, j.ID)
	}
	return nil
}

func (s *sim) runsOf(queue string) []run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofQueue(s.runs, queue, func(r run) (string, time.Time) { return r.Queue, r.Begin })
}

func (s *sim) startsOf(queue string) []start {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofQueue(s.starts, queue, func(st start) (string, time.Time) { return st.Queue, st.At })
}

// ofQueue returns the records of queue among all, in time order; of
// tells a record's queue and time.
func ofQueue[T any](all []T, queue string, of func(T) (string, time.Time)) []T {
	var out []T
	for _, x := range all {
		if q, _ := of(x); q == queue {
			out = append(out, x)
		}
	}
	slices.SortFunc(out, func(a, b T) int {
		_, ta := of(a)
		_, tb := of(b)
		return ta.Compare(tb)
	})
	return out
}

// enqueue enqueues n jobs of kind "sim" in one call and fails the test on
// error.
func (s *sim) enqueue(queue string, n int, mod func(i int, sp *job.Spec)) engine.EnqueueResult {
	s.t.Helper()
	req := job.EnqueueRequest{Queue: queue}
	for i := range n {
		sp := job.Spec{Kind: "sim", Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		if mod != nil {
			mod(i, &sp)
		}
		req.Jobs = append(req.Jobs, sp)
	}
	res, err := s.eng.Enqueue(context.Background(), req)
	if err != nil {
		s.t.Fatalf("enqueue: %v", err)
	}
	return res
}

// waitFinished advances fake time until every job of queue is final, or
// fails after limit.
func (s *sim) waitFinished(queue string, limit time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	step := max(time.Second, limit/20000)
	for time.Now().Before(deadline) {
		if s.unfinished(queue) == 0 {
			return
		}
		time.Sleep(step)
	}
	s.t.Fatalf("queue %s: %d jobs not finished after %v", queue, s.unfinished(queue), limit)
}

// waitStarts advances fake time until queue has had n starts, or fails
// after limit.
func (s *sim) waitStarts(queue string, n int, limit time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for len(s.startsOf(queue)) < n {
		if !time.Now().Before(deadline) {
			s.t.Fatalf("queue %s: %d starts after %v, want %d", queue, len(s.startsOf(queue)), limit, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *sim) unfinished(queue string) int {
	n := 0
	for _, j := range s.store.Jobs(queue) {
		if !j.Status.Final() {
			n++
		}
	}
	return n
}

func (s *sim) jobs(queue string, st job.Status) []job.Job {
	s.t.Helper()
	var js []job.Job
	for _, j := range s.store.Jobs(queue) {
		if j.Status == st {
			js = append(js, j)
		}
	}
	return js
}

func (s *sim) createQueue(name string, cfg slot.Config) {
	s.t.Helper()
	if _, err := s.eng.CreateQueue(context.Background(), name, cfg); err != nil {
		s.t.Fatal(err)
	}
}

// simRun is one run of a simulation: a name for the subtest and the
// faults its options bring.
type simRun struct {
	name string
	opts simOptions
}

// faultRuns are the three runs a guarantee is checked in: clean, with
// workers workers; with more workers through the transport's jitter and
// 30% duplicate deliveries; and with crashes at crashRate (seeded with
// seed) besides. tune, when set, adjusts each run's options.
func faultRuns(workers, more int, jitter time.Duration, crashRate float64, seed uint64, tune func(*simOptions)) []simRun {
	noisy := memstore.TransportOptions{Jitter: jitter, DuplicateRate: 0.3}
	runs := []simRun{
		{"clean", simOptions{Workers: workers}},
		{"jitter and duplicates", simOptions{Workers: more, Transport: noisy}},
		{"crashes, jitter and duplicates", simOptions{Workers: more, CrashRate: crashRate, Seed: seed, Transport: noisy}},
	}
	if tune != nil {
		for i := range runs {
			tune(&runs[i].opts)
		}
	}
	return runs
}

// clean reports whether the run has no fault: no crash, no jitter, no
// duplicate.
func (r simRun) clean() bool {
	return r.opts.CrashRate == 0 && r.opts.Transport.Jitter == 0 && r.opts.Transport.DuplicateRate == 0
}

// simForm is a queue's limits a simulation runs under, by name.
type simForm struct {
	name string
	cfg  slot.Config
}

// eachRun runs body in a simulation of its own for each form under each
// run, as subtests named "form/run"; cfg is the form's configuration.
// Without forms, the subtests are the runs, and cfg is zero.
func eachRun(t *testing.T, forms []simForm, runs []simRun, body func(t *testing.T, s *sim, cfg slot.Config, r simRun)) {
	if len(forms) == 0 {
		forms = []simForm{{}}
	}
	for _, f := range forms {
		for _, r := range runs {
			name := r.name
			if f.name != "" {
				name = f.name + "/" + r.name
			}
			t.Run(name, func(t *testing.T) {
				inSim(t, r.opts, func(t *testing.T, s *sim) { body(t, s, f.cfg, r) })
			})
		}
	}
}

// inSim runs body in a simulation with options o, in a synctest bubble
// (t is the bubble's), and stops the simulation when body returns.
func inSim(t *testing.T, o simOptions, body func(t *testing.T, s *sim)) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, o)
		defer s.stop()
		body(t, s)
	})
}

// produce runs n producers at once, and returns when all are done or ctx
// ends: producer p makes calls calls of call (c the call, rnd the
// producer's own random source, seeded with seed+p and stream), each
// followed by the pause call returns.
func produce(ctx context.Context, n, calls int, seed, stream uint64, call func(p, c int, rnd *rand.Rand) time.Duration) {
	var wg sync.WaitGroup
	for p := range n {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(seed+uint64(p), stream))
			for c := range calls {
				select {
				case <-ctx.Done():
					return
				case <-time.After(call(p, c, rnd)):
				}
			}
		})
	}
	wg.Wait()
}

// produceSteadily runs ten producers of five calls of call each, at a
// steady pace of their own (producer p waits p*37+c*11 ms after its call
// c).
func produceSteadily(call func(p, c int)) {
	produce(context.Background(), 10, 5, 0, 0, func(p, c int, _ *rand.Rand) time.Duration {
		call(p, c)
		return time.Duration(p*37+c*11) * time.Millisecond
	})
}

// enqueueSome enqueues 1 to 4 jobs in one call, each built by spec (rnd
// draws the count, spec may draw more), and returns the enqueue's error.
func (s *sim) enqueueSome(queue string, rnd *rand.Rand, spec func() job.Spec) error {
	req := job.EnqueueRequest{Queue: queue}
	for range 1 + rnd.IntN(4) {
		req.Jobs = append(req.Jobs, spec())
	}
	_, err := s.eng.Enqueue(context.Background(), req)
	return err
}

// checkNoneFailed fails if a job of queue failed.
func (s *sim) checkNoneFailed(queue string) {
	s.t.Helper()
	if failed := s.jobs(queue, job.Failed); len(failed) > 0 {
		s.t.Fatalf("%d jobs failed; first: %+v", len(failed), failed[0])
	}
}

// checkLimits fails if starts break limits, the skew the one allowance.
func checkLimits(t *testing.T, limits slot.Limits, skew time.Duration, starts []start) {
	t.Helper()
	if len(starts) == 0 {
		t.Fatal("nothing started")
	}
	at := make([]time.Time, len(starts))
	for i, st := range starts {
		at[i] = st.At
	}
	if b := slot.Breaches(limits, skew, at); len(b) > 0 {
		t.Fatalf("%d breaches of %v among %d starts; first: starts %d and %d %v too close",
			len(b), limits, len(starts), b[0].I, b[0].J, b[0].By)
	}
}

// chaosState wraps a State. With probability rate it makes the caller
// "crash" after a step took effect (the gate passed but the claim never
// came; the claim landed but the handler never ran) or before a step takes
// effect (the outcome of a run is never recorded). It also checks on every queue state it
// sees that nothing moved back (docs/guarantees.md §7).
type chaosState struct {
	engine.State
	rate float64
	t    *testing.T

	mu   sync.Mutex
	rnd  *rand.Rand
	seen map[string]slot.State
	// dieAfterRun names jobs whose next run's outcome is never recorded.
	dieAfterRun map[string]bool
	// passes are the gates passed, in time order.
	passes []gatePass

	// opMu orders each state call with its observation, so a read that
	// returned before a concurrent write is not observed after it.
	opMu sync.Mutex
}

var errCrash = errors.New("simulated crash")

// gatePass is one ticket passing the gate: when its start was decided.
// The start itself (the target's begin) comes up to a lead later.
type gatePass struct {
	Queue  string
	Gen    int64
	Ticket int64
	At     time.Time
}

// gatedAt returns when r's ticket last passed the gate before r began.
func (c *chaosState) gatedAt(r run) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, p := range c.passes {
		if p.Queue == r.Queue && p.Gen == r.Gen && p.Ticket == r.Ticket && !p.At.After(r.Begin) {
			at = p.At
		}
	}
	return at, !at.IsZero()
}

func (c *chaosState) roll() bool {
	if c.rate == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rnd.Float64() < c.rate
}

func (c *chaosState) observe(queue string, gen int64, st slot.State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]slot.State{}
	}
	// A queue deleted and created again under its name starts over.
	name := fmt.Sprintf("%s (generation %d)", queue, gen)
	prev, ok := c.seen[name]
	if ok && (st.Ticket < prev.Ticket || st.Current < prev.Current || st.Clock.Before(prev.Clock) || st.LastStart.Before(prev.LastStart)) {
		c.t.Errorf("queue %s state moved back: %+v -> %+v", name, prev, st)
	}
	if !ok || st.Ticket > prev.Ticket || st.Current > prev.Current || st.Clock.After(prev.Clock) || st.LastStart.After(prev.LastStart) {
		c.seen[name] = slot.State{Ticket: max(st.Ticket, prev.Ticket), Current: max(st.Current, prev.Current),
			Clock: laterOf(st.Clock, prev.Clock), LastStart: laterOf(st.LastStart, prev.LastStart)}
	}
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (c *chaosState) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	q, err := c.State.GetQueue(ctx, name)
	if err == nil {
		c.observe(name, q.Gen, q.State)
	}
	return q, err
}

func (c *chaosState) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	tk, err := c.State.Take(ctx, r)
	if err == nil {
		c.observe(r.Queue, r.Gen, tk.State)
	}
	return tk, err
}

func (c *chaosState) Gate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	st, err := c.State.Gate(ctx, r)
	if err == nil {
		c.observe(r.Queue, r.Gen, st)
		c.mu.Lock()
		c.passes = append(c.passes, gatePass{Queue: r.Queue, Gen: r.Gen, Ticket: r.Ticket, At: time.Now()})
		c.mu.Unlock()
		if c.roll() {
			return st, errCrash // passed the gate, but died before the claim
		}
	}
	return st, err
}

// Admit is the gate of a booked start: a pass like Gate's, with no
// write (the crash after it is the same: passed, never claimed).
func (c *chaosState) Admit(ctx context.Context, r engine.AdmitRequest) (engine.Queue, error) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	q, err := c.State.Admit(ctx, r)
	if err == nil {
		c.observe(r.Queue, r.Gen, q.State)
		c.mu.Lock()
		c.passes = append(c.passes, gatePass{Queue: r.Queue, Gen: r.Gen, Ticket: r.Ticket, At: time.Now()})
		c.mu.Unlock()
		if c.roll() {
			return q, errCrash
		}
	}
	return q, err
}

func (c *chaosState) PutLane(ctx context.Context, l slot.Lane, from, pendingDelta int64) (slot.Lane, error) {
	out, err := c.State.PutLane(ctx, l, from, pendingDelta)
	if err == nil && c.roll() {
		return out, errCrash // wrote the lane, but died before acting on it
	}
	return out, err
}

func (c *chaosState) EndRun(ctx context.Context, queue string, gen, ticket int64, until time.Time) error {
	if c.roll() {
		return errCrash // died before freeing the running place
	}
	return c.State.EndRun(ctx, queue, gen, ticket, until)
}

// failNext makes the worker that runs job id next die after the run,
// before recording its outcome.
func (c *chaosState) failNext(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dieAfterRun == nil {
		c.dieAfterRun = map[string]bool{}
	}
	c.dieAfterRun[id] = true
}

func (c *chaosState) dies(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dieAfterRun[id] {
		delete(c.dieAfterRun, id)
		return true
	}
	return false
}

func (c *chaosState) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if from.Status == job.Running && (c.dies(j.ID) || c.roll()) {
		return errCrash // ran, but died before recording the outcome
	}
	if j.Status != job.Running && j.Ticket != from.Ticket && c.roll() {
		return errCrash // sent a re-ticketed job's message, but died before its record
	}
	err := c.State.UpdateJob(ctx, j, from)
	if err == nil && from.Status == job.Queued && j.Status == job.Running && c.roll() {
		return errCrash // claimed, but died before running
	}
	return err
}

// onPass is a State that calls pass with the ticket of each gate that
// passes: the gate's write (Gate), or the read of a booked start (Admit),
// after which the hook runs as after the write.
type onPass struct {
	engine.State
	pass func(ticket int64)
}

func (o *onPass) Gate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	st, err := o.State.Gate(ctx, r)
	if err == nil {
		o.pass(r.Ticket)
	}
	return st, err
}

func (o *onPass) Admit(ctx context.Context, r engine.AdmitRequest) (engine.Queue, error) {
	q, err := o.State.Admit(ctx, r)
	if err == nil {
		o.pass(r.Ticket)
	}
	return q, err
}
