package costs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/internal/bench/awssim"
	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/internal/sqstransport"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// clock is a scenario's clock: real time plus an offset that a scenario
// may move forward to skip hours of waiting. SQS delays stay real, so a
// scenario jumps only to a few seconds before a slot.
type clock struct{ off atomic.Int64 }

func (c *clock) Now() time.Time        { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) jumpTo(t time.Time)    { c.off.Store(int64(t.Sub(time.Now()))) }
func (c *clock) offset() time.Duration { return time.Duration(c.off.Load()) }

// role is one function (enqueue, worker, resume, admin): its own store,
// transport and engine, and what its invocations cost. The store's DynamoDB
// client is billed (billed) and counted by operation (calls); the
// transport's SQS client is counted (sqs).
type role struct {
	billed *awssim.Billed
	calls  *awsmeter.DynamoDB
	sqs    *awsmeter.SQS
	tr     *sqstransport.Transport
	eng    *engine.Engine

	mu   sync.Mutex
	inv  int
	busy time.Duration
}

// call times one invocation, less the time the meter spent reading images.
func (r *role) call(f func() error) error {
	ov := r.billed.Overhead()
	t0 := time.Now()
	err := f()
	// At least 0: the meter's overhead is the whole role's, so calls at
	// once (a worker's batch) take each other's out too.
	d := max(0, time.Since(t0)-(r.billed.Overhead()-ov))
	r.mu.Lock()
	r.inv++
	r.busy += d
	r.mu.Unlock()
	return err
}

type bench struct {
	cl  *awssim.Clients
	seq int
	// skew is the skew the scenarios' queues get: the stack's default
	// (templateSkew), or slot's when the template gives none.
	skew time.Duration
	// calls, when not nil, gets each role's DynamoDB calls by operation
	// (Options.Calls).
	calls io.Writer
}

func newBench(ctx context.Context, skew time.Duration, calls io.Writer) (*bench, error) {
	cl, err := awssim.Open(ctx)
	if err != nil {
		return nil, err
	}
	return &bench{cl: cl, skew: skew, calls: calls}, nil
}

// env is one scenario's table, queue, clock and roles.
type env struct {
	name, url                      string
	clock                          *clock
	raw                            *dynamostore.Store // unbilled, for setup and checks
	mux                            *target.Mux
	enqueue, worker, resume, admin *role
}

