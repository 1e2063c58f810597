package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// txHolds is a DynamoDBAPI over DynamoDB Local that answers as real
// DynamoDB does while a transaction holds an item, which DynamoDB Local
// never does: a PutItem, UpdateItem or DeleteItem of an item that an
// in-flight TransactWriteItems touches fails with
// TransactionConflictException. Each transaction stays in flight for hold
// before it is sent (a transaction takes DynamoDB longer than a single
// write: two phases over its items).
type txHolds struct {
	dynamostore.DynamoDBAPI
	hold time.Duration

	mu   sync.Mutex
	held map[string]int // "pk sk" → transactions in flight over it

	conflicts atomic.Int64 // single writes answered TransactionConflictException
	onState   atomic.Int64 // transactions that touched a state item
	changes   atomic.Int64 // single writes of a state item's config_change
}

func itemID(m map[string]types.AttributeValue) string {
	pk, _ := m["pk"].(*types.AttributeValueMemberS)
	sk, _ := m["sk"].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return ""
	}
	return pk.Value + " " + sk.Value
}

func (x *txHolds) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	var ids []string
	for _, it := range in.TransactItems {
		switch {
		case it.Update != nil:
			ids = append(ids, itemID(it.Update.Key))
		case it.Put != nil:
			ids = append(ids, itemID(it.Put.Item))
		case it.Delete != nil:
			ids = append(ids, itemID(it.Delete.Key))
		case it.ConditionCheck != nil:
			ids = append(ids, itemID(it.ConditionCheck.Key))
		}
	}
	x.mu.Lock()
	for _, id := range ids {
		x.held[id]++
		if len(id) > 6 && id[len(id)-6:] == " state" {
			x.onState.Add(1)
		}
	}
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		for _, id := range ids {
			x.held[id]--
		}
		x.mu.Unlock()
	}()
	time.Sleep(x.hold) // the transaction's time in flight (a model of its latency)
	return x.DynamoDBAPI.TransactWriteItems(ctx, in, optFns...)
}

// refuse reports whether a single write of item id meets a transaction in
// flight, counting it.
func (x *txHolds) refuse(id string) error {
	x.mu.Lock()
	n := x.held[id]
	x.mu.Unlock()
	if n == 0 {
		return nil
	}
	x.conflicts.Add(1)
	return &types.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}
}

func (x *txHolds) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := x.refuse(itemID(in.Key)); err != nil {
		return nil, err
	}
	if slices.Contains(slices.Collect(maps.Values(in.ExpressionAttributeNames)), "config_change") && strings.HasSuffix(itemID(in.Key), " state") {
		x.changes.Add(1)
	}
	return x.DynamoDBAPI.UpdateItem(ctx, in, optFns...)
}

func (x *txHolds) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := x.refuse(itemID(in.Item)); err != nil {
		return nil, err
	}
	return x.DynamoDBAPI.PutItem(ctx, in, optFns...)
}

func (x *txHolds) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := x.refuse(itemID(in.Key)); err != nil {
		return nil, err
	}
	return x.DynamoDBAPI.DeleteItem(ctx, in, optFns...)
}

