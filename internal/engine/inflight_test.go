package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Admin operations against work in flight: each test puts one admin
// operation exactly where a worker or the resume function is between two
// of its steps, and checks that the operation wins.

// keyOverlap says which two runs of one key overlap, across generations
// too, or returns "".
func keyOverlap(runs []run) string {
	open := map[string]run{}
	for _, r := range runs { // in begin order
		if r.Key == "" {
			continue
		}
		if prev, ok := open[r.Key]; ok && r.Begin.Before(prev.End) {
			return fmt.Sprintf("key %s: job %s began %v before job %s ended", r.Key, r.ID, prev.End.Sub(r.Begin), prev.ID)
		}
		if prev, ok := open[r.Key]; !ok || r.End.After(prev.End) {
			open[r.Key] = r
		}
	}
	return ""
}

func laneSpec(id, key string, d time.Duration) job.Spec {
	return job.Spec{ID: id, Kind: "lane", Key: key, Payload: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, d.Milliseconds()))}
}

// A job holds key K on queue q when q is deleted and created again: the
// new queue's jobs of K do not run while it does, and its end hands
// nothing of the new queue on (before generations were checked where an
// attempt ends, its end started the new queue's lane afresh as its own,
// dropping the new holder, and the next job of K ran beside it).
func TestDeleteKeepsKeysApart(t *testing.T) {
	inSim(t, simOptions{Workers: 4, Seed: 31}, func(t *testing.T, s *sim) {
		const iv = 100 * time.Millisecond
		ctx := context.Background()
		cfg := slot.Config{Interval: iv, Skew: time.Millisecond}
		s.createQueue("q", cfg)
		enq := func(sp job.Spec) {
			t.Helper()
			if _, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &sp}); err != nil {
				t.Fatal(err)
			}
		}
		enq(laneSpec("a", "K", 5*time.Second))
		time.Sleep(time.Second) // a runs, holding K
		if _, err := s.eng.DeleteQueue(ctx, "q"); err != nil {
			t.Fatal(err)
		}
		s.createQueue("q", cfg)
		enq(laneSpec("b", "K", 10*time.Second))
		time.Sleep(5 * time.Second) // a ends
		enq(laneSpec("c", "K", time.Second))
		s.waitFinishedOrDump("q", time.Hour)

		runs := s.runsOf("q")
		if len(runs) != 3 {
			t.Fatalf("runs %+v, want a, b and c once each", runs)
		}
		if v := keyOverlap(runs); v != "" {
			t.Fatal(v)
		}
		if v := laneViolation(runs[1:]); v != "" || runs[1].ID != "b" {
			t.Fatalf("the new queue's runs %+v: %s", runs[1:], v)
		}
		q, err := s.store.GetQueue(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		if q.State.Ticket != 2 {
			t.Errorf("the new queue handed out %d tickets, want 2 (b and c)", q.State.Ticket)
		}
	})
}

// An attempt of a deleted queue that fails takes no ticket of the queue
// created again under the name: the job ends with its generation.
func TestDeletedQueueRetryTakesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started, release := make(chan struct{}), make(chan struct{})
		b := newWorkBench(t, engine.Options{Runner: runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
			if j.ID != "j1" {
				return nil
			}
			close(started)
			<-release
			return errors.New("boom")
		})}, nil)
		ctx := context.Background()
		cfg := slot.Config{Interval: time.Second, MaxAttempts: 3}
		env := b.enqueue("q", cfg)
		done := make(chan error, 1)
		go func() { done <- b.eng.Work(ctx, env) }()
		<-started
		if _, err := b.eng.DeleteQueue(ctx, "q"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.CreateQueue(ctx, "q", cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &job.Spec{ID: "n1", Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("Work: %v", err)
		}
		q, err := b.store.GetQueue(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		if q.State.Ticket != 1 {
			t.Errorf("the new queue handed out %d tickets, want 1 (n1): the old attempt's retry took one", q.State.Ticket)
		}
		if j, err := b.store.GetJob(ctx, job.Ref{Queue: "q", ID: "j1"}); !errors.Is(err, engine.ErrJobNotFound) {
			t.Errorf("the deleted queue's j1 after its failed attempt: %s ticket %d, want expired", j.Status, j.Ticket)
		}
	})
}

