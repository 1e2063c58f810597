package dynamostore_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/bench/awssim"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// maxLaneItem is the most a lane item takes, as docs/dynamodb.md states
// it, whatever the number of its waiters: one write unit (for job ids of
// up to 128 characters, one holder, and a queue name and key of up to 80
// characters each: each of their characters counts twice, and the test's
// are one long).
const maxLaneItem = 1024

// longID is a job id of the longest kind (128 characters) for waiter i.
func longID(i int) string { return fmt.Sprintf("%s-%07d", strings.Repeat("j", 120), i) }

// laneLease is the holders' lease in these tests: long enough that no
// hold runs out while they run.
const laneLease = time.Hour

// arriveAt applies slot.Arrive for w to queue q's lane of key on st, as
// the engine does, until its write lands, and returns the verdict and the
// lane as it read it and as written.
func arriveAt(t testing.TB, st engine.State, key string, w slot.Waiter) (slot.LaneVerdict, slot.Lane, slot.Lane) {
	t.Helper()
	for range 200 {
		l, err := st.GetLane(context.Background(), "q", key)
		if err != nil {
			t.Error(err)
			return -1, l, l
		}
		next, v, _ := slot.Arrive(l, w, base, 1, laneLease)
		if next.Equal(l) {
			return v, l, next
		}
		stored, err := st.PutLane(context.Background(), next, l.Version, 0)
		if err == nil {
			return v, l, stored
		}
		if !errors.Is(err, engine.ErrConflict) {
			t.Error(err)
			return -1, l, l
		}
	}
	t.Errorf("arrival of %v: the lane kept changing", w)
	return -1, slot.Lane{}, slot.Lane{}
}

// handOff applies slot.Leave for the lane's holder (its attempt ended),
// as the engine does, until its write lands. It returns the holder after
// (zero: nobody held the key) and the version written.
func handOff(t testing.TB, st engine.State, key string) (slot.Waiter, int64, bool) {
	t.Helper()
	for range 200 {
		l, err := st.GetLane(context.Background(), "q", key)
		if err != nil {
			t.Error(err)
			return slot.Waiter{}, 0, false
		}
		if l.Holder.Ticket == 0 {
			return slot.Waiter{}, 0, len(l.Waiting) == 0
		}
		next, _ := slot.Leave(l, l.Holder, base, 1, laneLease)
		stored, err := st.PutLane(context.Background(), next, l.Version, 0)
		if err == nil {
			return next.Holder, stored.Version, false
		}
		if !errors.Is(err, engine.ErrConflict) {
			t.Error(err)
			return slot.Waiter{}, 0, false
		}
	}
	t.Error("hand-off: the lane kept changing")
	return slot.Waiter{}, 0, false
}

// laneItemSize reads the lane item of key with the plain client and
// measures it as DynamoDB bills it.
func laneItemSize(t testing.TB, client *dynamodb.Client, table, key string) int {
	t.Helper()
	n := laneItemSizeOr0(t, client, table, key)
	if n == 0 {
		t.Fatal("no lane item")
	}
	return n
}

// laneItemSizeOr0 is laneItemSize, 0 when there is no lane item (an idle
// lane with no pending jobs is deleted).
func laneItemSizeOr0(t testing.TB, client *dynamodb.Client, table, key string) int {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "L#q"}, "sk": &types.AttributeValueMemberS{Value: "K#" + key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("read the lane item: %v", err)
	}
	if out.Item == nil {
		return 0
	}
	return awssim.ItemSize(out.Item)
}

