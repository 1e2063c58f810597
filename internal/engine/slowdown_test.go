package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// answer is one "slow down" a test's target gave: to which job, when,
// for how long.
type answer struct {
	ID   string
	Key  string
	At   time.Time
	Wait time.Duration
}

// slowTarget is a Go handler that records its starts in s and answers
// "slow down" (target.RetryAfter) to the calls slow picks; the answers
// it gave are in answers.
type slowTarget struct {
	s       *sim
	slow    func(j *api.Job, calls int) (time.Duration, bool)
	mu      sync.Mutex
	calls   map[string]int
	answers []answer
}

func (h *slowTarget) handle(_ context.Context, j *api.Job) error {
	now := time.Now()
	h.s.recordStart(j, now)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls == nil {
		h.calls = map[string]int{}
	}
	h.calls[j.ID]++
	if wait, ok := h.slow(j, h.calls[j.ID]); ok {
		h.answers = append(h.answers, answer{ID: j.ID, Key: j.Key, At: now, Wait: wait})
		return target.RetryAfter(wait)
	}
	return nil
}

func (h *slowTarget) given() []answer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.answers)
}

// §5.16 Back-pressure: a target's "slow down". Many workers run a
// backlog; one call is answered "slow down for 2 s". No start whose gate
// was passed after the answer begins before those 2 s have passed (one
// worker's answer stops the others' next starts); the answered job is
// the first to pass the gate afterwards; it was not a failed attempt;
// every job succeeds; and the starts keep the queue's limit throughout
// (no catch-up beyond the form's own burst). With crashes the answered
// job's worker may die on its way, so only the pause and the outcome
// are checked.
func TestGuaranteeSlowDown(t *testing.T) {
	forms := []simForm{
		{"interval", slot.Config{Interval: 100 * time.Millisecond}},
		{"rate with burst", slot.Config{Rate: api.Rate{N: 10, Per: time.Second}, Burst: 3}},
		{"window", slot.Config{Window: api.Rate{N: 4, Per: 500 * time.Millisecond}}},
	}
	eachRun(t, forms, slowDownRuns(5), func(t *testing.T, s *sim, cfg slot.Config, r simRun) {
		cfg.Skew, cfg.MaxAttempts = 10*time.Millisecond, 20
		s.createQueue("slow", cfg)
		strict := r.opts.CrashRate == 0
		a := s.slowOnce("slow", 40, 2*time.Second, "j12", func(i int, sp *job.Spec) { sp.ID = fmt.Sprintf("j%d", i) })
		checkPaused(t, s, "slow", a, func(start) bool { return true })
		if strict {
			checkFirstAfter(t, s, "slow", a)
		}
		checkSlowedRecord(t, s, "slow", a, 1, strict)
		checkLimits(t, cfg.LimitList(), cfg.Skew, s.startsOf("slow"))
	})
}

// slowDownRuns are the runs of the slow-down guarantees (crashes seeded
// with seed). With crashes the answered job's worker may die on its way,
// so only what holds through a crash is checked then.
func slowDownRuns(seed uint64) []simRun {
	return faultRuns(8, 12, 300*time.Millisecond, 0.03, seed, nil)
}

// slowOnce runs n "api" jobs of queue (mod names them) through a target
// that answers the first call of job id "slow down for wait", until all
// are final; it fails unless all succeeded and the one answer was given,
// and returns it.
func (s *sim) slowOnce(queue string, n int, wait time.Duration, id string, mod func(i int, sp *job.Spec)) answer {
	s.t.Helper()
	h := &slowTarget{s: s, slow: func(j *api.Job, calls int) (time.Duration, bool) {
		return wait, j.ID == id && calls == 1
	}}
	s.mux.HandleFunc("api", h.handle)
	s.enqueue(queue, n, func(i int, sp *job.Spec) {
		sp.Kind = "api"
		mod(i, sp)
	})
	s.waitFinished(queue, time.Hour)
	s.checkNoneFailed(queue)
	ans := h.given()
	if len(ans) != 1 {
		s.t.Fatalf("%d answers given, want 1", len(ans))
	}
	return ans[0]
}

