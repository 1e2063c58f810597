package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// §5.12 Keys run one at a time: the checks every lane test makes on the
// runs of a queue's "lane" jobs.

// checkLanes fails if two runs of one key overlap, or if a key's runs did
// not begin in ticket order.
func checkLanes(t *testing.T, runs []run) {
	t.Helper()
	if v := laneViolation(runs); v != "" {
		t.Fatal(v)
	}
}

// laneViolation says how runs break §5.12, or returns "".
func laneViolation(runs []run) string {
	byKey := map[string][]run{}
	for _, r := range runs {
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	for key, rs := range byKey {
		if key == "" {
			continue
		}
		// runs are in begin order.
		for i := 1; i < len(rs); i++ {
			prev, r := rs[i-1], rs[i]
			if r.Begin.Before(prev.End) {
				return fmt.Sprintf("key %s: ticket %d (job %s) began %v before ticket %d (job %s) ended",
					key, r.Ticket, r.ID, prev.End.Sub(r.Begin), prev.Ticket, prev.ID)
			}
			if r.Ticket <= prev.Ticket {
				return fmt.Sprintf("key %s: ticket %d (job %s) began after ticket %d (job %s): not in ticket order",
					key, r.Ticket, r.ID, prev.Ticket, prev.ID)
			}
		}
	}
	return ""
}

// maxConcurrent is the most runs that were running at one moment.
func maxConcurrent(runs []run) int {
	spans := make([]timeline.Span, len(runs))
	for i, r := range runs {
		spans[i] = timeline.Span{Begin: r.Begin, End: r.End}
	}
	return timeline.MostAtOnce(spans)
}

// enqueueKeyed enqueues, in calls of a few jobs, jobsPerKey jobs for each
// of keys keys (interleaved), each running a random 0.5–4 intervals.
func enqueueKeyed(s *sim, queue string, keys, jobsPerKey int, iv time.Duration, seed uint64) int {
	rnd := rand.New(rand.NewPCG(seed, 1))
	total := keys * jobsPerKey
	for i := 0; i < total; {
		n := min(1+rnd.IntN(4), total-i)
		req := job.EnqueueRequest{Queue: queue}
		for k := range n {
			ms := (iv/2 + time.Duration(rnd.Int64N(int64(7*iv/2)))).Milliseconds()
			req.Jobs = append(req.Jobs, job.Spec{
				Kind: "lane", Key: fmt.Sprintf("k%d", (i+k)%keys),
				Payload: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, ms)),
			})
		}
		if _, err := s.eng.Enqueue(context.Background(), req); err != nil {
			s.t.Fatalf("enqueue: %v", err)
		}
		i += n
	}
	return total
}

