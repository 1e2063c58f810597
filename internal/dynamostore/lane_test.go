package dynamostore_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// onLaneItem picks writes of lane items (sort key K#<key>), alone or in a
// transaction.
func onLaneItem(in any) bool {
	var ms []map[string]types.AttributeValue
	switch in := in.(type) {
	case *dynamodb.UpdateItemInput:
		ms = append(ms, in.Key)
	case *dynamodb.PutItemInput:
		ms = append(ms, in.Item)
	case *dynamodb.DeleteItemInput:
		ms = append(ms, in.Key)
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			if it.Put != nil {
				ms = append(ms, it.Put.Item)
			}
		}
	}
	for _, m := range ms {
		if sk, ok := m["sk"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, "K#") {
			return true
		}
	}
	return false
}

// regenerate makes queue q of st a queue of generation gen: deleted and
// created again, as the engine does.
func regenerate(t *testing.T, st engine.State, gen int64) {
	t.Helper()
	if err := st.DeleteQueue(t.Context(), "q"); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateQueue(t.Context(), engine.Queue{Name: "q", Gen: gen, Config: slot.Config{Interval: time.Second}.WithDefaults(), CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
}

// TestLaneLostAnswer: a lane write whose answer was lost is sent again by
// the SDK, and meets its own write: a put and an add count once and
// answer as if nothing had happened, and so does the fresh start of a
// lane of another generation. A delete leaves nothing to recognise: it
// answers ErrConflict, and the lane is gone, as the caller meant.
func TestLaneLostAnswer(t *testing.T) {
	lost := func(op string) faultRule {
		return faultRule{Op: op, If: onLaneItem, Fault: faultLost, Rate: 1, N: 1}
	}
	held := slot.Lane{Queue: "q", Key: "k", Gen: 1, Holder: slot.Waiter{Ticket: 1, JobID: "a"}, Until: base.Add(time.Minute), Last: 1}

	t.Run("PutLane", func(t *testing.T) {
		st, f := newFaultyStore(t, 0, lost("UpdateItem"))
		l, err := st.PutLane(t.Context(), held, 0, 1)
		if err != nil || l.Holder != held.Holder || l.Pending != 1 {
			t.Fatalf("PutLane = %+v, %v; want it stored, pending 1", l, err)
		}
		if f.Injected("UpdateItem", faultLost) != 1 {
			t.Fatalf("injected %s", f)
		}
		if got, err := st.GetLane(t.Context(), "q", "k"); err != nil || got.Version != l.Version || got.Pending != 1 {
			t.Errorf("GetLane = %+v, %v; want it at the version PutLane answered, %d, the delta added once", got, err, l.Version)
		}
	})
	// An enqueue counts a job between the put and the SDK's retry of it:
	// the retry still meets the put's token (an add keeps its own), and
	// the put answers as stored, the add kept.
	t.Run("PutLaneThenAdd", func(t *testing.T) {
		api := newClient(t, nil, fastRetries)
		table := newTable(t, api)
		clean := dynamostore.New(api, table, dynamostore.Options{})
		read, err := clean.AddPending(t.Context(), "q", 1, "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		var addErr error
		f := newFaultyDB(api, 1, 0, faultRule{Op: "UpdateItem", If: onLaneItem, Fault: faultLost, Rate: 1, N: 1, Then: func() {
			_, addErr = clean.AddPending(t.Context(), "q", 1, "k", 1)
		}})
		st := dynamostore.New(f, table, dynamostore.Options{})
		next := read
		next.Holder, next.Until, next.Last = held.Holder, held.Until, held.Last
		l, err := st.PutLane(t.Context(), next, read.Version, 0)
		if err != nil || addErr != nil {
			t.Fatalf("PutLane = %v (the add: %v); want it stored", err, addErr)
		}
		if f.Injected("UpdateItem", faultLost) != 1 {
			t.Fatalf("injected %s", f)
		}
		if l.Version != read.Version+1 || l.Holder != held.Holder || l.Pending != 2 {
			t.Errorf("PutLane = %+v; want version %d, holder %v, pending 2", l, read.Version+1, held.Holder)
		}
	})
	t.Run("AddPending", func(t *testing.T) {
		st, f := newFaultyStore(t, 0, lost("UpdateItem"))
		l, err := st.AddPending(t.Context(), "q", 1, "k", 1)
		if err != nil || l.Pending != 1 {
			t.Fatalf("AddPending = %+v, %v; want pending 1", l, err)
		}
		if f.Injected("UpdateItem", faultLost) != 1 {
			t.Fatalf("injected %s", f)
		}
		if got, err := st.GetLane(t.Context(), "q", "k"); err != nil || got.Pending != 1 || got.Version != l.Version {
			t.Errorf("GetLane = %+v, %v; want the add counted once, at version %d", got, err, l.Version)
		}
	})
	t.Run("AddPendingOtherGen", func(t *testing.T) {
		st, f := newFaultyStore(t, 0)
		if _, err := st.PutLane(t.Context(), held, 0, 1); err != nil {
			t.Fatal(err)
		}
		regenerate(t, st, 2)
		f.rules = []faultRule{lost("TransactWriteItems")}
		l, err := st.AddPending(t.Context(), "q", 2, "k", 3)
		foreign := slot.Waiter{Ticket: slot.DeletedQueueTicket, JobID: held.Holder.JobID}
		if err != nil || l.Pending != 3 || l.Gen != 2 || l.Holder != foreign {
			t.Fatalf("AddPending = %+v, %v; want a fresh lane of generation 2 with 3 pending, its holder foreign", l, err)
		}
		if f.Injected("TransactWriteItems", faultLost) != 1 {
			t.Fatalf("injected %s", f)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		st, f := newFaultyStore(t, 0)
		l, err := st.PutLane(t.Context(), held, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		f.rules = []faultRule{lost("DeleteItem")}
		_, err = st.PutLane(t.Context(), slot.Lane{Queue: "q", Key: "k", Gen: 1, Last: 1, Pending: 1}, l.Version, -1)
		if !errors.Is(err, engine.ErrConflict) {
			t.Errorf("a delete sent again after it landed: %v, want ErrConflict", err)
		}
		if l, err := st.GetLane(t.Context(), "q", "k"); err != nil || l.Version != 0 {
			t.Errorf("GetLane = %+v, %v; want the lane deleted", l, err)
		}
	})
}

// TestLaneTransactionConflict: lane writes refused with
// TransactionConflictException are sent again by the store, as every
// single-item write is.
func TestLaneTransactionConflict(t *testing.T) {
	for _, tc := range []struct{ name, op string }{
		{"PutLane", "UpdateItem"}, {"AddPending", "UpdateItem"}, {"AddPendingOtherGen", "TransactWriteItems"}, {"Delete", "DeleteItem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, f := newFaultyStore(t, 0)
			if tc.name == "AddPendingOtherGen" {
				if _, err := st.AddPending(t.Context(), "q", 0, "k", 1); err != nil {
					t.Fatal(err)
				}
				regenerate(t, st, 2)
			}
			f.rules = []faultRule{{Op: tc.op, If: onLaneItem, Fault: faultConflict, Rate: 1, N: 3}}
			var err error
			switch tc.name {
			case "PutLane":
				_, err = st.PutLane(t.Context(), slot.Lane{Queue: "q", Key: "k"}, 0, 1)
			case "AddPending":
				_, err = st.AddPending(t.Context(), "q", 0, "k", 1)
			case "AddPendingOtherGen":
				_, err = st.AddPending(t.Context(), "q", 2, "k", 1)
			case "Delete":
				_, err = st.PutLane(t.Context(), slot.Lane{Queue: "q", Key: "k"}, 0, 0)
			}
			if err != nil {
				t.Fatalf("after 3 conflicts: %v", err)
			}
			if n := f.Injected(tc.op, faultConflict); n != 3 {
				t.Errorf("%d conflicts injected, want 3", n)
			}
		})
	}
	t.Run("Exhausted", func(t *testing.T) {
		st, _ := newFaultyStore(t, 0, faultRule{Op: "UpdateItem", If: onLaneItem, Fault: faultConflict, Rate: 1})
		_, err := st.PutLane(t.Context(), slot.Lane{Queue: "q", Key: "k"}, 0, 1)
		var tc *types.TransactionConflictException
		if !errors.As(err, &tc) || !strings.HasPrefix(err.Error(), "put lane q/k: ") {
			t.Errorf("got %v, want a TransactionConflictException wrapped as put lane q/k", err)
		}
	})
}

// TestLaneItem: what a lane item holds, read with the plain client at its
// key (pk L#<queue>, off the queue's own partition key): the waiters as
// one compact string, the ttl 30 days past the later of the store's clock
// and the holder's lease, no index keys (lanes are neither queues nor
// listed jobs), and a created lane's version seeded from the store's
// clock in microseconds, by a put as by an add.
func TestLaneItem(t *testing.T) {
	api := newClient(t, nil)
	table := newTable(t, api)
	now := base
	st := dynamostore.New(api, table, dynamostore.Options{Now: func() time.Time { return now }})
	l := slot.Lane{Queue: "q", Key: "acct/7", Gen: 3, Holder: slot.Waiter{Ticket: 5, JobID: "j5"}, Until: base.Add(time.Hour),
		Last: 7, Waiting: []slot.Waiter{{Ticket: 6, JobID: "j:6"}, {Ticket: 7, JobID: "j.7"}}, Pending: 3}
	put, err := st.PutLane(t.Context(), l, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := base.UnixMicro() + 1; put.Version != want {
		t.Errorf("PutLane from 0 stored version %d, want %d (the clock in µs, + 1)", put.Version, want)
	}
	out, err := api.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "L#q"}, "sk": &types.AttributeValueMemberS{Value: "K#acct/7"}}})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem: %v, %v", out, err)
	}
	if w, _ := out.Item["waiting"].(*types.AttributeValueMemberS); w == nil || w.Value != "6:j:6,7:j.7" {
		t.Errorf("waiting = %v, want 6:j:6,7:j.7", out.Item["waiting"])
	}
	wantTTL := base.Add(time.Hour + 30*24*time.Hour).Unix()
	if ttl, _ := out.Item["ttl"].(*types.AttributeValueMemberN); ttl == nil || ttl.Value != strconv.FormatInt(wantTTL, 10) {
		t.Errorf("ttl = %v, want %d (30 days after the holder's lease)", out.Item["ttl"], wantTTL)
	}
	for _, k := range []string{"item_kind", "queue_status", "ticket"} {
		if _, ok := out.Item[k]; ok {
			t.Errorf("lane item carries %s", k)
		}
	}
	// A waiter whose id would break the encoding is refused, not stored.
	bad := l
	bad.Waiting = []slot.Waiter{{Ticket: 8, JobID: "a,b"}}
	if _, err := st.PutLane(t.Context(), bad, put.Version, 0); err == nil {
		t.Error("PutLane of a waiter with a comma in its id: no error")
	}

	now = base.Add(time.Second)
	if add, err := st.AddPending(t.Context(), "q", 3, "other", 1); err != nil || add.Version != now.UnixMicro()+1 {
		t.Errorf("AddPending of a new lane = %+v, %v; want version %d (the clock in µs, + 1)", add, err, now.UnixMicro()+1)
	}
	if add, err := st.AddPending(t.Context(), "q", 3, "other", 1); err != nil || add.Version != now.UnixMicro()+1 || add.Pending != 2 {
		t.Errorf("AddPending on it = %+v, %v; want pending 2, its version left at %d", add, err, now.UnixMicro()+1)
	}
}