// checkPaused fails if a start of queue that counts (of the slowed-down
// queue, or key) began after answer a and before its wait ended, unless
// its gate was passed before the answer (it was on its way already:
// the gate reserves a start up to a lead ahead).
func checkPaused(t *testing.T, s *sim, queue string, a answer, counts func(start) bool) {
	t.Helper()
	until := a.At.Add(a.Wait)
	for _, st := range s.startsOf(queue) {
		if !st.At.After(a.At) || !st.At.Before(until) || !counts(st) {
			continue
		}
		if at, ok := s.chaos.gatedAt(run{Queue: st.Queue, Gen: st.Gen, Ticket: st.Ticket, Begin: st.At}); !ok || at.After(a.At) {
			t.Fatalf("job %s (ticket %d) started at %v, %v after the answer to %s, whose wait was %v; its gate passed at %v",
				st.ID, st.Ticket, st.At, st.At.Sub(a.At), a.ID, a.Wait, at)
		}
	}
}

// checkFirstAfter fails unless the answered job is the first of queue
// to start, among the starts whose gate passed after the answer (a
// start reserved before it may begin up to a lead later). Under a form
// with a burst others may start at the same instant: the gate passed
// them after it.
func checkFirstAfter(t *testing.T, s *sim, queue string, a answer) {
	t.Helper()
	var after []start
	var again time.Time
	for _, st := range s.startsOf(queue) {
		if !st.At.After(a.At) {
			continue
		}
		if at, ok := s.chaos.gatedAt(run{Queue: st.Queue, Gen: st.Gen, Ticket: st.Ticket, Begin: st.At}); ok && !at.After(a.At) {
			continue
		}
		if st.ID == a.ID && again.IsZero() {
			again = st.At
		}
		after = append(after, st)
	}
	if again.IsZero() {
		t.Fatalf("job %s did not start again after the answer", a.ID)
	}
	for _, st := range after {
		if st.At.Before(again) {
			t.Fatalf("after the answer to %s at %v (wait %v), job %s (ticket %d) started at %v, before it (%v)", a.ID, a.At, a.Wait, st.ID, st.Ticket, st.At, again)
		}
	}
}

// checkSlowedRecord fails unless the answered job succeeded with its
// slow-downs counted and in its history, without a failed attempt
// (strict: no crash may have cost it one).
func checkSlowedRecord(t *testing.T, s *sim, queue string, a answer, n int, strict bool) {
	t.Helper()
	for _, j := range s.store.Jobs(queue) {
		if j.ID != a.ID {
			continue
		}
		events := 0
		for _, ev := range j.History {
			if ev.Kind == job.SlowedDown {
				events++
				if !strings.Contains(ev.Error, "retry after") || ev.DelayMs != a.Wait.Milliseconds() {
					t.Errorf("slow-down event %+v: want the answer and its wait %v", ev, a.Wait)
				}
			}
		}
		if j.SlowDowns != n || events != min(n, job.MaxHistory) {
			t.Errorf("job %s: slow_downs %d, %d slow-down events; want %d: %+v", j.ID, j.SlowDowns, events, n, j.History)
		}
		if strict && (j.Attempt != 1 || j.Status != job.Succeeded) {
			t.Errorf("job %s: attempt %d, status %s; want attempt 1 succeeded (a slow-down is not a failed attempt)", j.ID, j.Attempt, j.Status)
		}
		return
	}
	t.Fatalf("job %s not found", a.ID)
}

