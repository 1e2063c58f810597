package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// Admin operations win against work in flight: pause, pause until,
// resume, purge, delete and create again under the name, cancel and
// configure (interval up and down, skew, max_running, retries) come at
// random moments among enqueues (keyed, unkeyed and scheduled jobs, some
// of which fail), deliveries with jitter and duplicates, crashes and lane
// hand-offs. Every guarantee is checked per generation of the queue.

// adminOp is one admin operation the simulation made, for the checks.
type adminOp struct {
	kind           string
	gen            int64
	called, done   time.Time // when it was called and when it returned
	until          time.Time // pause until
	purged         int64     // purge: the tickets it covers
	jobID          string    // cancel
	interval, skew time.Duration
}

// adminSim drives the admin side of one simulation run: from its own
// goroutine at random moments, and from inside the workers' and the
// resume function's calls to the store (adminRacer), so that operations
// also land between two steps of a start, a park or a release, where a
// stream of operations at random moments almost never lands in a bubble.
type adminSim struct {
	s     *sim
	t     *testing.T
	queue string

	// turn is held (a buffered channel: waiting on it is durable blocking
	// in a synctest bubble, as a mutex is not) for the whole of an
	// operation, and guards the fields below: one operation at a time,
	// and none from inside the store calls of another (adminRacer).
	turn chan struct{}
	rnd  *rand.Rand
	cfg  slot.Config
	ops  []adminOp
	// intervals and skews every generation had, for the spacing check.
	minInterval map[int64]time.Duration
	maxSkew     map[int64]time.Duration
	raced       int // operations made from inside a store call
	recreated   int // queues a producer's enqueue created again after a delete
	crashes     bool
}

func (a *adminSim) gen() int64 {
	q, err := a.s.store.GetQueue(context.Background(), a.queue)
	if err != nil {
		a.t.Errorf("the queue is gone: %v", err)
	}
	return q.Gen
}

func (a *adminSim) noteConfig(gen int64) { a.noteConfigOf(gen, a.cfg) }

func (a *adminSim) noteConfigOf(gen int64, cfg slot.Config) {
	if iv, ok := a.minInterval[gen]; !ok || cfg.Interval < iv {
		a.minInterval[gen] = cfg.Interval
	}
	a.maxSkew[gen] = max(a.maxSkew[gen], cfg.Skew)
}

// again calls op until it does not fail with a simulated crash, as an
// operator (or the CLI's retries) would.
func again[T any](op func() (T, error)) (T, error) {
	v, err := op()
	for try := 0; errors.Is(err, errCrash) && try < 20; try++ {
		v, err = op()
	}
	return v, err
}

// step makes one admin operation, chosen at random.
func (a *adminSim) step(ctx context.Context) {
	kinds := []string{"pause", "pause", "pause", "pause-until", "pause-until", "resume", "resume", "resume", "resume",
		"purge", "purge", "delete", "cancel", "cancel", "cancel", "configure", "configure", "configure", "configure"}
	a.turn <- struct{}{}
	defer func() { <-a.turn }()
	a.do(ctx, kinds[a.rnd.IntN(len(kinds))], "")
}