// With many workers, delivery jitter, duplicate deliveries and crashes at
// every step (after the gate, after the claim, after a lane write, before
// an outcome, before a place is freed): per key no two runs overlap and
// they begin in ticket order, the queue's spacing holds, max_running is
// never exceeded, and every job ends.
func TestGuaranteeLanes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		o          simOptions
		maxRunning int
	}{
		{"no faults", simOptions{Workers: 16, Seed: 1}, 0},
		{"jitter and duplicates", simOptions{Workers: 16, Seed: 2, Transport: memstore.TransportOptions{
			Jitter: 300 * time.Millisecond, DuplicateRate: 0.3}}, 0},
		{"crashes, jitter and duplicates", simOptions{Workers: 16, CrashRate: 0.03, Seed: 3, Lease: 30 * time.Second,
			ResumeEvery: 10 * time.Second, Transport: memstore.TransportOptions{
				Jitter: 300 * time.Millisecond, DuplicateRate: 0.2, VisibilityTimeout: 5 * time.Second}}, 0},
		{"max_running 3", simOptions{Workers: 16, Seed: 4, Transport: memstore.TransportOptions{
			Jitter: 200 * time.Millisecond, DuplicateRate: 0.2}}, 3},
		{"max_running 2 with crashes", simOptions{Workers: 16, CrashRate: 0.03, Seed: 5, Lease: 30 * time.Second,
			ResumeEvery: 10 * time.Second, Transport: memstore.TransportOptions{
				Jitter: 200 * time.Millisecond, DuplicateRate: 0.2, VisibilityTimeout: 5 * time.Second}}, 2},
	} {
		for seed := range lanesSeeds {
			tc := tc
			tc.o.Seed += uint64(seed) * 100
			t.Run(fmt.Sprintf("%s/seed %d", tc.name, tc.o.Seed), func(t *testing.T) {
				inSim(t, tc.o, func(t *testing.T, s *sim) {
					const iv = 100 * time.Millisecond
					// Crashes may lose attempts; enough of them that none fails.
					s.createQueue("lanes", slot.Config{Interval: iv, Skew: time.Millisecond, MaxRunning: tc.maxRunning, MaxAttempts: 10})
					total := enqueueKeyed(s, "lanes", 6, 10, iv, tc.o.Seed)
					s.waitFinishedOrDump("lanes", 2*time.Hour)

					if n := len(s.jobs("lanes", job.Succeeded)); n != total {
						for _, j := range s.store.Jobs("lanes") {
							if j.Status != job.Succeeded {
								t.Logf("%s ticket %d %s attempt %d: %s %+v", j.ID, j.Ticket, j.Status, j.Attempt, j.LastError, j.History)
							}
						}
						t.Fatalf("%d of %d jobs succeeded (%d stored)", n, total, len(s.store.Jobs("lanes")))
					}
					runs := s.runsOf("lanes")
					if len(runs) < total {
						t.Fatalf("%d runs of %d jobs", len(runs), total)
					}
					if v := laneViolation(runs); v != "" {
						for _, j := range s.store.Jobs("lanes") {
							t.Logf("%s ticket %d key %s %s: %+v", j.ID, j.Ticket, j.Key, j.Status, j.History)
						}
						t.Fatal(v)
					}
					checkSpacing(t, s.startsOf("lanes"), iv, time.Millisecond)
					if tc.maxRunning > 0 {
						if n := maxConcurrent(runs); n > tc.maxRunning {
							t.Fatalf("%d runs at once; max_running is %d", n, tc.maxRunning)
						}
					}
					if tc.o.CrashRate == 0 {
						checkSingleStart(t, s.startsOf("lanes"))
					}
					// Nothing stays held: every lane ended idle, and
					// without crashes (which may leave a pending count
					// high) none is left at all.
					lanes, err := s.store.ListLanes(context.Background(), "lanes")
					if err != nil {
						t.Fatal(err)
					}
					for _, l := range lanes {
						if !l.Idle() || tc.o.CrashRate == 0 {
							t.Fatalf("lane %q left behind: %+v", l.Key, l)
						}
					}
				})
			})
		}
	}
}

// lanesSeeds is how many seeds each case of TestGuaranteeLanes runs.
var lanesSeeds = 10

// No polling: a job that waits for its key is sent the moment the holder
// ends (the hand-off), not when the resume function next looks (here once
// an hour); then the queue's spacing may hold it a few intervals at the
// gate, as it holds every job. The key is given up when a holder's run
// ends, and also when a holder leaves it without running (its message
// came late, all workers busy, and it missed its slot: it takes a new
// ticket): the hand-off is measured from the later of the job's park and
// the key's last release before the hand-off.
func TestLaneHandOffIsImmediate(t *testing.T) {
	inSim(t, simOptions{Workers: 16, Seed: 9, ResumeEvery: time.Hour}, func(t *testing.T, s *sim) {
		const iv = 100 * time.Millisecond
		const keys = 2 // a slot per key every 2 intervals, runs of 2.25 on average: many wait
		s.createQueue("handoff", slot.Config{Interval: iv, Skew: time.Millisecond})
		enqueueKeyed(s, "handoff", keys, 8, iv, 9)
		s.waitFinished("handoff", time.Hour)
		handed, parked, freed := keyEvents(s.store.Jobs("handoff"))
		byKey := map[string][]run{}
		for _, r := range s.runsOf("handoff") {
			byKey[r.Key] = append(byKey[r.Key], r)
			freed[r.Key] = append(freed[r.Key], r.End)
		}
		waited := 0
		for key, rs := range byKey {
			for i := 1; i < len(rs); i++ {
				prev, r := rs[i-1], rs[i]
				parkAt, ok := lastBefore(parked[r.ID], r.Begin)
				if !ok {
					continue // it did not wait for the key
				}
				waited++
				h := slices.IndexFunc(handed[r.ID], func(at time.Time) bool { return !at.Before(parkAt) })
				if h < 0 {
					t.Fatalf("key %s: ticket %d parked on its key at %v and was never handed it (handed at %v)", key, r.Ticket, parkAt, handed[r.ID])
				}
				handAt := handed[r.ID][h]
				ref := parkAt
				for _, at := range freed[key] {
					if at.After(ref) && !at.After(handAt) {
						ref = at
					}
				}
				if handAt.Sub(ref) > iv/10 {
					t.Fatalf("key %s: ticket %d, parked on its key at %v, was handed it at %v, %v after the key was last given up (ticket %d ended at %v)",
						key, r.Ticket, parkAt, handAt, handAt.Sub(ref), prev.Ticket, prev.End)
				}
				if gap := r.Begin.Sub(laterOf(ref, prev.End)); gap > 10*iv {
					t.Fatalf("key %s: ticket %d began %v after its key was given up, although it waited for the key", key, r.Ticket, gap)
				}
			}
		}
		if waited < 5 {
			t.Fatalf("only %d jobs waited for their key: the test shows nothing", waited)
		}
	})
}