// TestLaneIdleWrites: a put that leaves a lane idle costs one write when
// the count as the caller read it tells right whether the lane goes: an
// update when jobs stay pending, a delete when the last one ends. Only an
// add that lands between the read and the put costs the other try too.
func TestLaneIdleWrites(t *testing.T) {
	api := newClient(t, nil)
	m := awsmeter.NewDynamoDB(api)
	st := dynamostore.New(m, newTable(t, api), dynamostore.Options{})
	ctx := t.Context()
	held := slot.Lane{Queue: "q", Key: "k", Gen: 1, Holder: slot.Waiter{Ticket: 1, JobID: "a"}, Until: base.Add(time.Minute), Last: 1}
	add := func(n int64) {
		t.Helper()
		if _, err := st.AddPending(ctx, "q", 1, "k", n); err != nil {
			t.Fatal(err)
		}
	}
	// end reads the lane, lets an enqueue add n meanwhile, and puts the
	// lane idle as its holder's job ends (-1).
	end := func(what string, n int64, gone bool, updates, deletes int64) {
		t.Helper()
		read, err := st.GetLane(ctx, "q", "k")
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			add(n)
		}
		next := read
		next.Holder, next.Until = slot.Waiter{}, time.Time{}
		before := m.Counts()
		got, err := st.PutLane(ctx, next, read.Version, -1)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		after := m.Counts()
		upd := after["UpdateItem lane"].Calls - before["UpdateItem lane"].Calls
		del := after["DeleteItem lane"].Calls - before["DeleteItem lane"].Calls
		if (got.Version == 0) != gone || upd != updates || del != deletes {
			t.Errorf("%s: %+v after %d updates and %d deletes; want deleted %v after %d and %d", what, got, upd, del, gone, updates, deletes)
		}
	}
	if _, err := st.PutLane(ctx, held, 0, 2); err != nil { // a holds, b pending
		t.Fatal(err)
	}
	end("a ends, b pending", 0, false, 1, 0)
	end("b ends", 0, true, 0, 1)
	if _, err := st.PutLane(ctx, held, 0, 1); err != nil { // c holds
		t.Fatal(err)
	}
	end("c ends as d is counted", 1, false, 1, 1)
	add(1) // e is counted, and its enqueue takes it back below
	end("d ends as e is taken back", -1, true, 1, 1)
}