// do makes one admin operation of kind, holding the turn; a cancel
// cancels job id, or a waiting job of the queue chosen at random.
func (a *adminSim) do(ctx context.Context, kind, id string) {
	gen := a.gen()
	op := adminOp{kind: kind, gen: gen, called: time.Now()}
	var err error
	switch kind {
	case "pause":
		_, err = again(func() (slot.State, error) { return a.s.eng.Pause(ctx, a.queue, time.Time{}) })
	case "pause-until":
		op.until = time.Now().Add(time.Duration(1+a.rnd.IntN(20)) * time.Second)
		_, err = again(func() (slot.State, error) { return a.s.eng.Pause(ctx, a.queue, op.until) })
	case "resume":
		_, err = again(func() (engine.ResumeReport, error) { return a.s.eng.Unpause(ctx, a.queue) })
	case "purge":
		_, err = again(func() (int, error) { return a.s.eng.Purge(ctx, a.queue) })
		if err == nil {
			q, qerr := a.s.store.GetQueue(ctx, a.queue)
			err = qerr
			op.purged = q.State.Purged
		}
	case "delete":
		_, err = again(func() (int, error) { return a.s.eng.DeleteQueue(ctx, a.queue) })
		op.done = time.Now()
		if err == nil {
			a.ops = append(a.ops, op)
			var q engine.Queue
			q, err = again(func() (engine.Queue, error) { return a.s.eng.CreateQueue(ctx, a.queue, a.cfg) })
			if errors.Is(err, engine.ErrQueueExists) {
				// The producer's next enqueue created it first, with the
				// defaults (auto-create): a generation like any other,
				// configured as the admin wanted once it is read.
				if q, err = again(func() (engine.Queue, error) { return a.s.eng.Queue(ctx, a.queue) }); err == nil {
					a.recreated++
					a.noteConfigOf(q.Gen, q.Config)
					q, err = again(func() (engine.Queue, error) { return a.s.eng.Configure(ctx, a.queue, a.cfg) })
				}
			}
			a.noteConfig(q.Gen)
			if err != nil {
				a.t.Errorf("create again: %v", err)
			}
			return
		}
	case "cancel":
		if id == "" {
			var waiting []job.Job
			for _, j := range a.s.store.Jobs(a.queue) {
				if j.Gen == gen && j.Status.Waiting() {
					waiting = append(waiting, j)
				}
			}
			if len(waiting) == 0 {
				return
			}
			id = waiting[a.rnd.IntN(len(waiting))].ID
		}
		op.jobID = id
		_, err = again(func() (job.Job, error) { return a.s.eng.CancelJob(ctx, job.Ref{Queue: a.queue, ID: id}) })
		if errors.Is(err, engine.ErrNotWaiting) || errors.Is(err, engine.ErrJobNotFound) {
			return // it started, ended or is another generation's
		}
	case "configure":
		a.cfg.Interval = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}[a.rnd.IntN(3)]
		a.cfg.Skew = []time.Duration{time.Millisecond, 5 * time.Millisecond}[a.rnd.IntN(2)]
		a.cfg.MaxRunning = 2 + a.rnd.IntN(2)
		a.cfg.MaxAttempts = 5 + a.rnd.IntN(5)
		a.cfg.Backoff = time.Duration(100+a.rnd.IntN(400)) * time.Millisecond
		_, err = again(func() (engine.Queue, error) { return a.s.eng.Configure(ctx, a.queue, a.cfg) })
		a.noteConfig(gen)
	}
	if err != nil {
		a.t.Errorf("%s: %v", kind, err)
		return
	}
	op.done = time.Now()
	a.ops = append(a.ops, op)
}

// adminRacer wraps the simulation's store: now and then, a call where a
// worker or the resume function is between two steps first lets an admin
// operation land (purge, delete, cancel of the job at hand or of a job of
// the key at hand, pause).
type adminRacer struct {
	engine.State
	a    *adminSim
	rate float64
	max  int
}

// race makes an operation from inside a store call, with probability
// rate, up to max in a run. site names the call; j and key what the
// caller works on.
func (r *adminRacer) race(ctx context.Context, site string, id, key string) {
	a := r.a
	select {
	case a.turn <- struct{}{}:
	default:
		return // an operation is under way: this call may be its own
	}
	defer func() { <-a.turn }()
	if a.raced >= r.max || a.rnd.Float64() >= r.rate {
		return
	}
	a.raced++
	kinds := []string{"purge", "delete", "pause", "cancel", "cancel"}
	kind := kinds[a.rnd.IntN(len(kinds))]
	if kind == "cancel" && id == "" && key != "" {
		for _, j := range a.s.store.Jobs(a.queue) {
			if j.Key == key && j.Status.Waiting() {
				id = j.ID
				break
			}
		}
	}
	a.do(ctx, kind, id)
}

