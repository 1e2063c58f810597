package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// debouncing is the simulation's state with the embedded store's
// debounce items, which the chaos wrapper does not pass on; with faults,
// a crash at one step of a debounce (debounceFaults.at).
type debouncing struct {
	engine.State
	engine.DebounceStore
}

// withDebounce is a simOptions.Wrap that gives the engine the store's
// debounce items, through f when it is set.
func withDebounce(f *debounceFaults) func(engine.State) engine.State {
	return func(st engine.State) engine.State {
		ds := st.(*chaosState).State.(engine.DebounceStore)
		if f == nil {
			return debouncing{st, ds}
		}
		f.State, f.DebounceStore = st, ds
		return f
	}
}

// debounceFaults crashes the first call of one step of a debounce, before
// or after the step took effect (at names it, as the test cases do).
type debounceFaults struct {
	engine.State
	engine.DebounceStore
	at string

	mu      sync.Mutex
	crashed bool
}

// crash reports whether the step named step crashes now: the first time
// it comes, if it is the one at names.
func (f *debounceFaults) crash(step string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed || f.at != step {
		return false
	}
	f.crashed = true
	return true
}

func (f *debounceFaults) didCrash() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

func (f *debounceFaults) OpenDebounce(ctx context.Context, d, prev engine.Debounce) error {
	if f.crash("before open") {
		return errCrash // the record is written, the item never opened
	}
	err := f.DebounceStore.OpenDebounce(ctx, d, prev)
	if err == nil && f.crash("after open") {
		return errCrash // opened, but the producer never heard
	}
	return err
}

// GetDebounce is slow the first time, for "slow open": the first job's
// enqueue reads the item before it opens it, and its message comes
// meanwhile.
func (f *debounceFaults) GetDebounce(ctx context.Context, queue, key string) (engine.Debounce, error) {
	if f.crash("slow open") {
		_ = clock.Sleep(ctx, 1500*time.Millisecond) // on the bubble's clock
	}
	return f.DebounceStore.GetDebounce(ctx, queue, key)
}

func (f *debounceFaults) JoinDebounce(ctx context.Context, d engine.Debounce, now time.Time) (engine.Debounce, error) {
	out, err := f.DebounceStore.JoinDebounce(ctx, d, now)
	if err == nil && f.crash("after join") {
		return out, errCrash // joined, but the producer never heard
	}
	return out, err
}

func (f *debounceFaults) CloseDebounce(ctx context.Context, queue, key, jobID string, now time.Time) (engine.Debounce, error) {
	out, err := f.DebounceStore.CloseDebounce(ctx, queue, key, jobID, now)
	if err == nil && f.crash("after close") {
		return out, errCrash // closed, but the worker died before the record took the payload
	}
	return out, err
}

func (f *debounceFaults) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if j.DebounceKey == "" && j.Ticket != from.Ticket {
		if old, err := f.State.GetJob(ctx, j.Ref()); err == nil && old.DebounceKey != "" && f.crash("before record") {
			return errCrash // the new ticket's message went, the record never took it
		}
	}
	return f.State.UpdateJob(ctx, j, from)
}

func (f *debounceFaults) DeleteDebounce(ctx context.Context, queue, key, jobID string) error {
	if f.crash("before delete") {
		return errCrash // the record took the payload; the closed item stays
	}
	return f.DebounceStore.DeleteDebounce(ctx, queue, key, jobID)
}

// debounceRun is what a debounce simulation saw: the producers' answers
// (or errors) by enqueue, and the starts of the "deb" handler.
type debounceRun struct {
	mu     sync.Mutex
	starts []debStart
}

type debStart struct {
	ID string
	N  int
	At time.Time
}

type debEnqueue struct {
	ID  string
	N   int
	At  time.Time
	Ans engine.Accepted
	Err error
}

func (r *debounceRun) handle(_ context.Context, j *api.Job) error {
	var p struct{ N int }
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts = append(r.starts, debStart{ID: j.ID, N: p.N, At: time.Now()})
	return nil
}

func (r *debounceRun) started() []debStart {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]debStart(nil), r.starts...)
}

// burst enqueues n jobs of debounce key key, one at a time, every apart,
// with payloads {"n": from+i} and ids name-i.
func burst(s *sim, queue, key, name string, from, n int, apart, debounce time.Duration) []debEnqueue {
	var out []debEnqueue
	d := api.Duration(debounce)
	for i := range n {
		e := debEnqueue{ID: fmt.Sprintf("%s-%d", name, i), N: from + i, At: time.Now()}
		req := job.EnqueueRequest{Queue: queue, Job: &job.Spec{ID: e.ID, Kind: "deb", Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, e.N)),
			DebounceKey: key, Debounce: &d}}
		res, err := s.eng.Enqueue(context.Background(), req)
		e.Err = err
		if err == nil {
			e.Ans = res.Jobs[0]
		}
		out = append(out, e)
		if i < n-1 {
			_ = clock.Sleep(context.Background(), apart)
		}
	}
	return out
}