// keyEvents reads the jobs' histories: when each job (by id) was handed
// its key and when it parked on it, and when each key was left by a job
// that missed its slot or took a new ticket, without running.
func keyEvents(jobs []job.Job) (handed, parked, freed map[string][]time.Time) {
	handed, parked, freed = map[string][]time.Time{}, map[string][]time.Time{}, map[string][]time.Time{}
	for _, j := range jobs {
		for _, ev := range j.History {
			switch {
			case ev.Kind == job.Released:
				handed[j.ID] = append(handed[j.ID], ev.At)
			case ev.Kind == job.ParkedEvent && ev.Reason == string(job.WaitKey):
				parked[j.ID] = append(parked[j.ID], ev.At)
			case ev.Kind == job.SlotMissed || ev.Kind == job.Reticketed:
				freed[j.Key] = append(freed[j.Key], ev.At)
			}
		}
	}
	return handed, parked, freed
}

// lastBefore returns the last of times, in time order, that is not after
// t: a job's last park on its key before its run began.
func lastBefore(times []time.Time, t time.Time) (time.Time, bool) {
	k := slices.IndexFunc(times, func(at time.Time) bool { return at.After(t) })
	if k < 0 {
		k = len(times)
	}
	if k == 0 {
		return time.Time{}, false
	}
	return times[k-1], true
}

// A crashed holder frees its key after its lease: the next job of the key
// runs then, and the crashed attempt runs again (at-least-once).
func TestLaneCrashedHolderFreesKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const iv = 100 * time.Millisecond
		const lease = 30 * time.Second
		s := newSim(t, simOptions{Workers: 4, Seed: 12, Lease: lease, ResumeEvery: 5 * time.Second})
		defer s.stop()
		s.createQueue("crash", slot.Config{Interval: iv, Skew: time.Millisecond, MaxAttempts: 3})
		// The first job's worker dies as it ends: its outcome and its
		// hand-off never happen.
		s.chaos.failNext("k1-0")
		res := s.enqueue("crash", 3, func(i int, sp *job.Spec) {
			sp.Kind, sp.Key, sp.ID = "lane", "k1", fmt.Sprintf("k1-%d", i)
			sp.Payload = json.RawMessage(`{"ms":50}`)
		})
		s.waitFinished("crash", time.Hour)
		runs := s.runsOf("crash")
		checkLanes(t, runs)
		if len(runs) != 4 {
			t.Fatalf("%d runs, want 4 (the crashed attempt runs again): %+v", len(runs), runs)
		}
		// The second job waited for the crashed holder's lease, not for ever.
		second := runs[1]
		if second.ID != "k1-1" {
			t.Fatalf("second run is %s, want k1-1", second.ID)
		}
		if wait := second.Begin.Sub(runs[0].End); wait > lease+10*time.Second {
			t.Fatalf("k1-1 began %v after the crashed holder ended; its lease is %v", wait, lease)
		}
		if got := res.Jobs[2].KeyAhead; got == nil || *got != 2 {
			t.Fatalf("key_ahead of the third job = %v, want 2", got)
		}
	})
}