func (r *adminRacer) GetLane(ctx context.Context, queue, key string) (slot.Lane, error) {
	r.race(ctx, "lane read", "", key)
	return r.State.GetLane(ctx, queue, key)
}

func (r *adminRacer) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if j.Status == job.Parked || j.Status != from.Status {
		r.race(ctx, "job write", j.ID, j.Key)
	}
	return r.State.UpdateJob(ctx, j, from)
}

func (r *adminRacer) Take(ctx context.Context, req engine.TakeRequest) (engine.Taken, error) {
	r.race(ctx, "take", "", "")
	return r.State.Take(ctx, req)
}

func (r *adminRacer) Gate(ctx context.Context, req engine.GateRequest) (slot.State, error) {
	r.race(ctx, "gate", "", "")
	return r.State.Gate(ctx, req)
}

func (r *adminRacer) EndRun(ctx context.Context, queue string, gen, ticket int64, until time.Time) error {
	r.race(ctx, "end run", "", "")
	return r.State.EndRun(ctx, queue, gen, ticket, until)
}

// forbidden returns the runs that started where an admin operation says
// nothing may: whose ticket passed the gate after a purge that covered
// it, a delete of their generation, or a pause returned, or that began
// after a cancel of their job returned. (The gate decides a start and
// reserves it up to a lead ahead: a start it decided before the
// operation returned may begin up to a lead after.)
func (a *adminSim) forbidden(runs []run) []string {
	var bad []string
	for i, op := range a.ops {
		// A pause holds until the next operation that may lift it,
		// or its until.
		end := time.Time{}
		if op.kind == "pause" || op.kind == "pause-until" {
			end = op.until
			for _, next := range a.ops[i+1:] {
				if next.kind == "resume" || next.kind == "delete" || next.kind == "pause" || next.kind == "pause-until" {
					if end.IsZero() || next.called.Before(end) {
						end = next.called
					}
					break
				}
			}
		}
		for _, r := range runs {
			gated, ok := a.s.chaos.gatedAt(r)
			if !ok {
				a.t.Errorf("%s (ticket %d) ran with no gate passed", r.ID, r.Ticket)
				continue
			}
			if op.kind == "cancel" {
				gated = r.Begin
			}
			if r.Gen != op.gen || !gated.After(op.done) {
				continue
			}
			why := ""
			switch op.kind {
			case "purge":
				if r.Ticket <= op.purged {
					why = fmt.Sprintf("purge covering ticket %d", op.purged)
				}
			case "cancel":
				if r.ID == op.jobID {
					why = "cancel of the job"
				}
			case "delete":
				why = "delete of its generation"
			case "pause", "pause-until":
				if end.IsZero() || r.Begin.Before(end) {
					why = "pause"
				}
			}
			if why != "" {
				bad = append(bad, fmt.Sprintf("%s (ticket %d, attempt %d) passed the gate at %v (began %v) after the %s returned at %v",
					r.ID, r.Ticket, r.Attempt, gated.Format("15:04:05.000"), r.Begin.Format("15:04:05.000"), why, op.done.Format("15:04:05.000")))
			}
		}
	}
	return bad
}

// adminSeeds is how many seeds each case of TestGuaranteeAdmin runs.
var adminSeeds = 10