// adminHook runs a hook once, before the first call of a method that
// when matches, then makes the call.
type adminHook struct {
	engine.State
	mu   sync.Mutex
	when func(op string, j *job.Job) bool
	hook func()
}

func (h *adminHook) fire(op string, j *job.Job) {
	h.mu.Lock()
	when, hook := h.when, h.hook
	if when != nil && when(op, j) {
		h.when = nil
	} else {
		hook = nil
	}
	h.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func (h *adminHook) arm(when func(op string, j *job.Job) bool, hook func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.when, h.hook = when, hook
}

func (h *adminHook) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	h.fire("UpdateJob", &j)
	return h.State.UpdateJob(ctx, j, from)
}

func (h *adminHook) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	h.fire("Take", nil)
	return h.State.Take(ctx, r)
}

func (h *adminHook) GetLane(ctx context.Context, queue, key string) (slot.Lane, error) {
	h.fire("GetLane", nil)
	return h.State.GetLane(ctx, queue, key)
}

// drain works every message due within limit of fake time.
func drain(t *testing.T, b *workBench, limit time.Duration) {
	t.Helper()
	ctx := context.Background()
	for end := time.Now().Add(limit); time.Now().Before(end); {
		ds, err := b.tr.Receive(ctx, 10, time.Second, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if err := b.eng.Work(ctx, d.Envelope); errors.Is(err, engine.ErrStillRunning) {
				continue // the running attempt's watchdog: it comes back
			} else if err != nil {
				t.Fatalf("Work(%s): %v", d.Envelope.JobID, err)
			}
			if err := b.tr.Delete(ctx, d.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// lambdaUntil works every message that comes due until end as Lambda
// would, each Work call with an invocation's 15 minutes, and runs the
// resume schedule each minute.
func lambdaUntil(t *testing.T, b *workBench, end time.Time) {
	t.Helper()
	ctx := context.Background()
	for time.Now().Before(end) {
		ds, err := b.tr.Receive(ctx, 10, time.Minute, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			wctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
			err := b.eng.Work(wctx, d.Envelope)
			cancel()
			if err != nil {
				t.Fatalf("Work(%s): %v", d.Envelope.JobID, err)
			}
			if err := b.tr.Delete(ctx, d.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.eng.Resume(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// parking reports whether an UpdateJob parks a job for a pause.
func parking(op string, j *job.Job) bool {
	return op == "UpdateJob" && j.Status == job.Parked && j.ParkReason == job.PausedQueue
}

// pausedWithHook is a bench whose state is an adminHook (returned), with
// one job enqueued on queue "q" (one start a second) and the queue
// paused; it returns the job's message and the count of its target's
// runs.
func pausedWithHook(t *testing.T) (*workBench, *adminHook, job.Envelope, *int) {
	t.Helper()
	h := &adminHook{}
	b, ran := newCountingBench(t, engine.Options{}, func(st engine.State) engine.State { h.State = st; return h })
	env := b.enqueue("q", slot.Config{Interval: time.Second})
	if _, err := b.eng.Pause(context.Background(), "q", time.Time{}); err != nil {
		t.Fatal(err)
	}
	return b, h, env, ran
}

// Purge and delete land between the gate's "paused" and the job's park:
// the purge's list of parked jobs misses it. The purged job never runs
// (it was re-ticketed past the purge by the resume), and the deleted
// queue's job does not stay parked forever in its dead generation.
func TestAdminBetweenGateAndPark(t *testing.T) {
	for _, op := range []string{"purge", "delete"} {
		t.Run(op, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, h, env, ran := pausedWithHook(t)
				ctx := context.Background()
				h.arm(parking, func() {
					var err error
					if op == "purge" {
						_, err = b.eng.Purge(ctx, "q")
					} else {
						_, err = b.eng.DeleteQueue(ctx, "q")
					}
					if err != nil {
						t.Error(err)
					}
				})
				if err := b.eng.Work(ctx, env); err != nil {
					t.Fatalf("Work: %v", err)
				}
				if op == "delete" {
					if j, err := b.store.GetJob(ctx, job.Ref{Queue: "q", ID: "j1"}); !errors.Is(err, engine.ErrJobNotFound) {
						t.Fatalf("the deleted queue's job is %s %s, want expired", j.Status, j.ParkReason)
					}
					return
				}
				if _, err := b.eng.Unpause(ctx, "q"); err != nil {
					t.Fatal(err)
				}
				drain(t, b, time.Minute)
				if j := b.job("q", "j1"); *ran != 0 || j.Status != job.Cancelled {
					t.Fatalf("the purged job ran %d times and is %s, want cancelled, never run", *ran, j.Status)
				}
			})
		})
	}
}

// A purge lands while a resume round re-tickets the queue's parked jobs:
// after the round's list, before its take. The round does not carry the
// purged job past the purge.
func TestPurgeDuringResumeRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, h, env, ran := pausedWithHook(t)
		ctx := context.Background()
		if err := b.eng.Work(ctx, env); err != nil { // parks j1
			t.Fatalf("Work: %v", err)
		}
		if j := b.job("q", "j1"); j.Status != job.Parked {
			t.Fatalf("j1 is %s, want parked", j.Status)
		}
		// The purge's write lands here; its own list comes after the
		// round has moved j1 out of the parked jobs, and finds nothing.
		h.arm(func(op string, _ *job.Job) bool { return op == "Take" }, func() {
			if _, err := b.store.Purge(ctx, "q"); err != nil {
				t.Error(err)
			}
		})
		if _, err := b.eng.Unpause(ctx, "q"); err != nil {
			t.Fatal(err)
		}
		drain(t, b, time.Minute)
		if j := b.job("q", "j1"); *ran != 0 || j.Status != job.Cancelled {
			t.Fatalf("the purged job ran %d times and is %s (ticket %d), want cancelled, never run", *ran, j.Status, j.Ticket)
		}
	})
}

// A job is cancelled after its worker read it as queued and before the
// worker takes its key: the key does not stay with the cancelled job
// until its lease ends; the key's next job runs at its slot.
func TestCancelBeforeKeyTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran []string
		h := &adminHook{}
		b := newWorkBench(t, engine.Options{Runner: logIDs(&ran)}, func(st engine.State) engine.State { h.State = st; return h })
		ctx := context.Background()
		if _, err := b.eng.CreateQueue(ctx, "q", slot.Config{Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Jobs: []job.Spec{
			{ID: "j1", Kind: "k", Key: "K"}, {ID: "j2", Kind: "k", Key: "K"},
		}}); err != nil {
			t.Fatal(err)
		}
		h.arm(func(op string, _ *job.Job) bool { return op == "GetLane" }, func() {
			if _, err := b.eng.CancelJob(ctx, job.Ref{Queue: "q", ID: "j1"}); err != nil {
				t.Error(err)
			}
		})
		j1 := b.job("q", "j1")
		if err := b.eng.Work(ctx, j1.Envelope()); err != nil {
			t.Fatalf("Work(j1): %v", err)
		}
		l, err := b.store.GetLane(ctx, "q", "K")
		if err != nil {
			t.Fatal(err)
		}
		if l.Holder.JobID == "j1" {
			t.Fatalf("the cancelled j1 holds key K until %v", l.Until)
		}
		drain(t, b, time.Minute)
		if len(ran) != 1 || ran[0] != "j2" {
			t.Fatalf("ran %v within a minute, want j2", ran)
		}
		if j := b.job("q", "j1"); j.Status != job.Cancelled {
			t.Fatalf("j1 is %s, want cancelled", j.Status)
		}
	})
}