// A key's "slow down" holds only that key, when keys have limits of
// their own: the other keys' jobs go on starting during its wait, the
// key's own do not, and the answered job is its key's first start after
// (with crashes, which may cost it its way there, only the pause, the
// other keys' starts and the outcome are checked).
func TestGuaranteeSlowDownKey(t *testing.T) {
	eachRun(t, nil, slowDownRuns(4), func(t *testing.T, s *sim, _ slot.Config, r simRun) {
		cfg := slot.Config{
			Interval: 50 * time.Millisecond, Skew: 5 * time.Millisecond, MaxAttempts: 20,
			KeyLimits: []api.Limit{{Interval: 200 * time.Millisecond}}, KeyMaxRunning: slot.NoKeyCap,
		}
		s.createQueue("keyed", cfg)
		keyOf := map[string]string{}
		a := s.slowOnce("keyed", 60, 3*time.Second, "a3", func(i int, sp *job.Spec) {
			k := []string{"a", "b", "c"}[i%3]
			sp.Key, sp.ID = k, fmt.Sprintf("%s%d", k, i/3)
			keyOf[sp.ID] = k
		})
		strict := r.opts.CrashRate == 0
		checkPaused(t, s, "keyed", a, func(st start) bool { return keyOf[st.ID] == "a" })
		others, firstA := 0, ""
		until := a.At.Add(a.Wait)
		for _, st := range s.startsOf("keyed") {
			if st.At.After(a.At) && st.At.Before(until) && keyOf[st.ID] != "a" {
				others++
			}
			if firstA == "" && keyOf[st.ID] == "a" && !st.At.Before(until) {
				firstA = st.ID
			}
		}
		if others < 10 {
			t.Errorf("%d starts of the other keys during key a's slow-down of %v: they should go on", others, a.Wait)
		}
		if strict && firstA != a.ID {
			t.Errorf("key a's first start after its slow-down was %s, want the answered job %s", firstA, a.ID)
		}
		checkSlowedRecord(t, s, "keyed", a, 1, strict)
		if q, err := s.eng.Queue(context.Background(), "keyed"); err != nil || !q.State.SlowUntil.IsZero() {
			t.Errorf("the queue's state has a slow-down (%v, %v): a key's belongs to its key", q.State.SlowUntil, err)
		}
	})
}

// The bound: a job whose target always answers "slow down" fails after
// the queue's max_slow_downs, with the last answer, without using one of
// its attempts; the queue's other jobs succeed.
func TestSlowDownBound(t *testing.T) {
	inSim(t, simOptions{Workers: 6, Transport: memstore.TransportOptions{Jitter: 100 * time.Millisecond, DuplicateRate: 0.3}}, func(t *testing.T, s *sim) {
		s.createQueue("bound", slot.Config{Interval: 100 * time.Millisecond, MaxSlowDowns: 4})
		h := &slowTarget{s: s, slow: func(j *api.Job, calls int) (time.Duration, bool) {
			return 500 * time.Millisecond, j.ID == "never"
		}}
		s.mux.HandleFunc("api", h.handle)
		s.enqueue("bound", 10, func(i int, sp *job.Spec) {
			sp.Kind, sp.ID = "api", fmt.Sprintf("j%d", i)
			if i == 3 {
				sp.ID = "never"
			}
		})
		s.waitFinished("bound", time.Hour)
		failed := s.jobs("bound", job.Failed)
		if len(failed) != 1 || failed[0].ID != "never" {
			t.Fatalf("failed jobs %+v, want only the one always answered so", failed)
		}
		j := failed[0]
		if j.SlowDowns != 4 || j.Attempt != 1 || !strings.Contains(j.LastError, engine.ErrSlowedDownTooOften.Error()) || !strings.Contains(j.LastError, "retry after 500ms") {
			t.Fatalf("slow_downs %d, attempt %d, last error %q: want 4 slow-downs, attempt 1, and the last answer", j.SlowDowns, j.Attempt, j.LastError)
		}
		if n := len(h.given()); n != 5 {
			t.Fatalf("%d answers, want 5 (four slow-downs, and the one past the bound)", n)
		}
		if ok := s.jobs("bound", job.Succeeded); len(ok) != 9 {
			t.Fatalf("%d jobs succeeded, want 9", len(ok))
		}
	})
}