// checkDebounced checks what every debounce guarantees: no job starts
// twice; a job answered queued starts; a job answered debounced is folded
// into a job that starts with a payload enqueued no earlier than its own;
// the last payload enqueued starts. An enqueue that failed may have been
// folded in or run alone, never twice.
func checkDebounced(t *testing.T, enq []debEnqueue, starts []debStart) {
	t.Helper()
	byID := map[string]debStart{}
	for _, st := range starts {
		if prev, dup := byID[st.ID]; dup {
			t.Fatalf("job %s started twice: at %v with n=%d and at %v with n=%d", st.ID, prev.At, prev.N, st.At, st.N)
		}
		byID[st.ID] = st
	}
	for _, e := range enq {
		if e.Err != nil {
			continue
		}
		into := e.Ans.JobID
		if e.Ans.Status == api.StatusDebounced {
			into = e.Ans.DebouncedInto
		}
		st, ok := byID[into]
		switch {
		case !ok:
			t.Fatalf("%s answered %s (into %q) never started; starts: %+v", e.ID, e.Ans.Status, into, starts)
		case st.N < e.N:
			t.Fatalf("%s (n=%d) answered %s into %s, which started with the older payload n=%d", e.ID, e.N, e.Ans.Status, into, st.N)
		}
	}
	last := enq[len(enq)-1].N
	for _, st := range starts {
		if st.N == last {
			return
		}
	}
	t.Fatalf("the last payload (n=%d) never started; starts: %+v", last, starts)
}

// TestDebounceBurst is issue 59's debounce: 50 jobs of one debounce key
// enqueued over 2 s with debounce 1s start once, with the last payload,
// a second or more after the last enqueue; each answer but the first is
// debounced into the first job.
func TestDebounceBurst(t *testing.T) {
	inSim(t, simOptions{Workers: 4, Wrap: withDebounce(nil)}, func(t *testing.T, s *sim) {
		r := &debounceRun{}
		s.mux.HandleFunc("deb", r.handle)
		enq := burst(s, "deb", "k", "a", 0, 50, 40*time.Millisecond, time.Second)
		lastAt := enq[len(enq)-1].At
		_ = clock.Sleep(context.Background(), time.Minute)
		starts := r.started()
		if len(starts) != 1 {
			t.Fatalf("%d starts, want 1: %+v", len(starts), starts)
		}
		st := starts[0]
		if st.N != 49 {
			t.Errorf("started with payload n=%d, want the last, 49", st.N)
		}
		if st.At.Before(lastAt.Add(time.Second)) || st.At.After(lastAt.Add(3*time.Second)) {
			t.Errorf("started %v after the last enqueue, want 1s to 3s", st.At.Sub(lastAt))
		}
		first := enq[0].Ans
		if first.Status == api.StatusDebounced || first.JobID != "a-0" {
			t.Fatalf("first answer %+v, want job a-0 waiting", first)
		}
		for _, e := range enq[1:] {
			if e.Err != nil || e.Ans.Status != api.StatusDebounced || e.Ans.DebouncedInto != "a-0" {
				t.Fatalf("%s answered %+v (error %v), want debounced into a-0", e.ID, e.Ans, e.Err)
			}
		}
		if st.ID != "a-0" {
			t.Errorf("job %s started, want a-0", st.ID)
		}
		checkDebounced(t, enq, starts)
		s.waitFinished("deb", time.Minute)
	})
}

// TestDebounceCrashes crashes a producer or a worker at each step of a
// debounce, on the embedded store: nothing answered is lost, nothing
// starts twice, and a second burst after the crash debounces again.
func TestDebounceCrashes(t *testing.T) {
	for _, at := range []string{"before open", "slow open", "after open", "after join", "after close", "before record", "before delete"} {
		t.Run(at, func(t *testing.T) {
			f := &debounceFaults{at: at}
			inSim(t, simOptions{Workers: 4, Wrap: withDebounce(f)}, func(t *testing.T, s *sim) {
				r := &debounceRun{}
				s.mux.HandleFunc("deb", r.handle)
				enq := burst(s, "deb", "k", "a", 0, 50, 40*time.Millisecond, time.Second)
				_ = clock.Sleep(context.Background(), 2*time.Minute)
				if !f.didCrash() {
					t.Fatalf("no crash %s", at)
				}
				checkDebounced(t, enq, r.started())
				n := len(r.started())
				enq2 := burst(s, "deb", "k", "b", 100, 5, 100*time.Millisecond, time.Second)
				_ = clock.Sleep(context.Background(), time.Minute)
				starts := r.started()
				if len(starts) != n+1 {
					t.Fatalf("the second burst made %d starts, want 1: %+v", len(starts)-n, starts[n:])
				}
				checkDebounced(t, enq2, starts[n:])
				checkDebounced(t, append(enq, enq2...), starts)
				s.waitFinished("deb", time.Minute)
			})
		})
	}
}

