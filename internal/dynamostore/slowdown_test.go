package dynamostore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// slowStore is a store that notes when each slow-down was written: on
// the queue's state, or on a key's meter.
type slowStore struct {
	*dynamostore.Store
	mu      sync.Mutex
	written []time.Time
	onKeys  map[string]int64 // key → slow-downs its meter counts
}

func (s *slowStore) PutMeter(ctx context.Context, m slot.Meter, from int64, keep time.Time) (slot.Meter, error) {
	out, err := s.Store.PutMeter(ctx, m, from, keep)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.onKeys == nil {
		s.onKeys = map[string]int64{}
	}
	if err == nil && m.State.SlowDowns > s.onKeys[m.Key] {
		s.onKeys[m.Key] = m.State.SlowDowns
		s.written = append(s.written, time.Now())
	}
	return out, err
}

func (s *slowStore) SlowDown(ctx context.Context, r engine.SlowDownRequest) (slot.State, error) {
	st, err := s.Store.SlowDown(ctx, r)
	s.mu.Lock()
	s.written = append(s.written, time.Now())
	s.mu.Unlock()
	return st, err
}

// slowBench runs a queue on DynamoDB Local with real concurrency: eight
// workers, duplicate deliveries, a runner that answers "slow down" to
// the calls slow picks and notes every begin.
type slowBench struct {
	t      *testing.T
	st     *slowStore
	eng    *engine.Engine
	lead   time.Duration
	mu     sync.Mutex
	begins []slowBegin
	calls  map[string]int
}

type slowBegin struct {
	id, key string
	at      time.Time
	slowed  time.Duration // the wait answered, if any
}

func newSlowBench(t *testing.T, slow func(j *job.Job, calls int) (time.Duration, bool)) *slowBench {
	sim := newLocalSim(t, memstore.TransportOptions{VisibilityTimeout: 2 * time.Second, DuplicateRate: 0.2, Seed: 7})
	b := &slowBench{t: t, st: &slowStore{Store: sim.store}, lead: 100 * time.Millisecond, calls: map[string]int{}}
	runner := runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.calls[j.ID]++
		wait, ok := slow(j, b.calls[j.ID])
		if !ok {
			wait = 0
		}
		b.begins = append(b.begins, slowBegin{id: j.ID, key: j.Key, at: time.Now(), slowed: wait})
		if ok {
			return attempt.RetryAfter(wait)
		}
		return nil
	})
	b.eng = testenv.NewEngine(t, engine.Options{State: b.st, Transport: sim.tr, Runner: runner, NoAutoCreate: true,
		Lease: 5 * time.Second, RecordGrace: time.Second, Lead: b.lead})
	sim.work(8, b.eng, nil)
	return b
}

// finish waits until the jobs ids are all final, and returns them.
func (b *slowBench) finish(queue string, ids []string) map[string]job.Job {
	b.t.Helper()
	out := map[string]job.Job{}
	testenv.WaitFor(b.t, fmt.Sprintf("%d jobs final", len(ids)), func() bool {
		for _, id := range ids {
			j, err := b.st.GetJob(b.t.Context(), job.Ref{Queue: queue, ID: id})
			if err != nil || !j.Status.Final() {
				return false
			}
			out[id] = j
		}
		return true
	})
	return out
}

// slowed returns the begins in time order and the one answered "slow
// down", with the time its slow-down was written.
func (b *slowBench) slowed() ([]slowBegin, slowBegin, time.Time) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	bs := slices.Clone(b.begins)
	slices.SortFunc(bs, func(x, y slowBegin) int { return x.at.Compare(y.at) })
	var a slowBegin
	for _, x := range bs {
		if x.slowed > 0 {
			a = x
		}
	}
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	if a.id == "" || len(b.st.written) != 1 {
		b.t.Fatalf("answered %+v, %d slow-downs written; want one", a, len(b.st.written))
	}
	return bs, a, b.st.written[0]
}