// A key without a limit of its own (only key_max_running above one) is
// no place to slow down alone: its slow-down holds the queue.
func TestSlowDownKeyWithoutLimit(t *testing.T) {
	inSim(t, simOptions{Workers: 4}, func(t *testing.T, s *sim) {
		s.createQueue("capped", slot.Config{Interval: 100 * time.Millisecond, KeyMaxRunning: 2})
		a := s.slowOnce("capped", 12, time.Second, "a1", func(i int, sp *job.Spec) {
			k := []string{"a", "b"}[i%2]
			sp.Key, sp.ID = k, fmt.Sprintf("%s%d", k, i/2)
		})
		q, err := s.eng.Queue(context.Background(), "capped")
		if err != nil || q.State.SlowDowns != 1 {
			t.Fatalf("the queue's state counts %d slow-downs (%v), want 1", q.State.SlowDowns, err)
		}
		checkPaused(t, s, "capped", a, func(start) bool { return true })
	})
}

// A job answered "slow down" keeps its place among its key's jobs,
// though a later job of its key started while it ran: on a queue whose
// keys run two jobs at once and have no limit of their own, a0 runs, a1
// of its key starts, a0 is answered. After the wait a0 starts first, at
// its own ticket.
func TestSlowDownKeepsPlaceOnKey(t *testing.T) {
	inSim(t, simOptions{Workers: 4}, func(t *testing.T, s *sim) {
		s.createQueue("two", slot.Config{Interval: 100 * time.Millisecond, Skew: 5 * time.Millisecond, KeyMaxRunning: 2})
		a1, answered := make(chan struct{}), make(chan time.Time, 1)
		s.mux.HandleFunc("api", func(_ context.Context, j *api.Job) error {
			s.recordStart(j, time.Now())
			switch {
			case j.ID == "a1":
				close(a1)
				time.Sleep(5 * time.Second) // still running when a0 is answered
			case j.ID == "a0" && len(answered) == 0 && cap(answered) == 1:
				<-a1
				answered <- time.Now()
				return target.RetryAfter(time.Second)
			}
			return nil
		})
		res := s.runKeysAB("two", 6, 2)
		at := <-answered
		end := at.Add(time.Second)
		var after []start
		for _, st := range s.startsOf("two") {
			if !st.At.Before(end) {
				after = append(after, st)
			}
		}
		if len(after) == 0 || after[0].ID != "a0" {
			t.Fatalf("the first start after the slow-down was %+v, want a0's", after)
		}
		if want := res.Jobs[0].Ticket; after[0].Ticket != want {
			t.Errorf("a0 started again at ticket %d, want its own %d", after[0].Ticket, want)
		}
		if late := after[0].At.Sub(end); late > 100*time.Millisecond {
			t.Errorf("a0 started %v after the slow-down ended", late)
		}
	})
}

// With a limit per key, two running jobs of one key both answered "slow
// down" both keep their places: after the wait each starts again at its
// own ticket, before the key's later jobs.
func TestSlowDownKeepsPlacesOfTwo(t *testing.T) {
	inSim(t, simOptions{Workers: 6}, func(t *testing.T, s *sim) {
		s.createQueue("two", slot.Config{Interval: 10 * time.Millisecond, Skew: 5 * time.Millisecond,
			KeyLimits: []api.Limit{{Interval: 100 * time.Millisecond}}, KeyMaxRunning: 2})
		var mu sync.Mutex
		running, calls := 0, map[string]int{}
		both := make(chan struct{})
		s.mux.HandleFunc("api", func(_ context.Context, j *api.Job) error {
			s.recordStart(j, time.Now())
			if j.ID != "a0" && j.ID != "a1" {
				return nil
			}
			mu.Lock()
			calls[j.ID]++
			first := calls[j.ID] == 1
			if first {
				if running++; running == 2 {
					close(both)
				}
			}
			mu.Unlock()
			if !first {
				return nil
			}
			<-both // both run: each is answered
			return target.RetryAfter(time.Second)
		})
		res := s.runKeysAB("two", 8, 4)
		var ofA []start
		for _, st := range s.startsOf("two") {
			if strings.HasPrefix(st.ID, "a") {
				ofA = append(ofA, st)
			}
		}
		// a0, a1 (answered), then a0 and a1 again, then a2, a3.
		if len(ofA) != 6 {
			t.Fatalf("%d starts of key a, want 6: %+v", len(ofA), ofA)
		}
		for _, st := range ofA[2:4] {
			if st.ID != "a0" && st.ID != "a1" {
				t.Fatalf("key a's starts after the slow-down: %+v; want a0 and a1 first", ofA[2:])
			}
			if want := res.Jobs[st.ID[1]-'0'].Ticket; st.Ticket != want {
				t.Errorf("%s started again at ticket %d, want its own %d", st.ID, st.Ticket, want)
			}
		}
	})
}