// TestDebounceJoinsAtOnce runs producers of one debounce key at once,
// each enqueueing jobs as fast as the store answers, with a debounce
// shorter than their run: the debounce closes under their joins, and
// whatever they were answered, each payload folded in starts once.
func TestDebounceJoinsAtOnce(t *testing.T) {
	inSim(t, simOptions{Workers: 4, Wrap: withDebounce(nil)}, func(t *testing.T, s *sim) {
		r := &debounceRun{}
		s.mux.HandleFunc("deb", r.handle)
		var mu sync.Mutex
		var all []debEnqueue
		var wg sync.WaitGroup
		for p := range 6 {
			wg.Go(func() {
				enq := burst(s, "deb", "k", fmt.Sprintf("p%d", p), p*1000, 40, 7*time.Millisecond, 50*time.Millisecond)
				mu.Lock()
				all = append(all, enq...)
				mu.Unlock()
			})
		}
		wg.Wait()
		_ = clock.Sleep(context.Background(), time.Minute)
		starts := r.started()
		for _, e := range all {
			if e.Err != nil {
				t.Fatalf("%s: %v", e.ID, e.Err)
			}
		}
		byID := map[string]int{}
		for _, st := range starts {
			byID[st.ID]++
			if byID[st.ID] > 1 {
				t.Fatalf("job %s started twice", st.ID)
			}
		}
		for _, e := range all {
			into := e.Ans.JobID
			if e.Ans.Status == api.StatusDebounced {
				into = e.Ans.DebouncedInto
			}
			if byID[into] != 1 {
				t.Fatalf("%s answered %s into %s, which started %d times", e.ID, e.Ans.Status, into, byID[into])
			}
		}
		if len(starts) >= len(all) {
			t.Fatalf("%d starts for %d jobs: nothing debounced", len(starts), len(all))
		}
		s.waitFinished("deb", time.Minute)
	})
}

// TestDebounceRefused: a debounced job on a queue with a waiting room,
// or on a state store without debounce items, is refused, naming the
// field, and nothing is written.
func TestDebounceRefused(t *testing.T) {
	d := api.Duration(time.Second)
	spec := job.Spec{Kind: "sim", DebounceKey: "k", Debounce: &d}
	inSim(t, simOptions{Wrap: withDebounce(nil)}, func(t *testing.T, s *sim) {
		s.createQueue("room", slot.Config{Interval: time.Second, BookAhead: 5})
		_, err := s.eng.Enqueue(context.Background(), job.EnqueueRequest{Queue: "room", Jobs: []job.Spec{{Kind: "sim"}, spec}})
		var ie *input.Error
		if !errors.As(err, &ie) || ie.Field != "jobs[1].debounce_key" {
			t.Fatalf("enqueue to a bounded queue: %v, want an input error of jobs[1].debounce_key", err)
		}
		if n := len(s.store.Jobs("room")); n != 0 {
			t.Fatalf("%d jobs written", n)
		}
	})
	inSim(t, simOptions{}, func(t *testing.T, s *sim) {
		_, err := s.eng.Enqueue(context.Background(), job.EnqueueRequest{Queue: "plain", Job: &spec})
		if !errors.Is(err, engine.ErrNoDebounce) {
			t.Fatalf("enqueue on a store without debounces: %v, want ErrNoDebounce", err)
		}
		if _, err := s.store.GetQueue(context.Background(), "plain"); !errors.Is(err, engine.ErrQueueNotFound) {
			t.Fatalf("the refused call created its queue: %v", err)
		}
	})
}

// TestDebounceAfterCancel: a job cancelled while it waits for its
// debounce leaves its item open; a job enqueued after the debounce's end
// joins nothing (it would never start) and opens the key's item afresh.
func TestDebounceAfterCancel(t *testing.T) {
	inSim(t, simOptions{Workers: 2, Wrap: withDebounce(nil)}, func(t *testing.T, s *sim) {
		r := &debounceRun{}
		s.mux.HandleFunc("deb", r.handle)
		enq := burst(s, "deb", "k", "a", 0, 3, 100*time.Millisecond, time.Second)
		if _, err := s.eng.CancelJob(context.Background(), job.Ref{Queue: "deb", ID: "a-0"}); err != nil {
			t.Fatal(err)
		}
		_ = clock.Sleep(context.Background(), 5*time.Second)
		late := burst(s, "deb", "k", "b", 10, 1, 0, time.Second)
		if a := late[0].Ans; late[0].Err != nil || a.Status == api.StatusDebounced {
			t.Fatalf("enqueued after the cancelled job's debounce: %+v (error %v), want a job of its own", a, late[0].Err)
		}
		_ = clock.Sleep(context.Background(), time.Minute)
		starts := r.started()
		if len(starts) != 1 || starts[0].ID != "b-0" || starts[0].N != 10 {
			t.Fatalf("starts %+v, want b-0 alone; first burst %+v", starts, enq)
		}
	})
}