// checkHeld fails if a begin that counts came after the slow-down was
// written (plus what was on its way then: a lead, and a skew for the
// gate and one for the wake-up) and before its end; and unless the
// answered job is the first that counts after the end.
func checkHeld(t *testing.T, bs []slowBegin, a slowBegin, written time.Time, onWay time.Duration, counts func(slowBegin) bool) {
	t.Helper()
	until := a.at.Add(a.slowed)
	first := ""
	for _, x := range bs {
		if !counts(x) {
			continue
		}
		if x.at.After(written.Add(onWay)) && x.at.Before(until) {
			t.Errorf("%s began %v after the slow-down (for %v) was written", x.id, x.at.Sub(written), a.slowed)
		}
		if first == "" && !x.at.Before(until) {
			first = x.id
		}
	}
	if first != a.id {
		var again time.Time
		for _, x := range bs {
			if x.id == a.id && !x.at.Before(until) && again.IsZero() {
				again = x.at
			}
		}
		t.Errorf("the first begin after the slow-down's end was %s, want the answered job %s (it began again %v after the end)", first, a.id, again.Sub(until))
	}
}

// TestSlowDownOnDynamoDB: on DynamoDB Local, with real concurrency, one
// worker's "slow down for 2s" stops the other workers' next starts; the
// answered job is the first to begin after; every job succeeds, the
// answered one at its first attempt.
func TestSlowDownOnDynamoDB(t *testing.T) {
	b := newSlowBench(t, func(j *job.Job, calls int) (time.Duration, bool) {
		return 2 * time.Second, j.ID == "j8" && calls == 1
	})
	const queue, n = "slow", 24
	skew := 20 * time.Millisecond
	if _, err := b.eng.CreateQueue(t.Context(), queue, slot.Config{Interval: 100 * time.Millisecond, Skew: skew}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("j%d", i))
		if _, err := b.eng.Enqueue(t.Context(), job.EnqueueRequest{Queue: queue, Job: &job.Spec{ID: ids[i], Kind: "sim"}}); err != nil {
			t.Fatal(err)
		}
	}
	jobs := b.finish(queue, ids)
	bs, a, written := b.slowed()
	checkHeld(t, bs, a, written, b.lead+2*skew, func(slowBegin) bool { return true })
	for id, j := range jobs {
		if j.Status != job.Succeeded {
			t.Errorf("%s: %s (%s)", id, j.Status, j.LastError)
		}
	}
	if j := jobs[a.id]; j.SlowDowns != 1 || j.Attempt != 1 {
		t.Errorf("the answered job: %d slow-downs, attempt %d; want 1 and 1", j.SlowDowns, j.Attempt)
	}
}