// Configure against a busy queue, on DynamoDB Local with real concurrency
// and DynamoDB's answer to a write that meets a transaction modelled
// (txHolds): eight workers take tickets and pass the gate, a hundred of
// each a second between them (two hundred writes a second on the queue's
// state item, as many as DynamoDB Local keeps up with here), while thirty
// configures change the queue's limits. No take or gate meets a transaction of the configure (each
// such meeting is a retry after backoff, and a start late), none fails,
// none is lost (the ticket counter holds every take), and a worker that
// hears its limits changed reads the queue's new ones at once.
func TestConfigureBesideBusyGates(t *testing.T) {
	ctx := t.Context()
	api := newClient(t, nil, fastRetries)
	model := &txHolds{DynamoDBAPI: api, hold: 20 * time.Millisecond, held: map[string]int{}}
	st := dynamostore.New(model, newTable(t, api), dynamostore.Options{})
	const queue, workers, configures = "busy", 8, 30
	limits := func(i int) slot.Limits {
		return slot.Limits{{Interval: time.Millisecond + time.Duration(i)*10*time.Microsecond}}
	}
	cfg := slot.Config{Limits: limits(0)}.WithDefaults()
	cfg.Skew = 0
	if err := st.CreateQueue(ctx, engine.Queue{Name: queue, Config: cfg, CreatedAt: base}); err != nil {
		t.Fatal(err)
	}

	var takes, starts, stale atomic.Int64
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	stop := make(chan struct{})
	pace := time.NewTicker(10 * time.Millisecond) // a take and a start each tick
	defer pace.Stop()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			q, err := st.GetQueue(ctx, queue)
			if err != nil {
				fail("worker %d: get queue: %v", w, err)
				return
			}
			// reread reads the queue after ErrLimitChanged: its limits
			// must be new (the state item refused the old ones).
			reread := func() bool {
				was := q.Config.LimitList().Signature()
				if q, err = st.GetQueue(ctx, queue); err != nil {
					fail("worker %d: get queue: %v", w, err)
					return false
				}
				if q.Config.LimitList().Signature() == was {
					stale.Add(1)
				}
				return true
			}
			for {
				select {
				case <-stop:
					return
				case <-pace.C:
				}
				tk, err := st.Take(ctx, engine.TakeRequest{Queue: queue, N: 1, Limits: q.Config.LimitList(), Now: time.Now(), Gen: q.Gen, OutOfLine: true})
				if errors.Is(err, engine.ErrLimitChanged) {
					if !reread() {
						return
					}
					continue
				}
				if err != nil {
					fail("worker %d: take: %v", w, err)
					return
				}
				takes.Add(1)
				for range 3 {
					_, err = st.Gate(ctx, engine.GateRequest{Queue: queue, Ticket: tk.First, Limits: q.Config.LimitList(), Now: time.Now(), Scheduled: true, Gen: q.Gen})
					var gate *engine.GateError
					if errors.Is(err, engine.ErrLimitChanged) {
						if !reread() {
							return
						}
						continue
					}
					if errors.As(err, &gate) {
						continue // not yet: its opening
					}
					if err != nil {
						fail("worker %d: gate: %v", w, err)
						return
					}
					starts.Add(1)
					break
				}
			}
		})
	}
	was := cfg.LimitList()
	// The workers start once they have read the queue: the configures
	// begin with them at work, and go on past configures until a gate
	// has passed beside them (a fast emulator runs 30 of them before
	// the workers' first tick).
	testenv.WaitFor(t, "a first start before the configures", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return starts.Load() > 0 || len(failures) > 0
	})
	began, before := time.Now(), starts.Load()
	last := 0
	for i := 1; i <= configures || starts.Load() == before && time.Since(began) < time.Minute; i++ {
		last = i
		if i > configures {
			// Past the first, each configure waits for the workers'
			// next take: on a loaded host a worker's read, take and gate
			// take longer than a configure, and configures back to back
			// would change the limits under every one of them.
			taken := takes.Load()
			testenv.WaitFor(t, "a take between configures", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return takes.Load() > taken || len(failures) > 0
			})
		}
		next := cfg
		next.Limits = limits(i)
		q, err := st.GetQueue(ctx, queue)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: queue, Gen: q.Gen, Config: next,
			Reslot: func(s slot.State) (slot.State, *engine.Rebooked, error) {
				return slot.Seed(s, was, next.LimitList(), next.Skew), nil, nil
			}}); err != nil {
			t.Errorf("configure %d: %v", i, err)
		}
		was = next.LimitList()
	}
	close(stop)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	q, err := st.GetQueue(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d takes, %d starts in %v beside %d configures (%d writes of the state item by them); %d writes met a transaction, %d transactions on the state item",
		takes.Load(), starts.Load(), time.Since(began).Round(time.Millisecond), last, model.changes.Load(), model.conflicts.Load(), model.onState.Load())
	if n := model.conflicts.Load(); n > 0 {
		t.Errorf("%d takes and gates met a configure's transaction on the queue's state item (TransactionConflictException): each is a retry after backoff, and a start late", n)
	}
	if q.State.Ticket != takes.Load() {
		t.Errorf("the ticket counter is at %d after %d takes: a configure lost a take", q.State.Ticket, takes.Load())
	}
	if s := q.Config.LimitList().Signature(); s != limits(last).Signature() {
		t.Errorf("the queue's limits are %s after the configures, want %s", s, limits(last).Signature())
	}
	if n := stale.Load(); n > 0 {
		t.Errorf("%d times a worker told its limits had changed read the queue's old ones again", n)
	}
	if starts.Load() == before {
		t.Error("no gate passed beside the configures")
	}
}