// TestLaneKeepsItsLastWhilePending: a key's lane whose holder leaves with
// nothing waiting is deleted only once no job of the key is pending. While
// one is, the lane keeps the highest ticket that reached it, and a lower
// ticket arriving after that one held the key is overtaken (it takes a new
// ticket) rather than holding the key behind a higher one. Without the
// count, the lane goes with the hand-off and the lower ticket takes the
// key: the order TestLaneHandOffOrder saw broken when its arrivals were
// not counted.
func TestLaneKeepsItsLastWhilePending(t *testing.T) {
	for _, counted := range []bool{true, false} {
		st := newStore(t)
		key := "k-" + strconv.FormatBool(counted)
		if counted {
			// Both jobs accepted, as their enqueues count them.
			if _, err := st.AddPending(t.Context(), "q", 0, key, 2); err != nil {
				t.Fatal(err)
			}
		}
		second, first := slot.Waiter{Ticket: 2, JobID: "second"}, slot.Waiter{Ticket: 1, JobID: "first"}
		if v, _, _ := arriveAt(t, st, key, second); v != slot.Acquired {
			t.Fatalf("counted %v: ticket 2 arriving at an empty lane: %v, want acquired", counted, v)
		}
		if next, _, _ := handOff(t, st, key); next.Ticket != 0 {
			t.Fatalf("counted %v: the key went to %v, want nobody (nothing waits)", counted, next)
		}
		v, _, _ := arriveAt(t, st, key, first)
		if counted && v != slot.Overtaken {
			t.Errorf("ticket 1 arriving after ticket 2 held the key, both counted: %v, want overtaken", v)
		}
		if !counted && v != slot.Acquired {
			t.Errorf("ticket 1 arriving at a lane that no count kept: %v; this test's premise (the lane goes with its last hand-off) no longer holds", v)
		}
	}
}
