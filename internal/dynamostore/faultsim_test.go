package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// TestFaults runs the engine on this store, on DynamoDB Local, through a
// faultyDB that fails a steady share of all requests — transaction
// conflicts, throttling, 5xx answers and lost answers — while producers
// enqueue, workers start jobs, an admin pauses the queue and rewrites its
// config (transactions on the hot item), and the schedule's resume runs,
// all at once, none waiting for another. Each call meets at most two faults, which
// the SDK (three attempts) and the store (conflict retries) must absorb:
// no caller may see an error. Then it checks the guarantees of docs/guarantees.md
// that a wrongly retried write would break: nothing lost (5), single
// start (4), tickets unique (1), spacing in window form (3), and pause
// (6).
//
// The transport is memstore's, with duplicate deliveries, so only the
// store's path meets faults.
func TestFaults(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			res := runFaults(t, seed)
			checkFaults(t, res)
		})
	}
}

const (
	fInterval  = 100 * time.Millisecond
	fSkew      = 20 * time.Millisecond
	fProducers = 3
	fPerProd   = 10
	fWorkers   = 4
	// fRate is each kind's share of the requests it applies to.
	fRate = 0.05
)

// failMode is how a job's runs go, by its id: most succeed, some fail
// their first attempt, some every attempt (the queue allows two).
func failMode(id string) string {
	var n int
	fmt.Sscanf(id[len(id)-2:], "%d", &n)
	switch {
	case n%7 == 3:
		return "once"
	case n%9 == 5:
		return "always"
	}
	return ""
}

// fStart is one run of a job's handler.
type fStart struct {
	ID      string
	Ticket  int64
	Attempt int
	Gate    time.Time // StartedAt: the time the gate judged
	SlotAt  time.Time
	// OutOfLine: a scheduled or detached ticket (a retry whose backoff
	// put it past the line's next slot), which starts by its time, not
	// by its ticket.
	OutOfLine bool
}

// takeRec is one Take the engine made.
type takeRec struct {
	first, n int64
	ok       bool
}

// recState records the takes an engine makes.
type recState struct {
	engine.State
	mu    sync.Mutex
	takes []takeRec
}

func (r *recState) Take(ctx context.Context, req engine.TakeRequest) (engine.Taken, error) {
	tk, err := r.State.Take(ctx, req)
	r.mu.Lock()
	r.takes = append(r.takes, takeRec{first: tk.First, n: int64(req.N), ok: err == nil})
	r.mu.Unlock()
	return tk, err
}

type faultResult struct {
	faults    *faultyDB
	starts    []fStart // in gate order
	accepted  map[string]int64
	cancelled map[string]bool
	final     map[string]job.Job
	state     slot.State
	takes     []takeRec
	pausedAt  time.Time // Pause returned
	until     time.Time // the pause's end
	callErrs  []string  // errors of Enqueue, Pause, Resume, Configure, CancelJob
	workErrs  int
	elapsed   time.Duration
}

