package dynamostore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// TestAdminInFlight is the engine's admin simulation (TestGuaranteeAdmin)
// on DynamoDB Local, with real concurrency and real time: a producer of
// keyed, unkeyed, scheduled and failing jobs, workers with duplicate
// deliveries, the resume schedule, and an admin who pauses, pauses until,
// resumes, purges, deletes and creates again, cancels and configures at
// random moments, all at once. Checked per generation: nothing starts
// after a purge, cancel, delete or pause that covered it returned, runs
// of one key never overlap (across generations too), no ticket goes to
// two jobs, the spacing window, max_running, and nothing lost.
func TestAdminInFlight(t *testing.T) {
	for _, seed := range []uint64{1, 3} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) { runAdminInFlight(t, seed) })
	}
}

// aRun is one run of a job's handler.
type aRun struct {
	ID, Key    string
	Gen        int64
	Ticket     int64
	Attempt    int
	Gate       time.Time // StartedAt: the start the gate judged
	Begin, End time.Time
}

type aOp struct {
	kind         string
	gen          int64
	called, done time.Time
	until        time.Time
	purged       int64
	jobID        string
}

func runAdminInFlight(t *testing.T, seed uint64) {
	ctx := t.Context()
	sim := newLocalSim(t, memstore.TransportOptions{
		VisibilityTimeout: time.Second, Jitter: 20 * time.Millisecond, DuplicateRate: 0.2, Seed: seed,
	})
	st := sim.store
	racer := &adminRacer{State: st}
	var mu sync.Mutex
	var runs []aRun
	runner := runFunc(func(ctx context.Context, j *job.Job, _ slot.Config) error {
		var p struct {
			Ms   int `json:"ms"`
			Fail int `json:"fail"`
		}
		_ = json.Unmarshal(j.Payload, &p)
		r := aRun{ID: j.ID, Key: j.Key, Gen: j.Gen, Ticket: j.Ticket, Attempt: j.Attempt, Gate: j.StartedAt, Begin: time.Now()}
		time.Sleep(time.Duration(p.Ms) * time.Millisecond)
		r.End = time.Now()
		mu.Lock()
		runs = append(runs, r)
		mu.Unlock()
		if j.Attempt <= p.Fail {
			return errors.New("fails on purpose")
		}
		return nil
	})
	tr := sim.tr
	// A lead that covers DynamoDB Local's latency on a loaded host, so
	// most jobs start at their slots (those that do not give them up).
	const lead = 300 * time.Millisecond
	eng := engine.New(engine.Options{State: racer, Transport: tr, Runner: runner, NoAutoCreate: true, Lease: 5 * time.Second, Lead: lead})
	const queue = "adm"
	cfg := slot.Config{Interval: 100 * time.Millisecond, Skew: 20 * time.Millisecond, MaxRunning: 3, MaxAttempts: 3,
		Backoff: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	q, err := eng.CreateQueue(ctx, queue, cfg)
	if err != nil {
		t.Fatal(err)
	}
	minIv, maxSkew := map[int64]time.Duration{q.Gen: cfg.Interval}, map[int64]time.Duration{q.Gen: cfg.Skew}
	gen := func() int64 {
		q, err := st.GetQueue(ctx, queue)
		if err != nil {
			t.Errorf("get queue: %v", err)
		}
		return q.Gen
	}

	sim.work(8, eng, nil)
	sim.resumeEvery(200*time.Millisecond, eng, nil)

	// The producer.
	var accepted []string
	var wg sync.WaitGroup
	wg.Go(func() {
		rnd := rand.New(rand.NewPCG(seed, 1))
		for n := 0; n < 80; {
			req := job.EnqueueRequest{Queue: queue}
			for range 1 + rnd.IntN(3) {
				sp := job.Spec{ID: fmt.Sprintf("p%03d", n), Kind: "sim",
					Payload: json.RawMessage(fmt.Sprintf(`{"ms":%d,"fail":%d}`, 10+rnd.IntN(150), max(0, rnd.IntN(6)-3)))}
				if rnd.IntN(3) > 0 {
					sp.Key = fmt.Sprintf("k%d", rnd.IntN(3))
				}
				if rnd.IntN(8) == 0 {
					nb := time.Now().Add(time.Duration(rnd.IntN(3000)) * time.Millisecond)
					sp.NotBefore = &nb
				}
				req.Jobs = append(req.Jobs, sp)
				n++
			}
			r, err := eng.Enqueue(ctx, req)
			switch {
			case err == nil:
				mu.Lock()
				for _, a := range r.Jobs {
					accepted = append(accepted, a.JobID)
				}
				mu.Unlock()
			case !errors.Is(err, engine.ErrQueueNotFound):
				t.Errorf("enqueue: %v", err)
			}
			time.Sleep(time.Duration(50+rnd.IntN(200)) * time.Millisecond)
		}
	})

	// The admin: at random moments, and from inside the engine's store
	// calls (racer), so that operations land between two steps of a
	// worker or a resume round.
	var ops []aOp
	var opMu sync.Mutex // one operation at a time; guards ops, rnd, cfg
	rnd := rand.New(rand.NewPCG(seed, 2))
	do := func(kind, id string) {
		op := aOp{kind: kind, gen: gen(), called: time.Now()}
		var err error
		switch op.kind {
		case "pause":
			_, err = eng.Pause(ctx, queue, time.Time{})
		case "pause-until":
			op.until = time.Now().Add(time.Duration(500+rnd.IntN(1500)) * time.Millisecond)
			_, err = eng.Pause(ctx, queue, op.until)
		case "resume":
			_, err = eng.Unpause(ctx, queue)
		case "purge":
			if _, err = eng.Purge(ctx, queue); err == nil {
				var q engine.Queue
				q, err = eng.Queue(ctx, queue)
				op.purged = q.State.Purged
			}
		case "delete":
			if _, err = eng.DeleteQueue(ctx, queue); err == nil {
				op.done = time.Now()
				ops = append(ops, op)
				q, err := eng.CreateQueue(ctx, queue, cfg)
				if err != nil {
					t.Errorf("create again: %v", err)
					return
				}
				minIv[q.Gen], maxSkew[q.Gen] = cfg.Interval, cfg.Skew
				return
			}
		case "cancel":
			if id == "" {
				mu.Lock()
				if len(accepted) > 0 {
					id = accepted[rnd.IntN(len(accepted))]
				}
				mu.Unlock()
			}
			if id == "" {
				return
			}
			op.jobID = id
			_, err = eng.CancelJob(ctx, job.Ref{Queue: queue, ID: id})
			if errors.Is(err, engine.ErrNotWaiting) || errors.Is(err, engine.ErrJobNotFound) {
				return
			}
		case "configure":
			cfg.Interval = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}[rnd.IntN(3)]
			cfg.Skew = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}[rnd.IntN(2)]
			cfg.MaxRunning = 2 + rnd.IntN(2)
			_, err = eng.Configure(ctx, queue, cfg)
			minIv[op.gen] = min(minIv[op.gen], cfg.Interval)
			maxSkew[op.gen] = max(maxSkew[op.gen], cfg.Skew)
		}
		if err != nil {
			t.Errorf("%s: %v", op.kind, err)
			return
		}
		op.done = time.Now()
		ops = append(ops, op)
	}
	race := func(id string) {
		if !opMu.TryLock() {
			return // an operation is under way: this call may be its own
		}
		defer opMu.Unlock()
		if racer.done || racer.n >= 8 || rnd.Float64() >= 0.1 {
			return
		}
		racer.n++
		kinds := []string{"purge", "delete", "pause", "pause", "cancel", "cancel", "cancel"}
		do(kinds[rnd.IntN(len(kinds))], id)
	}
	racer.race.Store(&race)
	kinds := []string{"pause", "pause", "pause-until", "resume", "resume", "resume", "resume", "purge", "delete",
		"cancel", "cancel", "cancel", "configure", "configure"}
	pace := rand.New(rand.NewPCG(seed, 3))
	for range 20 {
		time.Sleep(time.Duration(200+pace.IntN(600)) * time.Millisecond)
		opMu.Lock()
		do(kinds[rnd.IntN(len(kinds))], "")
		opMu.Unlock()
	}
	wg.Wait()
	opMu.Lock()
	racer.done = true // no more operations from inside store calls
	do("resume", "")
	opMu.Unlock()
	mu.Lock()
	chaos := len(runs)
	mu.Unlock()

	// A calm tail: once the admin is done, the queue it leaves works. Its
	// jobs must all succeed, and they give the checks below runs in the
	// last generation however many the random phase left (a phase with an
	// early delete or a long pause on a slow host runs few).
	var tail []string
	for i := range 12 {
		sp := job.Spec{ID: fmt.Sprintf("t%02d", i), Kind: "sim", Payload: json.RawMessage(`{"ms":20}`)}
		if i%2 == 0 {
			sp.Key = fmt.Sprintf("k%d", i%3)
		}
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: queue, Jobs: []job.Spec{sp}}); err != nil {
			t.Fatalf("enqueue the tail: %v", err)
		}
		tail = append(tail, sp.ID)
	}

	// Every accepted job ends: final, or expired with a deleted generation.
	cur := gen()
	mu.Lock()
	ids := append(slices.Clone(accepted), tail...)
	mu.Unlock()
	for deadline := time.Now().Add(testenv.Patience); ; time.Sleep(200 * time.Millisecond) {
		left := []string{}
		for _, id := range ids {
			j, err := st.GetJob(ctx, job.Ref{Queue: queue, ID: id})
			if err == nil && (!j.Status.Final() || j.Gen != cur && j.ExpiresAt.IsZero()) {
				left = append(left, fmt.Sprintf("%s %s %s gen %d", id, j.Status, j.ParkReason, j.Gen))
			} else if err != nil && !errors.Is(err, engine.ErrJobNotFound) {
				t.Fatal(err)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs not ended after %v: %v", len(left), len(ids), testenv.Patience, left)
		}
	}
	// Duplicates still on their way start nothing: every message sent
	// is handled before the runs are judged.
	testenv.WaitFor(t, "every message handled", func() bool { return tr.Pending() == 0 })
	sim.stop()

	mu.Lock()
	defer mu.Unlock()
	opMu.Lock()
	defer opMu.Unlock()
	slices.SortFunc(runs, func(a, b aRun) int { return a.Begin.Compare(b.Begin) })
	// Nothing starts where an operation said nothing may: a start the
	// gate reserved (Gate, the record's started_at) before an operation
	// returned may come up to a lead after it, not later.
	for i, op := range ops {
		end := op.until
		if op.kind == "pause" || op.kind == "pause-until" {
			for _, next := range ops[i+1:] {
				if next.kind == "resume" || next.kind == "delete" || next.kind == "pause" || next.kind == "pause-until" {
					if end.IsZero() || next.called.Before(end) {
						end = next.called
					}
					break
				}
			}
		}
		for _, r := range runs {
			if r.Gen != op.gen || !r.Gate.After(op.done.Add(lead)) {
				continue
			}
			bad := op.kind == "purge" && r.Ticket <= op.purged || op.kind == "cancel" && r.ID == op.jobID || op.kind == "delete" ||
				(op.kind == "pause" || op.kind == "pause-until") && (end.IsZero() || r.Gate.Before(end))
			if bad {
				t.Errorf("%s (ticket %d, attempt %d) passed the gate at %v, after the %s returned at %v",
					r.ID, r.Ticket, r.Attempt, r.Gate.Format("15:04:05.000"), op.kind, op.done.Format("15:04:05.000"))
			}
		}
	}
	// Runs of one key never overlap, across generations too.
	last := map[string]aRun{}
	for _, r := range runs {
		if r.Key == "" {
			continue
		}
		if p, ok := last[r.Key]; ok && r.Begin.Before(p.End) {
			t.Errorf("key %s: %s began %v before %s ended", r.Key, r.ID, p.End.Sub(r.Begin), p.ID)
		}
		if p, ok := last[r.Key]; !ok || r.End.After(p.End) {
			last[r.Key] = r
		}
	}
	// Per generation: tickets, the spacing window by the gate's times,
	// max_running.
	byGen := map[int64][]aRun{}
	for _, r := range runs {
		byGen[r.Gen] = append(byGen[r.Gen], r)
	}
	for g, rs := range byGen {
		owner := map[int64]string{}
		for _, r := range rs {
			if id, ok := owner[r.Ticket]; ok && id != r.ID {
				t.Errorf("generation %d: ticket %d went to %s and %s", g, r.Ticket, id, r.ID)
			}
			owner[r.Ticket] = r.ID
		}
		gates := slices.Clone(rs)
		slices.SortFunc(gates, func(a, b aRun) int { return a.Gate.Compare(b.Gate) })
		top := 0
		u := func(k int) time.Time { return gates[k].Gate.Add(-time.Duration(k) * minIv[g]) }
		for j := 1; j < len(gates); j++ {
			if u(j).Before(u(top).Add(-maxSkew[g])) {
				t.Errorf("generation %d: gates %d and %d are %v apart; want at least %d·%v − %v", g, top, j,
					gates[j].Gate.Sub(gates[top].Gate), j-top, minIv[g], maxSkew[g])
				break
			}
			if u(j).After(u(top)) {
				top = j
			}
		}
		spans := make([]timeline.Span, len(rs))
		for i, r := range rs {
			spans[i] = timeline.Span{Begin: r.Begin, End: r.End}
		}
		if n := timeline.MostAtOnce(spans); n > 3 {
			t.Errorf("generation %d: %d runs at once; max_running was at most 3", g, n)
		}
	}
	kinds2 := map[string]int{}
	for _, op := range ops {
		kinds2[op.kind]++
	}
	for _, id := range tail {
		j, err := st.GetJob(ctx, job.Ref{Queue: queue, ID: id})
		if err != nil || j.Status != job.Succeeded {
			t.Errorf("tail job %s after the admin was done: %v %v; want succeeded", id, j.Status, err)
		}
	}
	t.Logf("%d runs (%d before the tail) of %d jobs in %d generations; operations %v, %d from inside store calls",
		len(runs), chaos, len(ids), len(byGen), kinds2, racer.n)
}

// adminRacer wraps the store: a call where a worker or the resume
// function is between two steps (a job written parked or moved, a lane
// read, a take) may first let an admin operation land (race).
type adminRacer struct {
	engine.State
	race atomic.Pointer[func(jobID string)]
	// Under the admin's lock: operations made from inside store calls,
	// and whether to make no more.
	n    int
	done bool
}

func (r *adminRacer) maybe(jobID string) {
	if f := r.race.Load(); f != nil {
		(*f)(jobID)
	}
}

func (r *adminRacer) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if j.Status == job.Parked || j.Status != from.Status {
		r.maybe(j.ID)
	}
	return r.State.UpdateJob(ctx, j, from)
}

func (r *adminRacer) GetLane(ctx context.Context, queue, key string) (slot.Lane, error) {
	r.maybe("")
	return r.State.GetLane(ctx, queue, key)
}

func (r *adminRacer) Take(ctx context.Context, req engine.TakeRequest) (engine.Taken, error) {
	r.maybe("")
	return r.State.Take(ctx, req)
}