// waitFinishedOrDump is waitFinished, showing the jobs and lanes left.
func (s *sim) waitFinishedOrDump(queue string, limit time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if s.unfinished(queue) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	for _, j := range s.store.Jobs(queue) {
		if !j.Status.Final() {
			s.t.Logf("left: %s ticket %d %s %s key %s detached %v history %+v", j.ID, j.Ticket, j.Status, j.ParkReason, j.Key, j.Detached, j.History)
		}
	}
	lanes, _ := s.store.ListLanes(context.Background(), queue)
	for _, l := range lanes {
		s.t.Logf("lane %q: %+v", l.Key, l)
	}
	q, _ := s.store.GetQueue(context.Background(), queue)
	s.t.Logf("state %+v", q.State)
	s.t.Fatalf("queue %s: %d jobs not finished after %v", queue, s.unfinished(queue), limit)
}

// A job cancelled while it waits for a running place leaves the list of
// waiters, and the place goes to the next one.
func TestLaneCancelledWaiterLeavesPlaces(t *testing.T) {
	inSim(t, simOptions{Workers: 4, Seed: 21}, func(t *testing.T, s *sim) {
		const iv = 100 * time.Millisecond
		s.createQueue("cap", slot.Config{Interval: iv, Skew: time.Millisecond, MaxRunning: 1})
		s.enqueue("cap", 3, func(i int, sp *job.Spec) {
			sp.Kind, sp.ID = "lane", fmt.Sprintf("c%d", i)
			sp.Payload = json.RawMessage(`{"ms":2000}`)
		})
		time.Sleep(time.Second) // c0 runs; c1 and c2 wait for its place
		places := func() []slot.Waiter {
			l, err := s.store.GetLane(context.Background(), "cap", "")
			if err != nil {
				t.Fatal(err)
			}
			return l.Waiting
		}
		if w := places(); len(w) != 2 {
			t.Fatalf("waiting for a place: %+v, want c1 and c2", w)
		}
		if _, err := s.eng.CancelJob(context.Background(), job.Ref{Queue: "cap", ID: "c1"}); err != nil {
			t.Fatal(err)
		}
		if w := places(); len(w) != 1 || w[0].JobID != "c2" {
			t.Fatalf("waiting for a place after c1's cancel: %+v, want c2 alone", w)
		}
		s.waitFinished("cap", time.Minute)
		if runs := s.runsOf("cap"); len(runs) != 2 || runs[1].ID != "c2" || runs[1].Begin.Sub(runs[0].End) > iv {
			t.Fatalf("runs %+v: want c0, then c2 as c0 ends", runs)
		}
	})
}

// laneRacer wraps a State so that enqueues land between the reads of one
// key's lane and the writes that follow them: a read of the lane hands a
// turn to a producer waiting for one, if any, and returns only once that
// producer's enqueue has counted its job (AddPending). On DynamoDB a read
// and its write are milliseconds apart, and a stream of enqueues of the
// key lands in them; in a synctest bubble on memstore they are
// microseconds apart, and a stream alone almost never does (with no
// racer, the test below passed with adds that moved the version too).
type laneRacer struct {
	engine.State
	key   string
	turns chan *racerTurn
	// rate is the share of the reads that wait for an enqueue: below 1,
	// so that where adds fail compare-and-sets, some still succeed after
	// a few tries, and the hand-offs of the jobs that got the key meet
	// the race too, not only the arrivals.
	rate float64

	mu  sync.Mutex
	rnd *rand.Rand
}

// racerTurn is one read's wait for an enqueue's count.
type racerTurn struct {
	once    sync.Once
	counted chan struct{}
}

func (t *racerTurn) done() { t.once.Do(func() { close(t.counted) }) }

// turnKey carries a producer's turn on its enqueue's context.
type turnKey struct{}

func (r *laneRacer) GetLane(ctx context.Context, queue, key string) (slot.Lane, error) {
	l, err := r.State.GetLane(ctx, queue, key)
	r.mu.Lock()
	race := r.rnd.Float64() < r.rate
	r.mu.Unlock()
	if key == r.key && err == nil && race {
		t := &racerTurn{counted: make(chan struct{})}
		select {
		case r.turns <- t:
			<-t.counted
		default: // every producer is busy, or done
		}
	}
	return l, err
}

func (r *laneRacer) AddPending(ctx context.Context, queue string, gen int64, key string, n int64) (slot.Lane, error) {
	l, err := r.State.AddPending(ctx, queue, gen, key, n)
	if t, ok := ctx.Value(turnKey{}).(*racerTurn); ok {
		t.done()
	}
	return l, err
}