// dupState orders two deliveries of one job: the first passes the gate,
// and its claim waits until the second has passed its own gate; the
// second's claim waits until the first's has landed.
type dupState struct {
	onPass
	mu        sync.Mutex
	gates     int
	claims    int
	d2Gated   chan struct{}
	d1Claimed chan struct{}
}

// passed counts a pass of ticket 1's gate.
func (d *dupState) passed(ticket int64) {
	if ticket == 1 {
		d.mu.Lock()
		d.gates++
		if d.gates == 2 {
			close(d.d2Gated)
		}
		d.mu.Unlock()
	}
}

func (d *dupState) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if j.ID != "j1" || from.Status != job.Queued || j.Status != job.Running {
		return d.State.UpdateJob(ctx, j, from)
	}
	d.mu.Lock()
	d.claims++
	n := d.claims
	d.mu.Unlock()
	if n == 1 {
		<-d.d2Gated
		err := d.State.UpdateJob(ctx, j, from)
		close(d.d1Claimed)
		return err
	}
	<-d.d1Claimed
	return d.State.UpdateJob(ctx, j, from)
}

// A duplicate delivery passes the gate again while the first delivery's
// claim is on its way (an interval late), and the two claims land in
// either order: whichever delivery runs, or neither (the first oversleeps
// its reserved start and gives the slot up), the running place is freed,
// and the queue's next job does not wait for a place until the lease
// ends. (Before the gate reserved starts, the first delivery ran here and
// its end freed nothing: the duplicate's gate had rewritten the place's
// end. The store's rule is checked by storetest Gate/CapEndRunRegated.)
func TestDuplicateGateKeepsPlaceFreeable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran []string
		d2Done := make(chan struct{})
		d := &dupState{d2Gated: make(chan struct{}), d1Claimed: make(chan struct{})}
		b := newWorkBench(t, engine.Options{Runner: runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
			if j.ID == "j1" {
				<-d2Done // the duplicate is done with while j1 runs
			}
			ran = append(ran, j.ID)
			return nil
		})}, func(st engine.State) engine.State { d.onPass = onPass{st, d.passed}; return d })
		ctx := context.Background()
		if _, err := b.eng.CreateQueue(ctx, "q", slot.Config{Interval: 100 * time.Millisecond, MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Jobs: []job.Spec{{ID: "j1", Kind: "k"}, {ID: "j2", Kind: "k"}}}); err != nil {
			t.Fatal(err)
		}
		j1 := b.job("q", "j1")
		env := j1.Envelope()
		// Either delivery may be the one that runs; the other is done
		// with while j1 runs (firstDone).
		closeFirst := sync.OnceFunc(func() { close(d2Done) })
		done := make(chan error, 2)
		for range 2 {
			go func() {
				err := b.eng.Work(ctx, env)
				closeFirst()
				done <- err
			}()
		}
		for range 2 {
			// The delivery that lost the claim keeps its message as the
			// running attempt's watchdog (engine.ErrStillRunning).
			if err := <-done; err != nil && !errors.Is(err, engine.ErrStillRunning) {
				t.Fatalf("Work: %v", err)
			}
		}
		drain(t, b, time.Minute)
		if !slices.Contains(ran, "j1") || !slices.Contains(ran, "j2") || len(ran) != 2 {
			t.Fatalf("ran %v within a minute, want j1 and j2 once each; j1: %+v", ran, b.job("q", "j1").History)
		}
	})
}