// namesAttr reports whether an UpdateItem of an item with sort key sk
// names attribute attr: configChange picks a configure's write of the
// state item, adoption its adoption of the change on the config item.
func namesAttr(sk, attr string) func(in any) bool {
	return func(in any) bool {
		u, ok := in.(*dynamodb.UpdateItemInput)
		return ok && skIs(u.Key, sk) && slices.Contains(slices.Collect(maps.Values(u.ExpressionAttributeNames)), attr)
	}
}

var (
	configChange = namesAttr("state", "config_change")
	adoption     = namesAttr("config", "config_change")
)

// TestReconfigureFaults: configure's writes meet what real DynamoDB does
// to a busy queue: its state write refused now and then with
// TransactionConflictException (a CreateQueue or DeleteQueue of another
// queue in flight, say) and, more often, by a take that landed since its
// read (at 100–200 a second, one lands within a write's round trip about
// every other try); its answer lost after it landed; the configure dying
// between its writes. The change is made once, on the state as the last
// take left it; what a reader sees is always a whole configuration, the
// one the state item's limits are; a change that was staged and never
// made is never seen, and one made and not adopted is seen and settled by
// the next configure.
func TestReconfigureFaults(t *testing.T) {
	old := slot.Config{Interval: time.Second}.WithDefaults()
	next := old
	next.Interval = 2 * time.Second
	reslot := func(calls *[]slot.State) func(slot.State) (slot.State, *engine.Rebooked, error) {
		return func(s slot.State) (slot.State, *engine.Rebooked, error) {
			*calls = append(*calls, s)
			seeded := slot.Seed(s, old.LimitList(), next.LimitList(), next.Skew)
			return seeded, &engine.Rebooked{After: s.Current, Upto: s.Ticket, At: base, Base: seeded}, nil
		}
	}
	takeUnder := func(t *testing.T, st engine.State, c slot.Config) error {
		_, err := st.Take(t.Context(), engine.TakeRequest{Queue: "q", N: 1, Line: 1, Limits: c.LimitList(), Now: base})
		return err
	}
	wantQueue := func(t *testing.T, st engine.State, c slot.Config, ticket int64) {
		t.Helper()
		q, err := st.GetQueue(t.Context(), "q")
		if err != nil {
			t.Fatal(err)
		}
		if q.Config.Interval != c.Interval || q.State.Ticket != ticket {
			t.Errorf("queue reads interval %v at ticket %d, want %v at %d", q.Config.Interval, q.State.Ticket, c.Interval, ticket)
		}
		if err := takeUnder(t, st, c); err != nil {
			t.Errorf("a take under the configuration read: %v", err)
		}
	}

	t.Run("BusyQueue", func(t *testing.T) {
		api := newClient(t, nil, fastRetries)
		table := newTable(t, api)
		clean := dynamostore.New(api, table, dynamostore.Options{})
		newQueue(t, clean, "q", time.Second)
		var landed atomic.Int64
		f := newFaultyDB(api, 3, 0,
			faultRule{Op: "UpdateItem", If: configChange, Fault: faultConflict, Rate: 0.3, N: 4},
			faultRule{Op: "UpdateItem", If: configChange, Fault: faultConflict, Rate: 0.5, N: 8, Then: func() {
				// A take lands after the configure read the state: its
				// write is refused by the condition when it is sent again.
				if err := takeUnder(t, clean, old); err == nil {
					landed.Add(1)
				}
			}})
		st := dynamostore.New(f, table, dynamostore.Options{})
		var calls []slot.State
		if _, err := st.Reconfigure(t.Context(), engine.ReconfigureRequest{Queue: "q", Config: next, Reslot: reslot(&calls)}); err != nil {
			t.Fatalf("configure beside a busy queue: %v", err)
		}
		t.Logf("%s; %d takes landed under it, Reslot asked %d times", f, landed.Load(), len(calls))
		if landed.Load() == 0 || f.Injected("UpdateItem", faultConflict) == 0 {
			t.Fatal("no take landed under the configure, or no conflict met it: the test tests nothing")
		}
		if last := calls[len(calls)-1]; last.Ticket != landed.Load() {
			t.Errorf("the change was made on the state at ticket %d; %d takes had landed", last.Ticket, landed.Load())
		}
		wantQueue(t, st, next, landed.Load())
	})

	t.Run("LostAnswer", func(t *testing.T) {
		st, f := newFaultyStore(t, 0, faultRule{Op: "UpdateItem", If: configChange, Fault: faultLost, Rate: 1, N: 1})
		var calls []slot.State
		if _, err := st.Reconfigure(t.Context(), engine.ReconfigureRequest{Queue: "q", Config: next, Reslot: reslot(&calls)}); err != nil {
			t.Fatal(err)
		}
		if f.Injected("", faultLost) != 1 {
			t.Fatalf("injected %s, want one lost answer", f)
		}
		if len(calls) != 1 {
			t.Errorf("Reslot asked %d times: a change that landed, its answer lost, was made again (seeded twice)", len(calls))
		}
		wantQueue(t, st, next, 0)
	})

	t.Run("DiesBeforeItsStateWrite", func(t *testing.T) {
		st, _ := newFaultyStore(t, 0, faultRule{Op: "UpdateItem", If: configChange, Fault: faultConflict, Rate: 1})
		var calls []slot.State
		if _, err := st.Reconfigure(t.Context(), engine.ReconfigureRequest{Queue: "q", Config: next, Reslot: reslot(&calls)}); err == nil {
			t.Fatal("configure whose state write always conflicts succeeded")
		}
		// Staged, never made: the queue reads as it was.
		wantQueue(t, st, old, 0)
	})

	t.Run("DiesBeforeAdoption", func(t *testing.T) {
		st, f := newFaultyStore(t, 0, faultRule{Op: "UpdateItem", If: adoption, Fault: faultConflict, Rate: 1, N: 1 + dynamostore.MaxTxRetries})
		var calls []slot.State
		if _, err := st.Reconfigure(t.Context(), engine.ReconfigureRequest{Queue: "q", Config: next, Reslot: reslot(&calls)}); err != nil {
			t.Fatalf("configure: %v (its change was made: the adoption is the config item's own affair)", err)
		}
		if n := f.Injected("UpdateItem", faultConflict); n != 1+dynamostore.MaxTxRetries {
			t.Fatalf("%d adoptions refused, want every one", n)
		}
		// Made, not adopted: read from the stage.
		wantQueue(t, st, next, 0)
		// The next configure settles it, then makes its own.
		third := next
		third.Interval = 3 * time.Second
		if _, err := st.Reconfigure(t.Context(), engine.ReconfigureRequest{Queue: "q", Config: third, Reslot: func(s slot.State) (slot.State, *engine.Rebooked, error) {
			return slot.Seed(s, next.LimitList(), third.LimitList(), third.Skew), nil, nil
		}}); err != nil {
			t.Fatal(err)
		}
		wantQueue(t, st, third, 1)
	})
}
