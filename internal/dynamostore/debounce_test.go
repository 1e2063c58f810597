package dynamostore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// TestDebounceJoinsAgainstClose races joins from several goroutines
// against closers of one debounce item on DynamoDB Local: one close
// wins, it hands over the payload of a join that landed, and no join
// lands after it.
func TestDebounceJoinsAgainstClose(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	const queue, key = "deb", "k"
	for round := range 5 {
		id := fmt.Sprintf("job-%d", round)
		prev, err := st.GetDebounce(ctx, queue, key)
		if err != nil {
			t.Fatal(err)
		}
		open := engine.Debounce{Queue: queue, Gen: 1, Key: key, JobID: id, Until: time.Now().Add(30 * time.Millisecond), Payload: json.RawMessage(`"open"`)}
		if err := st.OpenDebounce(ctx, open, prev); err != nil {
			t.Fatalf("round %d: open over %+v: %v", round, prev, err)
		}
		var closed atomic.Bool
		var mu sync.Mutex
		landed := map[string]bool{`"open"`: true}
		var lateJoins []string
		var wins []engine.Debounce
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Go(func() {
				for i := 0; !closed.Load() && i < 400; i++ {
					p := fmt.Sprintf(`"%d-%d"`, g, i)
					wasClosed := closed.Load()
					// Ends 0 to 2 ms ahead: the closers find gaps often.
					until := time.Now().Add(time.Duration(i%3) * time.Millisecond)
					_, err := st.JoinDebounce(ctx, engine.Debounce{Queue: queue, Gen: 1, Key: key, Until: until, Payload: json.RawMessage(p)}, time.Now())
					switch {
					case err == nil:
						mu.Lock()
						landed[p] = true
						if wasClosed {
							lateJoins = append(lateJoins, p)
						}
						mu.Unlock()
					case !errors.Is(err, engine.ErrConflict):
						t.Error(err)
						return
					}
				}
			})
		}
		for range 3 {
			wg.Go(func() {
				deadline := time.Now().Add(20 * time.Second)
				for !closed.Load() && time.Now().Before(deadline) {
					d, err := st.CloseDebounce(ctx, queue, key, id, time.Now())
					if errors.Is(err, engine.ErrConflict) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					wins = append(wins, d)
					mu.Unlock()
					closed.Store(true)
				}
			})
		}
		wg.Wait()
		if len(wins) == 0 {
			t.Fatalf("round %d: no close won", round)
		}
		after, err := st.GetDebounce(ctx, queue, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wins {
			if !w.Closed || w.JobID != id || string(w.Payload) != string(wins[0].Payload) {
				t.Fatalf("round %d: closes answered %+v", round, wins)
			}
		}
		switch {
		case !landed[string(wins[0].Payload)]:
			t.Fatalf("round %d: the close handed over %s, which no join landed", round, wins[0].Payload)
		case len(lateJoins) > 0:
			t.Fatalf("round %d: joins landed after the close: %v", round, lateJoins)
		case !after.Closed || string(after.Payload) != string(wins[0].Payload):
			t.Fatalf("round %d: after the close the item is %+v, want closed with %s", round, after, wins[0].Payload)
		}
		if _, err := st.JoinDebounce(ctx, engine.Debounce{Queue: queue, Gen: 1, Key: key, Until: time.Now().Add(time.Hour), Payload: json.RawMessage(`"late"`)}, time.Now()); !errors.Is(err, engine.ErrConflict) {
			t.Fatalf("round %d: a join after the close: %v, want ErrConflict", round, err)
		}
		if round%2 == 0 {
			if err := st.DeleteDebounce(ctx, queue, key, id); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// debFaults crashes the first call of one step of a debounce on the
// DynamoDB store (at), as internal/engine's simulations do on the
// embedded one.
type debFaults struct {
	*dynamostore.Store
	at      string
	crashed atomic.Bool
	// looked closes at the second read of an item, for "slow open".
	looked    chan struct{}
	lookedOne sync.Once
}

// GetDebounce, for "slow open", holds the first read (an enqueue's,
// before its open) until another read returned (a worker's look, or
// another enqueue's): the job's message may come before its item.
func (f *debFaults) GetDebounce(ctx context.Context, queue, key string) (engine.Debounce, error) {
	if f.crash("slow open") {
		select {
		case <-f.looked:
		case <-ctx.Done():
			return engine.Debounce{}, ctx.Err()
		}
	}
	d, err := f.Store.GetDebounce(ctx, queue, key)
	if f.at == "slow open" && f.crashed.Load() {
		f.lookedOne.Do(func() { close(f.looked) })
	}
	return d, err
}

var errDebCrash = errors.New("simulated crash")

func (f *debFaults) crash(step string) bool {
	return f.at == step && f.crashed.CompareAndSwap(false, true)
}

func (f *debFaults) OpenDebounce(ctx context.Context, d, prev engine.Debounce) error {
	if f.crash("before open") {
		return errDebCrash
	}
	return f.Store.OpenDebounce(ctx, d, prev)
}

func (f *debFaults) JoinDebounce(ctx context.Context, d engine.Debounce, now time.Time) (engine.Debounce, error) {
	out, err := f.Store.JoinDebounce(ctx, d, now)
	if err == nil && f.crash("after join") {
		return out, errDebCrash
	}
	return out, err
}

func (f *debFaults) CloseDebounce(ctx context.Context, queue, key, jobID string, now time.Time) (engine.Debounce, error) {
	out, err := f.Store.CloseDebounce(ctx, queue, key, jobID, now)
	if err == nil && f.crash("after close") {
		return out, errDebCrash
	}
	return out, err
}

func (f *debFaults) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if j.DebounceKey == "" && j.Ticket != from.Ticket {
		if old, err := f.Store.GetJob(ctx, j.Ref()); err == nil && old.DebounceKey != "" && f.crash("before record") {
			return errDebCrash
		}
	}
	return f.Store.UpdateJob(ctx, j, from)
}

// TestDebounceCrashesOnDynamoDB: producers enqueue jobs of one debounce
// key at once on DynamoDB Local, with a debounce short enough that it
// closes under their joins several times, and a crash at one step:
// no job starts twice, and every job answered starts, or is folded
// into a job that starts, with a payload of its producer no older than
// its own.
func TestDebounceCrashesOnDynamoDB(t *testing.T) {
	for _, at := range []string{"before open", "slow open", "after join", "after close", "before record"} {
		t.Run(at, func(t *testing.T) {
			sim := newLocalSim(t, memstore.TransportOptions{VisibilityTimeout: time.Second})
			f := &debFaults{Store: sim.store, at: at, looked: make(chan struct{})}
			var mu sync.Mutex
			starts := map[string][]string{} // job id → payloads it started with
			runner := runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
				mu.Lock()
				starts[j.ID] = append(starts[j.ID], string(j.Payload))
				mu.Unlock()
				return nil
			})
			// A lead and a skew that cover DynamoDB Local's writes on a busy
			// host, as the store's other simulations give them; a record
			// grace short enough that a job left without its item (its
			// enqueue crashed before the open) runs alone within the test.
			eng := engine.New(engine.Options{State: f, Transport: sim.tr, Runner: runner, Lead: 100 * time.Millisecond, RecordGrace: 2 * time.Second})
			if _, err := eng.CreateQueue(t.Context(), "deb", slot.Config{Interval: 100 * time.Millisecond, Skew: 25 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			sim.work(4, eng, nil)
			sim.resumeEvery(time.Second, eng, nil)

			type answer struct {
				p, i int
				into string
			}
			var answers []answer
			var wg sync.WaitGroup
			// Producers enqueue back to back: on DynamoDB Local a call
			// takes about this long, so the debounce ends now and then
			// under their joins.
			d := api.Duration(40 * time.Millisecond)
			for p := range 4 {
				wg.Go(func() {
					for i := range 25 {
						sp := job.Spec{Kind: "deb", Payload: json.RawMessage(fmt.Sprintf(`{"p":%d,"i":%d}`, p, i)), DebounceKey: "k", Debounce: &d}
						res, err := eng.Enqueue(t.Context(), job.EnqueueRequest{Queue: "deb", Job: &sp})
						if err == nil {
							a := res.Jobs[0]
							into := a.JobID
							if a.Status == api.StatusDebounced {
								into = a.DebouncedInto
							}
							mu.Lock()
							answers = append(answers, answer{p, i, into})
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			// Done when every job answered has started and no message
			// is left (a duplicate start would have come).
			done := func() bool {
				mu.Lock()
				defer mu.Unlock()
				for _, a := range answers {
					if len(starts[a.into]) == 0 {
						return false
					}
				}
				return sim.tr.Pending() == 0
			}
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(2 * time.Minute)
			for !done() {
				select {
				case <-tick.C:
				case <-deadline:
					t.Fatalf("not done after 2 minutes: %d answers, %d jobs started, %d messages pending", len(answers), len(starts), sim.tr.Pending())
				}
			}
			sim.stop()
			if !f.crashed.Load() {
				t.Fatalf("no crash %s", at)
			}
			mu.Lock()
			defer mu.Unlock()
			for id, ps := range starts {
				if len(ps) > 1 {
					t.Fatalf("job %s started %d times: %v", id, len(ps), ps)
				}
			}
			for _, a := range answers {
				ps := starts[a.into]
				if len(ps) != 1 {
					t.Fatalf("producer %d's job %d went into %s, which started %d times", a.p, a.i, a.into, len(ps))
				}
				var got struct{ P, I int }
				if err := json.Unmarshal([]byte(ps[0]), &got); err != nil {
					t.Fatal(err)
				}
				if got.P == a.p && got.I < a.i {
					t.Fatalf("producer %d's job %d went into %s, which started with its older payload %s", a.p, a.i, a.into, ps[0])
				}
			}
			if len(starts) >= len(answers) {
				t.Fatalf("%d starts for %d jobs answered: nothing debounced", len(starts), len(answers))
			}
			t.Logf("%d jobs answered, %d starts", len(answers), len(starts))
		})
	}
}