// On a queue with a long interval, a job whose gate opens further away
// than SQS can delay (a scheduled job found the opening taken by a line
// job) is parked once and released once, with the exact delay, and starts
// at the opening: not handed back every 15 minutes. A job holding its key
// meanwhile keeps it.
func TestLongGateWaitParksOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran []string
		var at []time.Time
		b := newWorkBench(t, engine.Options{Runner: runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
			ran, at = append(ran, j.ID), append(at, time.Now())
			return nil
		})}, nil)
		ctx := context.Background()
		start := time.Now()
		if _, err := b.eng.CreateQueue(ctx, "q", slot.Config{Interval: time.Hour, Skew: 10 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		nb := start.Add(time.Second)
		// s is scheduled (beyond an idle line); l takes the line's first
		// slot, now, and with it the hour s needed.
		if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &job.Spec{ID: "s", Kind: "k", Key: "K", NotBefore: &nb}}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &job.Spec{ID: "l", Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
		lambdaUntil(t, b, start.Add(2*time.Hour))
		if len(ran) != 2 || ran[0] != "l" || ran[1] != "s" {
			t.Fatalf("ran %v, want l then s", ran)
		}
		if late := at[1].Sub(start.Add(time.Hour)); late < -10*time.Millisecond || late > time.Second {
			t.Errorf("s started %v after the opening an hour after l, want at it", late)
		}
		s := b.job("q", "s")
		handed, released := 0, 0
		for _, ev := range s.History {
			switch ev.Kind {
			case job.HandedBack:
				handed++
			case job.Released:
				released++
			}
		}
		if handed > 1 || released != 1 || s.Ticket != 1 {
			t.Errorf("s was handed back %d times and released %d times, ticket %d; want at most one hand-back, one release, its first ticket: %+v",
				handed, released, s.Ticket, s.History)
		}
	})
}