// runKeysAB runs n "api" jobs of queue until all are final and fails
// unless all succeeded: the first ofA of key a (a0, a1…), the rest of
// key b (b<i>).
func (s *sim) runKeysAB(queue string, n, ofA int) engine.EnqueueResult {
	s.t.Helper()
	res := s.enqueue(queue, n, func(i int, sp *job.Spec) {
		sp.Kind, sp.Key, sp.ID = "api", "a", fmt.Sprintf("a%d", i)
		if i >= ofA {
			sp.Key, sp.ID = "b", fmt.Sprintf("b%d", i)
		}
	})
	s.waitFinished(queue, time.Hour)
	s.checkNoneFailed(queue)
	return res
}

// lostMeterPut is a state whose first put of a key's slow-down lands and
// answers ErrConflict, as a store's write sent again after it landed may
// when another write came between.
type lostMeterPut struct {
	engine.State
	mu   sync.Mutex
	lost bool
}

func (l *lostMeterPut) PutMeter(ctx context.Context, m slot.Meter, from int64, keep time.Time) (slot.Meter, error) {
	out, err := l.State.PutMeter(ctx, m, from, keep)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && !l.lost && m.State.SlowDowns > 0 {
		l.lost = true
		return slot.Meter{}, fmt.Errorf("put meter: %w", engine.ErrConflict)
	}
	return out, err
}

// TestSlowDownKeyCountedOnce: a key's slow-down whose write landed but
// answered a conflict is read again and found counted: the key's meter
// counts the one answer once, and the job its one slow-down.
func TestSlowDownKeyCountedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lost *lostMeterPut
		s := newSim(t, simOptions{Workers: 4, Wrap: func(st engine.State) engine.State {
			lost = &lostMeterPut{State: st}
			return lost
		}})
		defer s.stop()
		s.createQueue("kc", slot.Config{Interval: 50 * time.Millisecond, KeyLimits: []api.Limit{{Interval: 200 * time.Millisecond}}})
		h := &slowTarget{s: s, slow: func(j *api.Job, calls int) (time.Duration, bool) {
			return time.Second, j.ID == "a1" && calls == 1
		}}
		s.mux.HandleFunc("api", h.handle)
		s.enqueue("kc", 4, func(i int, sp *job.Spec) { sp.Kind, sp.Key, sp.ID = "api", "a", fmt.Sprintf("a%d", i) })
		s.waitFinished("kc", time.Hour)
		if !lost.lost {
			t.Fatal("no put of the key's slow-down met the lost answer")
		}
		m, err := s.store.GetMeter(context.Background(), "kc", "a")
		if err != nil {
			t.Fatal(err)
		}
		if m.State.SlowDowns != 1 || len(h.given()) != 1 {
			t.Errorf("the key's meter counts %d slow-downs for %d answers; want 1", m.State.SlowDowns, len(h.given()))
		}
		for _, j := range s.jobs("kc", job.Succeeded) {
			if want := map[bool]int{true: 1}[j.ID == "a1"]; j.SlowDowns != want {
				t.Errorf("%s: %d slow-downs; want %d", j.ID, j.SlowDowns, want)
			}
		}
	})
}