// Producers enqueue jobs of one key, one a call, at least 100 calls a
// second and one between nearly every read of the key's lane and the
// write that follows it (laneRacer), while the key's jobs run, each
// holding the key for 2.5 intervals: the counts of the enqueues never make
// a hand-off or an arrival lose its compare-and-set on the lane. Every job
// ends, runs of the key never overlap, no arrival fails and no key is left
// held ("key not handed on"), each job that waited for the key is handed
// it as the job before it ends, not when the resume function looks (here
// once an hour), and the count comes back to 0.
//
// When AddPending moved the lane's version, arrivals failed all their
// tries ("the lane kept changing under the update") and a hand-off that
// did the same left the key held: 580 of the 600 jobs were still waiting
// an hour later.
func TestLaneHandOffDuringEnqueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			iv        = 10 * time.Millisecond
			producers = 4
			calls     = 150 // each
			gap       = 40 * time.Millisecond
		)
		racer := &laneRacer{key: "hot", turns: make(chan *racerTurn), rate: 0.95, rnd: rand.New(rand.NewPCG(31, 2))}
		s := newSim(t, simOptions{Workers: 16, Seed: 31, ResumeEvery: time.Hour, Wrap: func(st engine.State) engine.State {
			racer.State = st
			return racer
		}})
		defer s.stop()
		s.createQueue("hot", slot.Config{Interval: iv, Skew: time.Millisecond})
		var wg sync.WaitGroup
		var raced atomic.Int64 // enqueues that landed in a read's turn
		for p := range producers {
			wg.Go(func() {
				for i := range calls {
					ctx := context.Background()
					var turn *racerTurn
					if i > 0 {
						select {
						case turn = <-racer.turns:
							ctx = context.WithValue(ctx, turnKey{}, turn)
						case <-time.After(gap):
						}
					}
					_, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "hot", Jobs: []job.Spec{{
						ID: fmt.Sprintf("p%d-%d", p, i), Kind: "lane", Key: "hot", Payload: json.RawMessage(`{"ms":25}`),
					}}})
					if turn != nil {
						turn.done()
						raced.Add(1)
					}
					if err != nil {
						t.Errorf("enqueue: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		s.waitFinishedOrDump("hot", time.Hour)

		if got := len(s.jobs("hot", job.Succeeded)); got != producers*calls {
			t.Fatalf("%d of %d jobs succeeded", got, producers*calls)
		}
		runs := s.runsOf("hot")
		checkLanes(t, runs)
		s.mu.Lock()
		warnings, workErrs := s.warnings, s.workErrs
		s.mu.Unlock()
		for _, w := range warnings {
			t.Errorf("warning: %s", w)
		}
		for _, e := range workErrs {
			t.Errorf("work: %s", e)
		}
		if raced.Load() < producers*calls/4 {
			t.Fatalf("only %d enqueues landed between a read of the lane and its write: the test shows nothing", raced.Load())
		}

		handed, parked, _ := keyEvents(s.store.Jobs("hot"))
		waited := 0
		for i := 1; i < len(runs); i++ {
			prev, r := runs[i-1], runs[i]
			// A job that parked only after the one before it ended (its
			// message came late, and it gave its key up with the slot it
			// missed) is handed the key from its park.
			parkAt, ok := lastBefore(parked[r.ID], r.Begin)
			if !ok {
				continue // it did not wait for the key
			}
			waited++
			from := laterOf(parkAt, prev.End)
			h := slices.IndexFunc(handed[r.ID], func(at time.Time) bool { return !at.Before(from) })
			if h < 0 || handed[r.ID][h].Sub(from) > iv/10 {
				t.Errorf("ticket %d, which waited for the key since %v, was not handed it when ticket %d ended at %v (handed at %v)",
					r.Ticket, parkAt, prev.Ticket, prev.End, handed[r.ID])
			}
		}
		if waited < producers*calls/2 {
			t.Fatalf("only %d jobs waited for the key: the test shows nothing", waited)
		}
		// Every job counted once and ended: the count came back to 0
		// and the lane went.
		if lanes, err := s.store.ListLanes(context.Background(), "hot"); err != nil || len(lanes) != 0 {
			t.Fatalf("lanes left: %+v, %v", lanes, err)
		}
		t.Logf("%d jobs, %d waited for the key, %d enqueues landed between a read of its lane and the write", len(runs), waited, raced.Load())
	})
}