// newEnv makes a scenario's table and queue; cfg is the queue's
// configuration beyond its interval and the bench's skew.
func (b *bench) newEnv(ctx context.Context, interval time.Duration, cfg slot.Config) (*env, error) {
	b.seq++
	name := fmt.Sprintf("costs-%d-%d", time.Now().Unix(), b.seq)
	if err := b.cl.NewTable(ctx, name); err != nil {
		return nil, err
	}
	url, err := b.cl.NewQueue(ctx, name, time.Minute)
	if err != nil {
		return nil, err
	}
	cfg.Interval, cfg.Skew = interval, b.skew
	e := &env{name: name, url: url, clock: &clock{}, mux: target.NewMux()}
	e.mux.HandleFunc("ok", func(context.Context, *api.Job) error { return nil })
	e.mux.HandleFunc("flaky", func(_ context.Context, j *api.Job) error {
		if j.Attempt == 1 {
			return errors.New("first attempt fails on purpose")
		}
		return nil
	})
	e.raw = dynamostore.New(b.cl.DB, name, dynamostore.Options{Now: e.clock.Now})
	mk := func() *role {
		r := &role{billed: awssim.NewBilled(b.cl.DB), sqs: awsmeter.NewSQS(b.cl.SQS)}
		r.calls = awsmeter.NewDynamoDB(r.billed)
		r.tr = sqstransport.New(r.sqs, url, sqstransport.Options{QueueARN: "arn:aws:sqs:us-east-1:000000000000:" + name})
		store := dynamostore.New(r.calls, name, dynamostore.Options{Now: e.clock.Now})
		r.eng = engine.New(engine.Options{State: store, Transport: r.tr, Runner: &dispatch.Dispatcher{Mux: e.mux},
			Now: e.clock.Now, NoAutoCreate: true, Lead: costLead})
		return r
	}
	e.enqueue, e.worker, e.resume, e.admin = mk(), mk(), mk(), mk()
	if _, err := engine.New(engine.Options{State: e.raw, Transport: e.enqueue.tr, Now: e.clock.Now, Lead: costLead}).
		CreateQueue(ctx, "q", cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// costLead is the engines' lead: long enough for three calls to DynamoDB
// Local on a loaded host (p99 about 175ms), so that no job misses its
// slot and the calls counted are those of a start that keeps it. The
// stack's lead (SlotLead) is the same.
const costLead = 500 * time.Millisecond

// pollers is how many receive loops work runs at once: the Lambda event
// source's five concurrent batches a standard queue starts with. With
// one loop, a host under load made workers late enough to miss their
// slots, and a batched enqueue paid for the re-tickets (issue figures of
// 6.24 write units and 1.11 sends a job where a quiet run has 4.15 and
// 0.16): Lambda would have run the next batch beside the late one.
const pollers = 5

// work runs the worker role's receive loops (pollers of them) until ctx
// ends: the Lambda event source and the worker function. It adds up the
// time Work spent waiting for slots. The channel gets the loops' errors
// once every loop returned.
func (e *env) work(ctx context.Context, wait *atomic.Int64) chan error {
	done := make(chan error, 1)
	inner := awssim.Worker(func(ctx context.Context, env job.Envelope) error {
		began := time.Now()
		d := env.SlotAt.Sub(e.clock.Now())
		err := e.worker.eng.Work(ctx, env)
		// A message that did not wait for its slot (a batch's job its
		// leader runs, a stale duplicate) counts no wait.
		wait.Add(int64(max(0, min(d, time.Since(began)))))
		return err
	}, nil)
	handle := func(ctx context.Context, batch []events.SQSMessage) (resp events.SQSEventResponse) {
		_ = e.worker.call(func() error { resp = inner(ctx, batch); return nil })
		return resp
	}
	go func() {
		errs := make([]error, pollers)
		var wg sync.WaitGroup
		for i := range pollers {
			wg.Go(func() {
				errs[i] = e.worker.tr.Receive(ctx, sqstransport.ReceiveOptions{WaitTime: time.Second}, handle)
			})
		}
		wg.Wait()
		done <- errors.Join(errs...)
	}()
	return done
}

// waitFinal waits until every job of ids is succeeded or failed.
func (e *env) waitFinal(ctx context.Context, ids []string, limit time.Duration) ([]job.Job, error) {
	deadline := time.Now().Add(limit)
	for {
		var out []job.Job
		left := 0
		for _, id := range ids {
			j, err := e.raw.GetJob(ctx, job.Ref{Queue: "q", ID: id})
			if err != nil {
				return nil, err
			}
			if j.Status != job.Succeeded && j.Status != job.Failed {
				left++
			}
			out = append(out, j)
		}
		if left == 0 {
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d jobs not final after %v", left, len(ids), limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type scenario struct {
	name, what string
	jobs       int
	interval   time.Duration
	kind       string
	// batch enqueues all jobs in one call; otherwise one call per job.
	batch bool
	// keyed gives each job a key of its own; maxRunning caps the queue.
	keyed      bool
	maxRunning int
	// keyLimits gives each key a limit of its own, and keyCap its cap
	// (slot.Config.KeyMaxRunning).
	keyLimits []api.Limit
	keyCap    int
	// bookAhead is the queue's book_ahead: jobs beyond it wait in the
	// waiting room until a booked job starts.
	bookAhead int
	// batchMax is the queue's batch_max, with a batch_wait of the
	// interval: jobs start in batches of up to batchMax.
	batchMax int
	// before runs before the jobs are enqueued, after once they are.
	before, after func(ctx context.Context, e *env, accepted []engine.Accepted) error
	// make, if set, makes the jobs in the place of the enqueue calls
	// (schedules.go's occurrences).
	make func(ctx context.Context, e *env, n int) ([]engine.Accepted, error)
}

var scenarios = []scenario{
	{name: "a", what: "job within 15 minutes", jobs: 6, interval: 1250 * time.Millisecond, kind: "ok"},
	{name: "b", what: "job parked behind a 2-hour backlog", jobs: 3, interval: time.Second, kind: "ok",
		before: backlog, after: jumpAndResume},
	{name: "c", what: "job retried once (first attempt fails)", jobs: 3, interval: time.Second, kind: "flaky"},
	{name: "d", what: "job parked by a pause, then resumed", jobs: 5, interval: time.Second, kind: "ok",
		before: pause, after: unpause},
	{name: "e", what: "as (a), enqueued 100 per call, interval 100 ms", jobs: 100, interval: 100 * time.Millisecond,
		kind: "ok", batch: true},
	{name: "f", what: "as (a), each job with a key (held by nobody else)", jobs: 6, interval: 1250 * time.Millisecond,
		kind: "ok", keyed: true},
	{name: "g", what: "as (a), on a queue with max_running 2", jobs: 6, interval: 1250 * time.Millisecond,
		kind: "ok", maxRunning: 2},
	{name: "h", what: "as (f), each key with a rate of its own (key_limits 1/1s)", jobs: 6, interval: 1250 * time.Millisecond,
		kind: "ok", keyed: true, keyLimits: []api.Limit{{Rate: api.Rate{N: 1, Per: time.Second}}}},
	{name: "i", what: "as (h), with no cap per key (key_max_running 0)", jobs: 6, interval: 1250 * time.Millisecond,
		kind: "ok", keyed: true, keyLimits: []api.Limit{{Rate: api.Rate{N: 1, Per: time.Second}}}, keyCap: slot.NoKeyCap},
	{name: "j", what: "occurrence of a schedule every 1s, made by a resume run", jobs: 6, interval: 500 * time.Millisecond,
		kind: "ok", make: occurrences},
	{name: "k", what: "as (a), waited in the waiting room (book_ahead 1: each job after the first booked as the one before starts)",
		jobs: 6, interval: 1250 * time.Millisecond, kind: "ok", bookAhead: 1, after: waited},
	{name: "l", what: "as (e), on a queue with batch_max 25: the 100 jobs start in 4 batches, one call each, 2 s apart",
		jobs: 100, interval: 2 * time.Second, kind: "ok", batch: true, batchMax: 25},
}

// batchWait is the batch_wait of sc's queue: its interval when it
// starts its jobs in batches, so that a call's jobs fill one batch.
func batchWait(sc scenario) time.Duration {
	if sc.batchMax > 1 {
		return sc.interval
	}
	return 0
}

// waited checks that every job after the first was accepted into the
// waiting room: status waiting, no slot.
func waited(_ context.Context, _ *env, acc []engine.Accepted) error {
	for i, a := range acc {
		if i > 0 && (a.Status != api.StatusWaiting || !a.SlotAt.IsZero()) {
			return fmt.Errorf("job %s is %s (slot %v), want waiting without a slot", a.JobID, a.Status, a.SlotAt)
		}
	}
	return nil
}

// backlog books the queue two hours ahead with one unbilled Take of 7,200
// one-second slots. Tickets nobody holds are harmless: the gate only asks
// that current is below the ticket starting.
func backlog(ctx context.Context, e *env, _ []engine.Accepted) error {
	const n = 7200
	_, err := e.raw.Take(ctx, engine.TakeRequest{Queue: "q", N: n, Line: n, Interval: time.Second, Now: e.clock.Now()})
	return err
}

// jumpAndResume checks the jobs were parked, moves the clock to 3.4 s
// before the first slot (past their release time, slot − 15 min) and runs
// the resume function once, as the schedule would: it releases them with
// their exact delays.
func jumpAndResume(ctx context.Context, e *env, acc []engine.Accepted) error {
	first := acc[0].SlotAt
	for _, a := range acc {
		if a.Status != job.Parked {
			return fmt.Errorf("job %s is %s, want parked", a.JobID, a.Status)
		}
		if d := a.SlotAt.Sub(e.clock.Now()); d < 2*time.Hour-time.Minute {
			return fmt.Errorf("job %s slot only %v ahead", a.JobID, d)
		}
		if a.SlotAt.Before(first) {
			first = a.SlotAt
		}
	}
	e.clock.jumpTo(first.Add(-3400 * time.Millisecond))
	var rep engine.ResumeReport
	err := e.resume.call(func() (err error) { rep, err = e.resume.eng.Resume(ctx); return err })
	if err == nil && rep.Released != len(acc) {
		err = fmt.Errorf("resume released %d jobs, want %d", rep.Released, len(acc))
	}
	return err
}

func pause(ctx context.Context, e *env, _ []engine.Accepted) error {
	return e.admin.call(func() error { _, err := e.admin.eng.Pause(ctx, "q", time.Time{}); return err })
}

func unpause(ctx context.Context, e *env, acc []engine.Accepted) error {
	for _, a := range acc {
		if a.Status != job.Parked {
			return fmt.Errorf("job %s is %s, want parked", a.JobID, a.Status)
		}
	}
	time.Sleep(time.Second)
	return e.admin.call(func() error { _, err := e.admin.eng.Unpause(ctx, "q"); return err })
}

// result is what one scenario's jobs cost in all.
type result struct {
	sc   scenario
	n    int
	bill awssim.Bill
	// resume is the part of bill the resume function spent beyond its
	// fixed run (see fixed).
	sends, receives, deletes, delivered int64
	inv                                 map[string]int
	busy                                map[string]time.Duration
	wait                                time.Duration
	// listReads are the read units resume runs spend listing the job
	// while it waits, per job: none since the due index (the resume
	// function reads a parked job once, when it is due, which the bill
	// counts), so 0; kept for the report's column.
	listReads float64
	itemSize  int
	lateness  time.Duration
	// calls are each function's DynamoDB calls (reportCalls).
	calls map[string]roleCalls
}

func (b *bench) measure(ctx context.Context, sc scenario) (result, error) {
	e, err := b.newEnv(ctx, sc.interval, slot.Config{MaxRunning: sc.maxRunning, KeyLimits: sc.keyLimits,
		KeyMaxRunning: sc.keyCap, BookAhead: sc.bookAhead, BatchMax: sc.batchMax, BatchWait: batchWait(sc)})
	if err != nil {
		return result{}, err
	}
	var wait atomic.Int64
	wctx, stop := context.WithCancel(ctx)
	done := e.work(wctx, &wait)
	finish := sync.OnceValue(func() error { stop(); return <-done })
	defer finish()

	if sc.before != nil {
		if err := sc.before(ctx, e, nil); err != nil {
			return result{}, err
		}
	}
	var acc []engine.Accepted
	spec := func(i int) job.Spec {
		sp := job.Spec{Kind: sc.kind, Payload: json.RawMessage(fmt.Sprintf(`{"to":"user-%d@example.com"}`, i))}
		if sc.keyed {
			sp.Key = fmt.Sprintf("customer-%d", i)
		}
		return sp
	}
	if sc.make != nil {
		if acc, err = sc.make(ctx, e, sc.jobs); err != nil {
			return result{}, err
		}
	} else if sc.batch {
		req := job.EnqueueRequest{Queue: "q"}
		for i := range sc.jobs {
			req.Jobs = append(req.Jobs, spec(i))
		}
		err := e.enqueue.call(func() error {
			r, err := e.enqueue.eng.Enqueue(ctx, req)
			acc = r.Jobs
			return err
		})
		if err != nil {
			return result{}, err
		}
	} else {
		for i := range sc.jobs {
			err := e.enqueue.call(func() error {
				sp := spec(i)
				r, err := e.enqueue.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &sp})
				if err == nil {
					acc = append(acc, r.Jobs...)
				}
				return err
			})
			if err != nil {
				return result{}, err
			}
		}
	}
	if sc.after != nil {
		if err := sc.after(ctx, e, acc); err != nil {
			return result{}, err
		}
	}
	ids := make([]string, len(acc))
	for i, a := range acc {
		ids[i] = a.JobID
	}
	final, err := e.waitFinal(ctx, ids, 3*time.Minute)
	if err != nil {
		return result{}, err
	}
	// Late copies and deletes settle.
	time.Sleep(1500 * time.Millisecond)
	if err := finish(); err != nil {
		return result{}, err
	}

	r := result{sc: sc, n: len(acc), inv: map[string]int{}, busy: map[string]time.Duration{}, wait: time.Duration(wait.Load()),
		calls: map[string]roleCalls{}}
	for name, ro := range map[string]*role{"enqueue": e.enqueue, "worker": e.worker, "resume": e.resume, "admin": e.admin} {
		bl := ro.billed.Bill()
		r.bill.Calls += bl.Calls
		r.bill.ReadUnits += bl.ReadUnits
		r.bill.WriteUnits += bl.WriteUnits
		r.bill.IndexWrites += bl.IndexWrites
		r.bill.FailedWrites += bl.FailedWrites
		u := ro.sqs.Usage()
		r.sends += u.SendCalls
		r.delivered += u.Received
		r.deletes += u.DeleteCalls
		r.inv[name], r.busy[name] = ro.inv, ro.busy
		counts := ro.calls.Counts()
		r.calls[name] = counts
		if b.calls != nil {
			for _, op := range slices.Sorted(maps.Keys(counts)) {
				fmt.Fprintf(b.calls, "  %s %s: %d calls, %d failed conditions\n", name, op, counts[op].Calls, counts[op].CondFailed)
			}
		}
	}
	// Receives: one per worker invocation, as the event source receives a
	// batch and invokes the function with it. Empty polls are fixed cost.
	r.receives = int64(e.worker.inv)
	for _, j := range final {
		if j.Status != job.Succeeded {
			return result{}, fmt.Errorf("job %s ended %s", j.ID, j.Status)
		}
		r.lateness = max(r.lateness, j.StartedAt.Sub(j.SlotAt))
	}
	// Item size, from the stored record, and the minutes each job waited.
	it, err := b.cl.DB.GetItem(ctx, jobItemKey(e.name, ids[0]))
	if err == nil {
		r.itemSize = awssim.ItemSize(it.Item)
	}
	return r, nil
}

// fixed is what one resume run costs when it has nothing to do, on a
// table whose queues are all idle: the price of the schedule, paid
// whether jobs come or not.
type fixed struct {
	queues int
	bill   awssim.Bill
	busy   time.Duration
}

// idleQueues are the numbers of idle queues the fixed cost is measured
// with: one (what a scenario's runs are charged less) and many, to show
// what an idle queue adds to a run.
var idleQueues = []int{1, 50}

// fixedResume measures the resume runs of a table of n idle queues,
// created unbilled.
func (b *bench) fixedResume(ctx context.Context, n int) (fixed, error) {
	e, err := b.newEnv(ctx, time.Second, slot.Config{})
	if err != nil {
		return fixed{}, err
	}
	create := engine.New(engine.Options{State: e.raw, Transport: e.enqueue.tr, Now: e.clock.Now, Lead: costLead})
	for i := 1; i < n; i++ {
		if _, err := create.CreateQueue(ctx, fmt.Sprintf("q%d", i), slot.Config{Interval: time.Second, Skew: b.skew}); err != nil {
			return fixed{}, err
		}
	}
	const runs = 5
	for range runs {
		if err := e.resume.call(func() error { _, err := e.resume.eng.Resume(ctx); return err }); err != nil {
			return fixed{}, err
		}
	}
	bl := e.resume.billed.Bill()
	return fixed{
		queues: n,
		bill:   awssim.Bill{Calls: bl.Calls / runs, ReadUnits: bl.ReadUnits / runs, WriteUnits: bl.WriteUnits / runs},
		busy:   e.resume.busy / runs,
	}, nil
}

type throughput struct {
	single, batch []float64 // jobs per second, one per run
}

// throughput enqueues on an unmetered store (no image reads): 40 single
// calls, and one call of 100 jobs, per run, each run on a fresh SQS queue.
func (b *bench) throughput(ctx context.Context, runs int) (throughput, error) {
	var tp throughput
	for range runs {
		for _, batch := range []bool{false, true} {
			e, err := b.newEnv(ctx, time.Second, slot.Config{})
			if err != nil {
				return tp, err
			}
			eng := engine.New(engine.Options{State: e.raw, Transport: e.enqueue.tr, NoAutoCreate: true, Lead: costLead})
			t0 := time.Now()
			n := 0
			if batch {
				req := job.EnqueueRequest{Queue: "q"}
				for i := range 100 {
					req.Jobs = append(req.Jobs, job.Spec{Kind: "ok", Payload: json.RawMessage(fmt.Sprint(i))})
				}
				if _, err := eng.Enqueue(ctx, req); err != nil {
					return tp, err
				}
				n = 100
				tp.batch = append(tp.batch, float64(n)/time.Since(t0).Seconds())
				continue
			}
			for i := range 40 {
				sp := job.Spec{Kind: "ok", Payload: json.RawMessage(fmt.Sprint(i))}
				if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &sp}); err != nil {
					return tp, err
				}
				n++
			}
			tp.single = append(tp.single, float64(n)/time.Since(t0).Seconds())
		}
	}
	return tp, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
