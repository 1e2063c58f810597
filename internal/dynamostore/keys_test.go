package dynamostore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// TestKeyedLimitsOnDynamoDB: on DynamoDB Local, with real concurrency,
// producers enqueue jobs over a few keys while workers start them through
// duplicate deliveries, on a queue under a rate whose keys each have a
// rate of their own. At the starts the gate reserved every key's starts
// keep the key's rate and all starts keep the queue's (the skew the one
// allowance; a target begins at most a skew after its reserved start,
// which the handler checks); a key's jobs begin in ticket order, and
// under the default cap one at a time; each attempt begins once, and
// every job succeeds.
func TestKeyedLimitsOnDynamoDB(t *testing.T) {
	// The job's record keeps its reserved start as a number that rounds
	// it by some nanoseconds; the meter keeps it exactly.
	const roundOff = time.Microsecond
	for _, c := range []struct {
		name string
		cap  int
		// hold: the first handlers wait until two jobs of one key run at
		// once (release), so that a cap above one is seen used.
		hold bool
	}{{"one at a time", 0, false}, {"no cap", slot.NoKeyCap, false}, {"two at a time", 2, true}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			sim := newLocalSim(t, memstore.TransportOptions{VisibilityTimeout: 2 * time.Second, DuplicateRate: 0.2, Seed: 5})
			st, tr := sim.store, sim.tr
			type begin struct {
				id, key       string
				ticket        int64
				attempt       int
				at, end, gate time.Time
			}
			var (
				mu      sync.Mutex
				begins  []begin
				running = map[string]int{} // runs of each key under way
				paired  bool               // two runs of one key were under way at once
				release = make(chan struct{})
			)
			runner := runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
				b := begin{id: j.ID, key: j.Key, ticket: j.Ticket, attempt: j.Attempt, at: time.Now(), gate: j.StartedAt}
				mu.Lock()
				running[j.Key]++
				paired = paired || running[j.Key] >= 2
				mu.Unlock()
				if c.hold {
					// Bounded well inside the lease, so no run is taken
					// for lost while it waits.
					select {
					case <-release:
					case <-time.After(3 * time.Second):
					}
				}
				b.end = time.Now()
				mu.Lock()
				running[j.Key]--
				begins = append(begins, b)
				mu.Unlock()
				return nil
			})
			eng := testenv.NewEngine(t, engine.Options{State: st, Transport: tr, Runner: runner, NoAutoCreate: true, Lease: 5 * time.Second, RecordGrace: time.Second,
				// The writes between the gate and the start (the key's
				// meter, the claim) on a loaded DynamoDB Local.
				Lead: 100 * time.Millisecond})
			cfg := slot.Config{
				Rate: api.Rate{N: 20, Per: time.Second}, Burst: 1, Skew: 20 * time.Millisecond,
				KeyLimits:     []api.Limit{{Rate: api.Rate{N: 4, Per: time.Second}}},
				KeyMaxRunning: c.cap, MaxAttempts: 5,
			}
			const queue, keys, producers, perProducer = "keyed", 5, 6, 8
			if _, err := eng.CreateQueue(ctx, queue, cfg); err != nil {
				t.Fatal(err)
			}
			sim.work(8, eng, nil)
			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					rnd := rand.New(rand.NewPCG(uint64(p), 11))
					for i := range perProducer {
						spec := job.Spec{ID: fmt.Sprintf("p%d-%d", p, i), Kind: "sim", Key: fmt.Sprintf("k%d", rnd.IntN(keys))}
						if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: queue, Job: &spec}); err != nil {
							t.Errorf("enqueue: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			if c.hold {
				testenv.WaitFor(t, "two jobs of one key running at once", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return paired
				})
				close(release)
			}
			total := producers * perProducer
			defer func() {
				if t.Failed() {
					for p := range producers {
						for i := range perProducer {
							j, err := st.GetJob(ctx, job.Ref{Queue: queue, ID: fmt.Sprintf("p%d-%d", p, i)})
							if j.Status != job.Succeeded {
								t.Logf("%s: %s ticket %d slot %v key %s history %+v %v", j.ID, j.Status, j.Ticket, j.SlotAt, j.Key, j.History, err)
							}
						}
					}
				}
			}()
			testenv.WaitFor(t, fmt.Sprintf("%d jobs succeeded", total), func() bool {
				for p := range producers {
					for i := range perProducer {
						j, err := st.GetJob(ctx, job.Ref{Queue: queue, ID: fmt.Sprintf("p%d-%d", p, i)})
						if err != nil || j.Status != job.Succeeded {
							return false
						}
					}
				}
				return true
			})
			mu.Lock()
			defer mu.Unlock()
			slices.SortFunc(begins, func(a, b begin) int { return a.at.Compare(b.at) })
			seen := map[string]bool{}
			all := make([]time.Time, len(begins))
			byKey := map[string][]begin{}
			for i, b := range begins {
				k := fmt.Sprintf("%s#%d", b.id, b.attempt)
				if seen[k] {
					t.Fatalf("attempt %d of %s began twice", b.attempt, b.id)
				}
				seen[k] = true
				all[i] = b.gate
				if b.at.Before(b.gate) {
					t.Fatalf("attempt %d of %s began %v before the start the gate reserved", b.attempt, b.id, b.gate.Sub(b.at))
				}
				byKey[b.key] = append(byKey[b.key], b)
			}
			if br := slot.Breaches(cfg.LimitList(), cfg.Skew+roundOff, all); len(br) > 0 {
				t.Fatalf("%d breaches of the queue's %v; first: starts %d and %d %v too close", len(br), cfg.LimitList(), br[0].I, br[0].J, br[0].By)
			}
			most := 0 // the most jobs of one key that ran at once
			for key, bs := range byKey {
				at := make([]time.Time, len(bs))
				for i, b := range bs {
					at[i] = b.gate
					if i > 0 && b.ticket <= bs[i-1].ticket {
						t.Fatalf("key %s: ticket %d began after ticket %d", key, b.ticket, bs[i-1].ticket)
					}
				}
				if limit := max(1, c.cap); c.cap != slot.NoKeyCap {
					spans := make([]timeline.Span, len(bs))
					for i, b := range bs {
						spans[i] = timeline.Span{Begin: b.at, End: b.end}
					}
					n := timeline.MostAtOnce(spans)
					if n > limit {
						t.Fatalf("key %s: %d of its jobs ran at once, above its cap %d", key, n, limit)
					}
					most = max(most, n)
				}
				if br := slot.Breaches(cfg.KeyLimits, cfg.Skew+roundOff, at); len(br) > 0 {
					t.Fatalf("key %s: %d breaches of %v; first: starts %d and %d %v too close", key, len(br), cfg.KeyLimits, br[0].I, br[0].J, br[0].By)
				}
			}
			if c.cap > 1 && most < c.cap {
				t.Fatalf("no key ran more than %d jobs at once under a cap of %d: the test never used it", most, c.cap)
			}
		})
	}
}