// putLaneHook runs a hook once, after the first lane write of a job that
// takes its key.
type putLaneHook struct {
	engine.State
	once sync.Once
	hook func()
}

func (p *putLaneHook) PutLane(ctx context.Context, l slot.Lane, from, delta int64) (slot.Lane, error) {
	out, err := p.State.PutLane(ctx, l, from, delta)
	if err == nil && l.Holder.Ticket > 0 && p.hook != nil {
		p.once.Do(p.hook)
	}
	return out, err
}

// A job that took its key and then finds its gate an hour away (a job
// out of line took the opening meanwhile) parks until the opening and
// keeps its key while away: a job of the same key that reaches an
// opening first waits for it, rather than take the key its lease let go
// and overtake it.
func TestLongGateWaitKeepsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran []string
		h := &putLaneHook{}
		b := newWorkBench(t, engine.Options{Runner: logIDs(&ran), Lease: 3 * time.Minute}, func(st engine.State) engine.State { h.State = st; return h })
		ctx := context.Background()
		start := time.Now()
		if _, err := b.eng.CreateQueue(ctx, "q", slot.Config{Interval: time.Hour, Skew: 10 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		enq := func(sp job.Spec) job.Job {
			t.Helper()
			if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &sp}); err != nil {
				t.Fatal(err)
			}
			return b.job("q", sp.ID)
		}
		at := func(d time.Duration) *time.Time { v := start.Add(d); return &v }
		s := enq(job.Spec{ID: "s", Kind: "k", NotBefore: at(time.Millisecond)})      // out of line, no key
		a := enq(job.Spec{ID: "a", Kind: "k", Key: "K"})                             // the line's first slot, now
		enq(job.Spec{ID: "b", Kind: "k", Key: "K", NotBefore: at(90 * time.Minute)}) // beyond the line: out of it, key K
		// a takes K; right then, s passes the gate and takes the hour.
		h.hook = func() {
			if err := b.eng.Work(ctx, s.Envelope()); err != nil {
				t.Error(err)
			}
		}
		time.Sleep(time.Millisecond)
		wctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		if err := b.eng.Work(wctx, a.Envelope()); err != nil {
			t.Fatal(err)
		}
		cancel()
		if got := b.job("q", "a"); got.Status != job.Parked || got.ParkReason != job.WaitGate {
			t.Fatalf("a is %s %s, want parked until its gate opens", got.Status, got.ParkReason)
		}
		lambdaUntil(t, b, start.Add(4*time.Hour))
		if !slices.Equal(ran, []string{"s", "a", "b"}) {
			t.Fatalf("ran %v, want s, then a (which held K), then b", ran)
		}
		for _, ev := range b.job("q", "a").History {
			if ev.Kind == job.Reticketed {
				t.Errorf("a was overtaken on its key and re-ticketed: %+v", b.job("q", "a").History)
			}
		}
	})
}