// TestLaneWaitersSize: a key with 1,000 jobs waiting, each with an id of
// 128 characters, arriving one by one as the engine parks them, keeps its
// lane item under maxLaneItem (one write unit) all along; GetLane gives
// them back in ticket order, from this Store and from a new one (another
// process, which reads the tail); and they are handed the key in ticket
// order. What an arrival and a hand-off cost is logged (go test -v), and
// docs/dynamodb.md and docs/costs.md quote it.
func TestLaneWaitersSize(t *testing.T) {
	client := newClient(t, nil)
	table := newTable(t, client)
	plain := dynamostore.New(client, table, dynamostore.Options{})
	// The last 100 arrivals and the hand-offs go through a store that
	// bills its calls (reading each item before and after a write, which
	// is slow), the rest through a plain one.
	billed := awssim.NewBilled(client)
	st := dynamostore.New(billed, table, dynamostore.Options{})
	const waiters = slot.MaxLaneWaiting
	holder := slot.Waiter{Ticket: 1, JobID: longID(0)}
	if v, _, _ := arriveAt(t, plain, "k", holder); v != slot.Acquired {
		t.Fatalf("the first job: %v, want acquired", v)
	}
	largest := 0
	var arrivals awssim.Bill
	for i := 1; i <= waiters; i++ {
		by := plain
		if i > waiters-100 {
			by = st
		}
		if i == waiters-100+1 {
			if _, err := st.GetLane(t.Context(), "q", "k"); err != nil { // what the plain store wrote
				t.Fatal(err)
			}
		}
		before := billed.Bill()
		if v, _, _ := arriveAt(t, by, "k", slot.Waiter{Ticket: int64(i + 1), JobID: longID(i)}); v != slot.Wait {
			t.Fatalf("waiter %d: %v, want wait", i, v)
		}
		arrivals = add(arrivals, billed.Bill().Sub(before))
		if i%50 == 0 {
			largest = max(largest, laneItemSize(t, client, table, "k"))
		}
	}
	t.Logf("lane item with %d waiters: at most %d bytes (%d write unit(s) a write)", waiters, largest, (largest+1023)/1024)
	if largest > maxLaneItem {
		t.Errorf("the lane item took %d bytes with up to %d waiters, above the %d docs/dynamodb.md states", largest, waiters, maxLaneItem)
	}
	logBill(t, "an arrival (of the last 100)", arrivals, 100)
	items, err := client.Query(t.Context(), &dynamodb.QueryInput{TableName: aws.String(table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "W#q#k"}},
		Limit:                     aws.Int32(1)})
	if err != nil || len(items.Items) != 1 {
		t.Fatalf("query a waiter's item: %v", err)
	}
	t.Logf("a waiter's own item: %d bytes", awssim.ItemSize(items.Items[0]))

	want := make([]slot.Waiter, waiters)
	for i := range want {
		want[i] = slot.Waiter{Ticket: int64(i + 2), JobID: longID(i + 1)}
	}
	otherBill := awssim.NewBilled(client)
	other := dynamostore.New(otherBill, table, dynamostore.Options{})
	for _, c := range []struct {
		name string
		st   *dynamostore.Store
	}{{"this store", st}, {"another store", other}} {
		l, err := c.st.GetLane(t.Context(), "q", "k")
		if err != nil || !slices.Equal(l.Waiting, want) || l.Holder != holder {
			t.Fatalf("GetLane from %s: %v, holder %v and %d waiters; want %v and the %d in ticket order", c.name, err, l.Holder, len(l.Waiting), holder, waiters)
		}
	}
	logBill(t, "a read of the lane by another process", otherBill.Bill(), 1)

	var handOffs awssim.Bill
	const hands = 100
	for i := range hands {
		before := billed.Bill()
		next, _, _ := handOff(t, st, "k")
		handOffs = add(handOffs, billed.Bill().Sub(before))
		if next != want[i] {
			t.Fatalf("hand-off %d went to %v, want %v (ticket order)", i, next, want[i])
		}
	}
	logBill(t, "a hand-off", handOffs, hands)
	if size := laneItemSize(t, client, table, "k"); size > maxLaneItem {
		t.Errorf("after %d hand-offs the lane item takes %d bytes, above %d", hands, size, maxLaneItem)
	}
	if l, err := other.GetLane(t.Context(), "q", "k"); err != nil || l.Holder != want[hands-1] || !slices.Equal(l.Waiting, want[hands:]) {
		t.Errorf("GetLane after the hand-offs: %v, holder %v and %d waiters; want %v and the %d after it", err, l.Holder, len(l.Waiting), want[hands-1], waiters-hands)
	}
}