// TestSlowDownKeyOnDynamoDB: a key with a limit of its own that is
// answered "slow down" waits alone; the other keys' jobs go on.
func TestSlowDownKeyOnDynamoDB(t *testing.T) {
	b := newSlowBench(t, func(j *job.Job, calls int) (time.Duration, bool) {
		return 2 * time.Second, j.ID == "a1" && calls == 1
	})
	const queue = "keyed"
	skew := 20 * time.Millisecond
	cfg := slot.Config{Interval: 50 * time.Millisecond, Skew: skew,
		KeyLimits: []api.Limit{{Interval: 200 * time.Millisecond}}, KeyMaxRunning: slot.NoKeyCap}
	if _, err := b.eng.CreateQueue(t.Context(), queue, cfg); err != nil {
		t.Fatal(err)
	}
	// Key a has a few jobs, the others enough to run through its
	// slow-down and past it (20 each, 200 ms apart: 4 s).
	var ids []string
	for i := range 20 {
		for _, k := range []string{"a", "b", "c"} {
			if k == "a" && i >= 6 {
				continue
			}
			id := fmt.Sprintf("%s%d", k, i)
			ids = append(ids, id)
			if _, err := b.eng.Enqueue(t.Context(), job.EnqueueRequest{Queue: queue, Job: &job.Spec{ID: id, Kind: "sim", Key: k}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	jobs := b.finish(queue, ids)
	bs, a, written := b.slowed()
	checkHeld(t, bs, a, written, b.lead+2*skew, func(x slowBegin) bool { return x.key == "a" })
	others := 0
	for _, x := range bs {
		if x.key != "a" && x.at.After(written) && x.at.Before(a.at.Add(a.slowed)) {
			others++
		}
	}
	if others < 3 {
		for _, x := range bs {
			t.Logf("%s %v", x.id, x.at.Sub(written))
		}
		t.Errorf("%d begins of the other keys during key a's slow-down: they should go on", others)
	}
	for id, j := range jobs {
		if j.Status != job.Succeeded {
			t.Errorf("%s: %s (%s)", id, j.Status, j.LastError)
		}
	}
}

// TestSlowDownBoundOnDynamoDB: a job whose target always answers "slow
// down" fails after the queue's max_slow_downs, with the last answer;
// the others succeed.
func TestSlowDownBoundOnDynamoDB(t *testing.T) {
	b := newSlowBench(t, func(j *job.Job, calls int) (time.Duration, bool) {
		return 300 * time.Millisecond, j.ID == "never"
	})
	const queue = "bound"
	if _, err := b.eng.CreateQueue(t.Context(), queue, slot.Config{Interval: 100 * time.Millisecond, MaxSlowDowns: 3}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"j0", "j1", "never", "j3", "j4"}
	for _, id := range ids {
		if _, err := b.eng.Enqueue(t.Context(), job.EnqueueRequest{Queue: queue, Job: &job.Spec{ID: id, Kind: "sim"}}); err != nil {
			t.Fatal(err)
		}
	}
	jobs := b.finish(queue, ids)
	for id, j := range jobs {
		want := job.Succeeded
		if id == "never" {
			want = job.Failed
		}
		if j.Status != want {
			t.Errorf("%s: %s, want %s", id, j.Status, want)
		}
	}
	if j := jobs["never"]; j.SlowDowns != 3 || j.Attempt != 1 || !strings.Contains(j.LastError, "retry after 300ms") {
		t.Errorf("never: %d slow-downs, attempt %d, last error %q; want 3, 1 and the last answer", j.SlowDowns, j.Attempt, j.LastError)
	}
}

// TestSlowDownCostsNothingUnslowed: a queue whose target never answers
// "slow down" writes what it wrote before slow-downs existed: one write
// of the queue's state per enqueue call and per start (the gate), the
// job record's creation, claim and outcome, and no other write.
//
// The figure is that of jobs that run without trouble (enqueued,
// started, succeeded). A worker that comes to its start more than the
// skew late gives the start up and the job is queued again, which costs
// writes of its own: a host stalled that long (DynamoDB Local starved of
// CPU) makes such a round, which measures something else. A round with a
// missed start is logged and run again on a new queue; the margins
// (a lead and a skew of about a second each, one job per second) make
// such rounds rare even on a loaded host.
func TestSlowDownCostsNothingUnslowed(t *testing.T) {
	st, m, tr, eng := meteredWorker(t, runFunc(func(context.Context, *job.Job, slot.Config) error { return nil }))
	const n, rounds = 6, 5
	for round := range rounds {
		queue := fmt.Sprintf("plain-%d", round)
		if _, err := eng.CreateQueue(t.Context(), queue, slot.Config{Interval: time.Second, Skew: 900 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		var specs []job.Spec
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("j%d", i)
			specs = append(specs, job.Spec{ID: ids[i], Kind: "sim"})
		}
		before := m.Counts()
		if _, err := eng.Enqueue(t.Context(), job.EnqueueRequest{Queue: queue, Jobs: specs}); err != nil {
			t.Fatal(err)
		}
		jobs := awaitSucceeded(t, st, tr, queue, ids)
		after := m.Counts()
		writes := map[string]int64{}
		for op, c := range after {
			if strings.HasPrefix(op, "Get") || strings.HasPrefix(op, "Query") || strings.HasPrefix(op, "BatchGet") {
				continue
			}
			if d := c.Calls - before[op].Calls; d != 0 {
				writes[op] = d
			}
		}
		if i := slices.IndexFunc(jobs, func(j job.Job) bool { return len(j.History) != 3 }); i >= 0 {
			var kinds []job.EventKind
			for _, ev := range jobs[i].History {
				kinds = append(kinds, ev.Kind)
			}
			t.Logf("round %d: %s missed its start (the host stalled more than the skew): %v; writes %v; measuring again", round, jobs[i].ID, kinds, writes)
			continue
		}
		t.Logf("writes for %d jobs: %v", n, writes)
		if w := writes["UpdateItem state"]; w != 1 {
			t.Errorf("%d writes of the queue's state for %d jobs in one call, want 1 (the take: a booked start on time passes by a read)", w, n)
		}
		if w := writes["UpdateItem job"] + writes["PutItem job"]; w != 3*n {
			t.Errorf("%d writes of job records, want %d (its creation, its claim and its outcome each)", w, 3*n)
		}
		for op := range writes {
			if op != "UpdateItem state" && op != "UpdateItem job" && op != "PutItem job" {
				t.Errorf("writes %v; want the queue's state and the job records only", writes)
			}
		}
		return
	}
	t.Fatalf("each of %d rounds had a start missed: the host stalled more than a second in each", rounds)
}

// TestSlowDownCountedOnceOnDynamoDB: a slow-down's write lands and its
// answer is lost; the SDK sends it again. The queue's slow_downs counts
// the answer once, also when another job's answer lands between the two
// sends (each ticket's last answer is remembered apart).
func TestSlowDownCountedOnceOnDynamoDB(t *testing.T) {
	slowWrite := func(in any) bool {
		u, ok := in.(*dynamodb.UpdateItemInput)
		if !ok {
			return false
		}
		for _, name := range u.ExpressionAttributeNames {
			if name == "slow_downs" {
				return true
			}
		}
		return false
	}
	api := newClient(t, nil, fastRetries)
	table := newTable(t, api)
	clean := dynamostore.New(api, table, dynamostore.Options{})
	newQueue(t, clean, "q", time.Second)
	q, err := clean.GetQueue(t.Context(), "q")
	if err != nil {
		t.Fatal(err)
	}
	req := func(ticket int64, until time.Duration) engine.SlowDownRequest {
		return engine.SlowDownRequest{Queue: "q", Gen: q.Gen, Ticket: ticket, Until: base.Add(until), Hold: base.Add(until + time.Second),
			Answer: fmt.Sprintf("%d.1.0", ticket)}
	}
	for _, c := range []struct {
		name    string
		between bool // another job's answer lands before the retry
	}{{"alone", false}, {"another answer between", true}} {
		t.Run(c.name, func(t *testing.T) {
			before, err := clean.GetQueue(t.Context(), "q")
			if err != nil {
				t.Fatal(err)
			}
			ticket := before.State.SlowDowns*10 + 3
			rule := faultRule{Op: "UpdateItem", If: slowWrite, Fault: faultLost, Rate: 1, N: 1}
			want := int64(1)
			if c.between {
				want = 2
				rule.Then = func() {
					if _, err := clean.SlowDown(t.Context(), req(ticket+1, 20*time.Second)); err != nil {
						t.Errorf("the answer between: %v", err)
					}
				}
			}
			f := newFaultyDB(api, 1, 0, rule)
			st := dynamostore.New(f, table, dynamostore.Options{})
			if _, err := st.SlowDown(t.Context(), req(ticket, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			if f.Injected("UpdateItem", faultLost) != 1 || f.Attempts("UpdateItem") < 2 {
				t.Fatalf("faults %s, %d attempts; want the first answer lost and a retry", f, f.Attempts("UpdateItem"))
			}
			after, err := clean.GetQueue(t.Context(), "q")
			if err != nil {
				t.Fatal(err)
			}
			if got := after.State.SlowDowns - before.State.SlowDowns; got != want {
				t.Errorf("slow_downs moved by %d for %d answers; want each counted once", got, want)
			}
		})
	}
}