func runFaults(t *testing.T, seed uint64) faultResult {
	began := time.Now()
	ctx := t.Context()
	sim := newLocalSim(t, memstore.TransportOptions{
		VisibilityTimeout: 300 * time.Millisecond, Jitter: 20 * time.Millisecond, DuplicateRate: 0.2, Seed: seed,
	})
	api, table, tr := sim.api, sim.table, sim.tr
	f := newFaultyDB(api, seed, 2,
		faultRule{Op: "TransactWriteItems", Fault: faultConflict, Rate: 0.3},
		faultRule{Op: "UpdateItem", If: onStateItem, Fault: faultConflict, Rate: fRate},
		faultRule{Fault: faultConflict, Rate: fRate},
		faultRule{Fault: faultThrottle, Rate: fRate},
		faultRule{Fault: faultServer, Rate: fRate},
		faultRule{Fault: faultLost, Rate: fRate},
	)
	rec := &recState{State: dynamostore.New(f, table, dynamostore.Options{})}
	// clean reads the outcome without faults.
	clean := sim.store

	res := faultResult{faults: f, accepted: map[string]int64{}, cancelled: map[string]bool{}}
	var mu sync.Mutex
	callErr := func(what string, err error) {
		mu.Lock()
		res.callErrs = append(res.callErrs, fmt.Sprintf("%s: %v", what, err))
		mu.Unlock()
	}
	runner := runFunc(func(ctx context.Context, j *job.Job, _ slot.Config) error {
		mu.Lock()
		res.starts = append(res.starts, fStart{ID: j.ID, Ticket: j.Ticket, Attempt: j.Attempt, Gate: j.StartedAt, SlotAt: j.SlotAt, OutOfLine: j.Scheduled || j.Detached})
		mu.Unlock()
		switch failMode(j.ID) {
		case "always":
			return errors.New("always fails")
		case "once":
			if j.Attempt == 1 {
				return errors.New("fails once")
			}
		}
		return nil
	})
	newEngine := func() *engine.Engine {
		return engine.New(engine.Options{State: rec, Transport: tr, Runner: runner, NoAutoCreate: true})
	}
	const queue = "faults"
	cfg := slot.Config{Interval: fInterval, Skew: fSkew, MaxAttempts: 2, Backoff: fInterval, MaxBackoff: 2 * fInterval}
	f.mu.Lock()
	saved := f.rules
	f.rules = nil // the queue exists before the faults begin
	f.mu.Unlock()
	if _, err := newEngine().CreateQueue(ctx, queue, cfg); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.rules = saved
	f.mu.Unlock()

	// Workers, and the schedule's resume every 150 ms.
	var workErrs int
	sim.work(fWorkers, newEngine(), func(job.Envelope, error) {
		mu.Lock()
		workErrs++
		mu.Unlock()
	})
	sim.resumeEvery(150*time.Millisecond, newEngine(), func(err error) { callErr("resume", err) })

	// Producers, an admin who pauses once and rewrites the config (the
	// same one) in transactions, and a canceller, all at once.
	var wg sync.WaitGroup
	for p := range fProducers {
		eng := newEngine()
		rnd := rand.New(rand.NewPCG(seed, uint64(p)))
		wg.Go(func() {
			for n := 0; n < fPerProd; {
				k := min(fPerProd-n, 1+rnd.IntN(3))
				req := job.EnqueueRequest{Queue: queue}
				for i := range k {
					req.Jobs = append(req.Jobs, job.Spec{ID: fmt.Sprintf("p%d-%02d", p, n+i), Kind: "sim"})
				}
				r, err := eng.Enqueue(ctx, req)
				if err != nil {
					callErr(fmt.Sprintf("producer %d enqueue", p), err)
				} else {
					mu.Lock()
					for _, a := range r.Jobs {
						res.accepted[a.JobID] = a.Ticket
					}
					mu.Unlock()
				}
				n += k
				time.Sleep(time.Duration(100+rnd.IntN(200)) * time.Millisecond)
			}
		})
	}
	admin := newEngine()
	wg.Go(func() {
		time.Sleep(800 * time.Millisecond)
		until := time.Now().Add(500 * time.Millisecond)
		if _, err := admin.Pause(ctx, queue, until); err != nil {
			callErr("pause", err)
			return
		}
		mu.Lock()
		res.pausedAt, res.until = time.Now(), until
		mu.Unlock()
	})
	wg.Go(func() {
		for range 6 {
			time.Sleep(300 * time.Millisecond)
			if _, err := admin.Configure(ctx, queue, cfg); err != nil {
				callErr("configure", err)
			}
		}
	})
	wg.Go(func() {
		// Cancel one job of each producer a little after it was enqueued.
		time.Sleep(600 * time.Millisecond)
		for p := range fProducers {
			k := job.Ref{Queue: queue, ID: fmt.Sprintf("p%d-01", p)}
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				mu.Lock()
				_, ok := res.accepted[k.ID]
				mu.Unlock()
				if ok {
					break
				}
			}
			_, err := admin.CancelJob(ctx, k)
			switch {
			case err == nil:
				mu.Lock()
				res.cancelled[k.ID] = true
				mu.Unlock()
			case !errors.Is(err, engine.ErrNotWaiting):
				callErr("cancel "+k.ID, err)
			}
		}
	})
	wg.Wait()

	// Wait until every accepted job is final.
	deadline := time.Now().Add(testenv.Patience)
	for {
		mu.Lock()
		ids := make([]string, 0, len(res.accepted))
		for id := range res.accepted {
			ids = append(ids, id)
		}
		mu.Unlock()
		left := 0
		for _, id := range ids {
			j, err := clean.GetJob(ctx, job.Ref{Queue: queue, ID: id})
			if err != nil || !j.Status.Final() {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d of %d jobs not final after %v", left, len(ids), testenv.Patience)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Let duplicate deliveries still on their way reach the workers (none
	// may start anything): every message sent is handled.
	testenv.WaitFor(t, "every message handled", func() bool { return tr.Pending() == 0 })
	sim.stop()

	res.final = map[string]job.Job{}
	for id := range res.accepted {
		j, err := clean.GetJob(ctx, job.Ref{Queue: queue, ID: id})
		if err != nil {
			t.Fatalf("get job %s: %v", id, err)
		}
		res.final[id] = j
	}
	q, err := clean.GetQueue(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	res.state = q.State
	rec.mu.Lock()
	res.takes = slices.Clone(rec.takes)
	rec.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	res.workErrs = workErrs
	slices.SortStableFunc(res.starts, func(a, b fStart) int { return a.Gate.Compare(b.Gate) })
	res.elapsed = time.Since(began)
	return res
}

func checkFaults(t *testing.T, res faultResult) {
	t.Helper()
	f := res.faults
	t.Logf("faults injected: %s", f)
	for _, e := range res.callErrs {
		t.Errorf("a call failed under faults it should absorb: %s", e)
	}
	// The run must have met every kind of fault, on the hot item too.
	for _, k := range []faultKind{faultConflict, faultThrottle, faultServer, faultLost} {
		if f.Injected("", k) == 0 {
			t.Errorf("no %s injected", k)
		}
	}
	if f.Injected("UpdateItem", faultConflict) == 0 || f.Injected("PutItem", faultConflict) == 0 {
		t.Errorf("conflicts injected into UpdateItem %d, PutItem %d: want both", f.Injected("UpdateItem", faultConflict), f.Injected("PutItem", faultConflict))
	}
	if len(res.accepted) != fProducers*fPerProd {
		t.Errorf("%d jobs accepted, want %d", len(res.accepted), fProducers*fPerProd)
	}

	// Single start: one run per (job, attempt).
	runs := map[string]int{}
	for _, s := range res.starts {
		k := fmt.Sprintf("%s#%d", s.ID, s.Attempt)
		if runs[k]++; runs[k] == 2 {
			t.Errorf("single start: job %s attempt %d started twice", s.ID, s.Attempt)
		}
	}

	// Nothing lost: every accepted job is final, in the state its runs
	// (and the cancels that succeeded) call for.
	for id := range res.accepted {
		j := res.final[id]
		want := job.Succeeded
		switch {
		case res.cancelled[id]:
			want = job.Cancelled
		case failMode(id) == "always":
			want = job.Failed
		}
		if j.Status != want {
			t.Errorf("nothing lost: job %s is %s (attempt %d), want %s", id, j.Status, j.Attempt, want)
		}
		if want == job.Cancelled {
			if runs[id+"#1"]+runs[id+"#2"] != 0 {
				t.Errorf("cancelled job %s ran", id)
			}
			continue
		}
		attempts := 1
		if failMode(id) != "" {
			attempts = 2
		}
		for a := 1; a <= attempts; a++ {
			if n := runs[fmt.Sprintf("%s#%d", id, a)]; n != 1 {
				t.Errorf("job %s attempt %d ran %d times, want once", id, a, n)
			}
		}
	}

	// Tickets: the answers' tickets are unique; the takes that answered
	// hold disjoint ranges; the counter moved by each take once (a take
	// that failed may or may not have landed); started tickets rise in
	// gate order.
	byTicket := map[int64]string{}
	for id, tk := range res.accepted {
		if other, ok := byTicket[tk]; ok {
			t.Errorf("tickets: %s and %s were both given ticket %d", other, id, tk)
		}
		byTicket[tk] = id
	}
	var ok []takeRec
	var sumOK, sumAll int64
	for _, tk := range res.takes {
		sumAll += tk.n
		if tk.ok {
			ok = append(ok, tk)
			sumOK += tk.n
		}
	}
	slices.SortFunc(ok, func(a, b takeRec) int { return int(a.first - b.first) })
	for i := 1; i < len(ok); i++ {
		if ok[i].first < ok[i-1].first+ok[i-1].n {
			t.Errorf("tickets: takes answered overlapping ranges %d+%d and %d+%d", ok[i-1].first, ok[i-1].n, ok[i].first, ok[i].n)
		}
	}
	if n := len(ok); n > 0 && ok[n-1].first+ok[n-1].n-1 > res.state.Ticket {
		t.Errorf("tickets: a take answered %d–%d, past the counter %d", ok[n-1].first, ok[n-1].first+ok[n-1].n-1, res.state.Ticket)
	}
	if res.state.Ticket < sumOK {
		t.Errorf("tickets: the counter is %d after takes that answered %d tickets", res.state.Ticket, sumOK)
	}
	// A take whose answer was lost, and which another write of the state
	// item overtook before the SDK's retry, applies twice (see
	// TestTakeRetryAfterAnotherWrite): its first range goes unused. That
	// wastes tickets but hands none out twice; it is counted, not failed.
	// The line's tickets start by their slots: none before the slot it
	// was told (the tickets of one moment in any order, a late worker
	// within its room after later slots); a ticket out of line (a retry
	// scheduled by its backoff) starts by its time (docs/algorithm.md).
	wasted := max(0, res.state.Ticket-sumAll)
	for _, s := range res.starts {
		if !s.OutOfLine && s.Gate.Before(s.SlotAt) {
			t.Errorf("order: line ticket %d (%s) passed the gate for %v, before its slot %v", s.Ticket, s.ID, s.Gate, s.SlotAt)
		}
	}

	// Spacing, in window form over the gate times.
	at := make([]time.Time, len(res.starts))
	for i, s := range res.starts {
		at[i] = s.Gate
	}
	if v := timeline.Violations(at, fInterval, fSkew); v > 0 {
		t.Errorf("spacing: %d starts break start_j − start_i ≥ (j−i)·%v − %v", v, fInterval, fSkew)
	}

	// Pause: no gate passed between Pause's return and the pause's end.
	if res.pausedAt.IsZero() {
		t.Error("the queue was never paused")
	}
	for _, s := range res.starts {
		if !s.Gate.Before(res.pausedAt) && s.Gate.Before(res.until) {
			t.Errorf("pause: job %s passed the gate at %v, paused from %v until %v", s.ID, s.Gate, res.pausedAt, res.until)
		}
	}
	t.Logf("%d jobs, %d runs, %d takes (%d tickets, counter %d: %d applied twice); %d work errors (redelivered); %v",
		len(res.accepted), len(res.starts), len(res.takes), sumAll, res.state.Ticket, wasted, res.workErrs, res.elapsed.Round(time.Millisecond))
}

// runFunc is an engine.Runner made of a function.
type runFunc func(ctx context.Context, j *job.Job, cfg slot.Config) error

func (f runFunc) Run(ctx context.Context, j *job.Job, cfg slot.Config) error { return f(ctx, j, cfg) }