// TestLaneHandOffOrder: jobs of one key arrive at its lane at once from
// several processes (Stores, two goroutines on each), with ids of 128
// characters, while the holder of the moment hands the key on as soon as
// it has it, on DynamoDB Local. Every job that waited or took the key
// holds it once, in ticket order (the order of the lane's versions), and
// the lane item stays under maxLaneItem.
func TestLaneHandOffOrder(t *testing.T) {
	client := newClient(t, nil)
	table := newTable(t, client)
	const (
		jobs     = 240
		arrivers = 6
	)
	type hold struct {
		version int64
		w       slot.Waiter
	}
	var (
		mu       sync.Mutex
		holds    []hold
		accepted []slot.Waiter
		largest  int
	)
	arrived := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	stores := make([]*dynamostore.Store, arrivers/2)
	for i := range stores {
		stores[i] = dynamostore.New(client, table, dynamostore.Options{})
	}
	// Every job is counted pending on the key before it can arrive, as
	// its enqueue counts it: a lane whose holder leaves with nothing
	// waiting is kept, and with it the highest ticket that reached it,
	// while jobs of the key have not ended. Uncounted, the lane went
	// with its last hand-off, and a lower ticket arriving after took the
	// key behind a higher one.
	if _, err := stores[0].AddPending(t.Context(), "q", 0, "k", jobs); err != nil {
		t.Fatal(err)
	}
	for g := range arrivers {
		wg.Go(func() {
			for i := g; i < jobs; i += arrivers {
				w := slot.Waiter{Ticket: int64(i + 1), JobID: longID(i)}
				v, read, stored := arriveAt(t, stores[g/2], "k", w)
				mu.Lock()
				switch v {
				case slot.Acquired:
					accepted = append(accepted, w)
					if !read.Holds(w) {
						holds = append(holds, hold{stored.Version, w})
					}
				case slot.Wait:
					accepted = append(accepted, w)
				}
				mu.Unlock()
				arrived <- struct{}{}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	handing := dynamostore.New(client, table, dynamostore.Options{})
	finished := false
	for n := 0; ; n++ {
		next, version, idle := handOff(t, handing, "k")
		if t.Failed() {
			break
		}
		if next.Ticket != 0 {
			mu.Lock()
			holds = append(holds, hold{version, next})
			mu.Unlock()
		} else if idle || version == 0 {
			if finished {
				break
			}
			// Nobody holds the key: wait for the next arrival.
			select {
			case <-arrived:
			case <-done:
				finished = true
			case <-time.After(time.Minute):
				t.Fatal("no arrival for a minute")
			}
		}
		if n%10 == 0 {
			largest = max(largest, laneItemSizeOr0(t, client, table, "k"))
		}
	}
	<-done
	slices.SortFunc(holds, func(a, b hold) int { return cmp.Compare(a.version, b.version) })
	var order []slot.Waiter
	for i, h := range holds {
		if i > 0 && h.w.Ticket <= holds[i-1].w.Ticket {
			t.Errorf("the key went to ticket %d after ticket %d", h.w.Ticket, holds[i-1].w.Ticket)
		}
		order = append(order, h.w)
	}
	slices.SortFunc(accepted, func(a, b slot.Waiter) int { return cmp.Compare(a.Ticket, b.Ticket) })
	if !slices.Equal(order, accepted) {
		t.Errorf("%d jobs held the key, %d waited or took it; want the same, each once", len(order), len(accepted))
	}
	t.Logf("%d of %d jobs held the key in ticket order (the rest were overtaken); lane item at most %d bytes", len(order), jobs, largest)
	if largest > maxLaneItem {
		t.Errorf("the lane item took %d bytes, above %d", largest, maxLaneItem)
	}
}

func add(a, b awssim.Bill) awssim.Bill {
	return awssim.Bill{Calls: a.Calls + b.Calls, ReadUnits: a.ReadUnits + b.ReadUnits, WriteUnits: a.WriteUnits + b.WriteUnits,
		IndexWrites: a.IndexWrites + b.IndexWrites, FailedWrites: a.FailedWrites + b.FailedWrites}
}

func logBill(t *testing.T, what string, b awssim.Bill, n int) {
	t.Helper()
	t.Logf("%s: %.1f calls, %.1f write units, %.1f read units", what,
		float64(b.Calls)/float64(n), b.WriteUnits/float64(n), b.ReadUnits/float64(n))
}

// TestLaneTailModel: a queue's own lane (where jobs wait for a running
// place, in ticket order) takes waiters in and out anywhere in its list
// (slot.Enter, slot.Remove, slot.Pop), some with ids of 128 characters,
// long enough to keep a tail; after each write, GetLane from another
// Store (which reads the tail) gives back the list a model of it holds.
func TestLaneTailModel(t *testing.T) {
	client := newClient(t, nil)
	table := newTable(t, client)
	st := dynamostore.New(client, table, dynamostore.Options{})
	rng := rand.New(rand.NewPCG(7, 42))
	var model slot.Lane
	change := func(what string, f func(slot.Lane) slot.Lane) {
		t.Helper()
		l, err := st.GetLane(t.Context(), "q", "")
		if err != nil {
			t.Fatal(err)
		}
		next := f(l)
		if _, err := st.PutLane(t.Context(), next, l.Version, 0); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		model = f(model)
		got, err := dynamostore.New(client, table, dynamostore.Options{}).GetLane(t.Context(), "q", "")
		if err != nil || !slices.Equal(got.Waiting, model.Waiting) {
			t.Fatalf("after %s: GetLane = %d waiters, %v; want the model's %d:\n got %v\nwant %v", what, len(got.Waiting), err, len(model.Waiting), got.Waiting, model.Waiting)
		}
	}
	used := map[int64]bool{}
	for i := range 300 {
		switch op := rng.IntN(10); {
		case op < 6 || len(model.Waiting) == 0:
			tk := rng.Int64N(2000) + 1
			if used[tk] {
				continue
			}
			used[tk] = true
			id := fmt.Sprintf("j%d", tk)
			if rng.IntN(4) > 0 {
				id = longID(int(tk))
			}
			w := slot.Waiter{Ticket: tk, JobID: id}
			change(fmt.Sprintf("op %d: enter %d", i, tk), func(l slot.Lane) slot.Lane { return slot.Enter(l, w) })
		case op < 8:
			w := model.Waiting[rng.IntN(len(model.Waiting))]
			change(fmt.Sprintf("op %d: remove %d", i, w.Ticket), func(l slot.Lane) slot.Lane { return slot.Remove(l, w) })
		default:
			change(fmt.Sprintf("op %d: pop", i), func(l slot.Lane) slot.Lane { l, _, _ = slot.Pop(l); return l })
		}
	}
	t.Logf("%d waiters at the end", len(model.Waiting))
}

// TestLaneOldShape: a lane an earlier release wrote, with all its 1,000
// waiters inline (about 136 KB), is read as it is, and its writes move
// its waiters into their own items, at most 50 a write, until the item
// is back under maxLaneItem; the key goes on in ticket order all along.
func TestLaneOldShape(t *testing.T) {
	client := newClient(t, nil)
	table := newTable(t, client)
	const waiters = slot.MaxLaneWaiting
	var enc []string
	want := make([]slot.Waiter, waiters)
	for i := range want {
		want[i] = slot.Waiter{Ticket: int64(i + 2), JobID: longID(i + 1)}
		enc = append(enc, fmt.Sprintf("%d:%s", want[i].Ticket, want[i].JobID))
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	holder := slot.Waiter{Ticket: 1, JobID: longID(0)}
	old := map[string]types.AttributeValue{
		"pk": s("L#q"), "sk": s("K#k"), "queue": s("q"), "lane_key": s("k"), "gen": n(0), "v": n(1000),
		"holder_ticket": n(holder.Ticket), "holder_id": s(holder.JobID), "until": n(base.Add(laneLease).UnixMilli()),
		"last": n(waiters + 1), "waiting": s(strings.Join(enc, ",")), "pending": n(waiters + 1),
		"ttl": n(base.Add(40 * 24 * time.Hour).Unix()),
	}
	if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: old}); err != nil {
		t.Fatal(err)
	}
	st := dynamostore.New(client, table, dynamostore.Options{})
	if l, err := st.GetLane(t.Context(), "q", "k"); err != nil || l.Holder != holder || !slices.Equal(l.Waiting, want) || l.Version != 1000 {
		t.Fatalf("GetLane of the old lane: %v, holder %v, %d waiters, version %d; want %v and the %d at version 1000", err, l.Holder, len(l.Waiting), l.Version, holder, waiters)
	}
	size := laneItemSize(t, client, table, "k")
	t.Logf("the old lane item: %d bytes", size)
	writes := 0
	for i := 0; size > maxLaneItem; i++ {
		next, _, _ := handOff(t, st, "k")
		if next != want[i] {
			t.Fatalf("hand-off %d went to %v, want %v", i, next, want[i])
		}
		writes++
		smaller := laneItemSize(t, client, table, "k")
		if smaller >= size {
			t.Fatalf("hand-off %d left the lane item at %d bytes, from %d", i, smaller, size)
		}
		size = smaller
	}
	t.Logf("under %d bytes after %d writes", maxLaneItem, writes)
	if writes > waiters/50+1 {
		t.Errorf("%d writes to move %d waiters, want at most %d", writes, waiters, waiters/50+1)
	}
	if l, err := dynamostore.New(client, table, dynamostore.Options{}).GetLane(t.Context(), "q", "k"); err != nil || !slices.Equal(l.Waiting, want[writes:]) {
		t.Errorf("GetLane after: %v, %d waiters; want the %d after the hand-offs", err, len(l.Waiting), waiters-writes)
	}
}

// beforeQuery is a DynamoDB client that runs first once, before it
// passes the first Query on.
type beforeQuery struct {
	dynamostore.DynamoDBAPI
	once  sync.Once
	first func()
}

func (b *beforeQuery) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	b.once.Do(b.first)
	return b.DynamoDBAPI.Query(ctx, in, o...)
}

// TestLaneTailReadRace: a write that lands while another process reads a
// lane's tail (between its first read of the lane item and its Query)
// does not make the read mix the two states: the read gives the lane as
// it stood before the write or after it, waiters and version together,
// whether the write took a waiter from the middle of the tail or added
// one at its end.
func TestLaneTailReadRace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(l slot.Lane) slot.Lane
	}{
		{"RemovedFromMiddle", func(l slot.Lane) slot.Lane { return slot.Remove(l, l.Waiting[len(l.Waiting)-3]) }},
		{"Arrived", func(l slot.Lane) slot.Lane {
			l, _, _ = slot.Arrive(l, slot.Waiter{Ticket: l.Last + 1, JobID: longID(int(l.Last))}, base, 1, laneLease)
			return l
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := newClient(t, nil)
			table := newTable(t, client)
			st := dynamostore.New(client, table, dynamostore.Options{})
			for i := range 12 {
				arriveAt(t, st, "k", slot.Waiter{Ticket: int64(i + 1), JobID: longID(i)})
			}
			before, err := st.GetLane(t.Context(), "q", "k")
			if err != nil {
				t.Fatal(err)
			}
			var want slot.Lane
			racing := &beforeQuery{DynamoDBAPI: client, first: func() {
				l, err := st.GetLane(t.Context(), "q", "k")
				if err != nil {
					t.Error(err)
					return
				}
				if want, err = st.PutLane(t.Context(), tc.change(l), l.Version, 0); err != nil {
					t.Error(err)
				}
			}}
			got, err := dynamostore.New(racing, table, dynamostore.Options{}).GetLane(t.Context(), "q", "k")
			if err != nil || want.Version == 0 {
				t.Fatalf("GetLane: %v (the write between: version %d)", err, want.Version)
			}
			for _, l := range []slot.Lane{before, want} {
				if got.Version == l.Version && !slices.Equal(got.Waiting, l.Waiting) {
					t.Errorf("GetLane read %d waiters at version %d, which had %d:\n got %v\nwant %v", len(got.Waiting), got.Version, len(l.Waiting), got.Waiting, l.Waiting)
				}
			}
			if got.Version != before.Version && got.Version != want.Version {
				t.Errorf("GetLane read version %d, neither %d before the write nor %d after", got.Version, before.Version, want.Version)
			}
			t.Logf("read version %d: before the write %d, after %d", got.Version, before.Version, want.Version)
		})
	}
}