func TestGuaranteeAdmin(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    simOptions
	}{
		{"no faults", simOptions{Workers: 16, Seed: 1}},
		{"jitter and duplicates", simOptions{Workers: 16, Seed: 2, Transport: memstore.TransportOptions{
			Jitter: 200 * time.Millisecond, DuplicateRate: 0.2}}},
		{"crashes, jitter and duplicates", simOptions{Workers: 16, CrashRate: 0.02, Seed: 3, Lease: 30 * time.Second,
			ResumeEvery: 10 * time.Second, Transport: memstore.TransportOptions{
				Jitter: 200 * time.Millisecond, DuplicateRate: 0.2, VisibilityTimeout: 5 * time.Second}}},
	} {
		// Some of everything happened over a case's seeds, or the case
		// proves little. One seed may be thin: a few early purges and
		// deletes leave little to run, as the scheduling of its workers
		// decides.
		runs, ran, kinds := 0, 0, map[string]int{}
		for seed := range adminSeeds {
			tc := tc
			tc.o.Seed += uint64(seed) * 100
			t.Run(fmt.Sprintf("%s/seed %d", tc.name, tc.o.Seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					n, k := runAdminSim(t, tc.o)
					ran++
					runs += n
					for kind, c := range k {
						kinds[kind] += c
					}
				})
			})
		}
		if ran < adminSeeds {
			continue // -run chose some seeds: the case is not whole
		}
		if runs < 10*adminSeeds || kinds["pause"]+kinds["pause-until"] == 0 || kinds["resume"] == 0 || kinds["delete"] == 0 || kinds["purge"] == 0 {
			t.Errorf("%s: a thin case: %d runs over %d seeds, operations %v", tc.name, runs, adminSeeds, kinds)
		}
	}
}

// runAdminSim runs one seed and returns its runs and operations by kind.
func runAdminSim(t *testing.T, o simOptions) (int, map[string]int) {
	ctx := context.Background()
	a := &adminSim{t: t, queue: "adm", rnd: rand.New(rand.NewPCG(o.Seed, 3)), turn: make(chan struct{}, 1),
		cfg:         slot.Config{Interval: 100 * time.Millisecond, Skew: time.Millisecond, MaxRunning: 3, MaxAttempts: 10},
		minInterval: map[int64]time.Duration{}, maxSkew: map[int64]time.Duration{}, crashes: o.CrashRate > 0}
	racer := &adminRacer{a: a, rate: 0.02, max: 12}
	o.Wrap = func(st engine.State) engine.State { racer.State = st; return racer }
	s := newSim(t, o)
	defer s.stop()
	a.s = s
	q, err := s.eng.CreateQueue(ctx, a.queue, a.cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.noteConfig(q.Gen)

	// The producer: batches of keyed, unkeyed and scheduled jobs; some
	// fail their first attempts.
	produced := make(chan struct{})
	pctx, stopProducer := context.WithCancel(ctx)
	defer func() { stopProducer(); <-produced }()
	go func() {
		defer close(produced)
		n := 0
		produce(pctx, 1, 60, o.Seed, 4, func(_, _ int, prod *rand.Rand) time.Duration {
			err := s.enqueueSome(a.queue, prod, func() job.Spec {
				key := ""
				if prod.IntN(3) > 0 {
					key = fmt.Sprintf("k%d", prod.IntN(4))
				}
				sp := laneSpec(fmt.Sprintf("p%03d", n), key, time.Duration(10+prod.IntN(300))*time.Millisecond)
				if prod.IntN(8) == 0 {
					nb := time.Now().Add(time.Duration(prod.IntN(20)) * time.Second)
					sp.NotBefore = &nb
				}
				if prod.IntN(6) == 0 {
					s.mu.Lock()
					s.failFor[sp.ID] = 1 + prod.IntN(2)
					s.mu.Unlock()
				}
				n++
				return sp
			})
			if err != nil && !errors.Is(err, engine.ErrQueueNotFound) && !errors.Is(err, errCrash) {
				t.Errorf("enqueue: %v", err)
			}
			return time.Duration(100+prod.IntN(900)) * time.Millisecond
		})
	}()
	pace := rand.New(rand.NewPCG(o.Seed, 5))
	for range 30 {
		time.Sleep(time.Duration(200+pace.IntN(1800)) * time.Millisecond)
		a.step(ctx)
	}
	<-produced
	// The end: the queue runs unpaused until every job has ended.
	a.turn <- struct{}{}
	a.do(ctx, "resume", "")
	racer.max = 0 // no more operations from inside store calls
	<-a.turn
	s.waitFinishedOrDump(a.queue, 2*time.Hour)
	time.Sleep(2 * o.Lease) // the watchdogs of the deleted generations' crashed attempts
	return a.check()
}

func (a *adminSim) check() (int, map[string]int) {
	t, s := a.t, a.s
	ctx := context.Background()
	cur := a.gen()
	runs := s.runsOf(a.queue)
	for _, bad := range a.forbidden(runs) {
		t.Error(bad)
	}
	if v := keyOverlap(runs); v != "" {
		t.Error(v)
	}
	// Per generation: tickets are not handed out twice, the spacing
	// window holds, max_running is never exceeded.
	gens := map[int64]bool{}
	for _, r := range runs {
		gens[r.Gen] = true
	}
	starts := s.startsOf(a.queue)
	for gen := range gens {
		owner := map[int64]string{}
		var gs []start
		for _, st := range starts {
			if st.Gen != gen {
				continue
			}
			gs = append(gs, st)
			if id, ok := owner[st.Ticket]; ok && id != st.ID {
				t.Errorf("generation %d: ticket %d went to %s and %s", gen, st.Ticket, id, st.ID)
			}
			owner[st.Ticket] = st.ID
		}
		checkSpacing(t, gs, a.minInterval[gen], a.maxSkew[gen])
		var gr []run
		for _, r := range runs {
			if r.Gen == gen {
				gr = append(gr, r)
			}
		}
		if n := maxConcurrent(gr); n > 3 {
			t.Errorf("generation %d: %d runs at once; max_running was at most 3", gen, n)
		}
	}
	// Nothing lost: every job of the live generation ended; every job of
	// a deleted one is unreachable (not found through the engine) and
	// expires.
	for _, j := range s.store.Jobs(a.queue) {
		switch {
		case j.Gen == cur && !j.Status.Final():
			t.Errorf("job %s of the live queue is %s %s", j.ID, j.Status, j.ParkReason)
		case j.Gen != cur && (!j.Status.Final() || j.ExpiresAt.IsZero()):
			t.Errorf("job %s of a deleted generation is %s %s, expires %v", j.ID, j.Status, j.ParkReason, j.ExpiresAt)
		}
	}
	for _, j := range s.store.Jobs(a.queue) {
		if j.Gen == cur {
			continue
		}
		if got, err := s.eng.Job(ctx, job.Ref{Queue: a.queue, ID: j.ID}); err == nil && got.Gen != cur {
			t.Errorf("job %s of a deleted generation is reachable: %s", j.ID, got.Status)
		}
	}
	// Without crashes no key is left held: every holder hands its key on
	// as its attempt ends, and a job cancelled before its worker took the
	// key gives it up (the resume function's backstop, which hands on a
	// key whose holder's lease ran out, finds nothing to do).
	if !a.crashes {
		s.mu.Lock()
		for _, w := range s.warnings {
			if strings.Contains(w, "lease ran out") {
				t.Errorf("without crashes: %s", w)
			}
		}
		s.mu.Unlock()
	}
	kinds := map[string]int{}
	for _, op := range a.ops {
		kinds[op.kind]++
	}

	final := map[job.Status]int{}
	for _, j := range s.store.Jobs(a.queue) {
		final[j.Status]++
	}
	t.Logf("%d runs in %d generations; operations %v (%d from inside store calls, %d queues created again by an enqueue); jobs %v",
		len(runs), len(gens), kinds, a.raced, a.recreated, final)
	if t.Failed() {
		for _, op := range a.ops {
			t.Logf("%s gen %d at %v–%v until %v purged %d job %s", op.kind, op.gen, op.called.Format("15:04:05.000"),
				op.done.Format("15:04:05.000"), op.until, op.purged, op.jobID)
		}
		slices.SortFunc(runs, func(x, y run) int { return x.Begin.Compare(y.Begin) })
		for _, r := range runs {
			t.Logf("run %s gen %d key %s ticket %d attempt %d %v–%v", r.ID, r.Gen, r.Key, r.Ticket, r.Attempt,
				r.Begin.Format("15:04:05.000"), r.End.Format("15:04:05.000"))
		}
	}
	return len(runs), kinds
}
