package dynamostore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// onQuery is a DynamoDB client that calls hook before each Query.
type onQuery struct {
	dynamostore.DynamoDBAPI
	hook func()
}

func (q onQuery) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	q.hook()
	return q.DynamoDBAPI.Query(ctx, in, opts...)
}

// sameBookings reports how got's bookings differ from want's.
func sameBookings(got, want map[int64]slot.Booking) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d bookings, want %d", len(got), len(want))
	}
	for seq, b := range want {
		g, ok := got[seq]
		if !ok || g.Key != b.Key || g.ID != b.ID || g.Running != b.Running || !g.At.Equal(b.At) {
			return fmt.Errorf("booking %d = %+v (%v), want %+v", seq, g, ok, b)
		}
	}
	return nil
}

// TestHorizonPages holds the horizon's pages on DynamoDB Local to what
// PutHorizon promises whatever the layout: a horizon comes back as put
// from this store and from another (which reads its pages); one written
// whole by the previous release reads as it was, and its next write
// moves its bookings to pages; a write of more pages than a transaction
// holds lands whole; a small horizon takes its bookings back into its
// head and leaves no page; and a read that a write cuts across reads
// the horizon after it.
func TestHorizonPages(t *testing.T) {
	ctx := t.Context()
	client := newClient(t, nil)
	table := newTable(t, client)
	st := dynamostore.New(client, table, dynamostore.Options{})
	other := dynamostore.New(client, table, dynamostore.Options{})
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	const q = "pages"

	// The previous release's item: every booking in attribute horizon,
	// 1,000 of 100-character ids and keys (about 260 KB).
	old := slot.Horizon{Queue: q, Gen: 1}
	for i := range 1000 {
		old.Book(pad(fmt.Sprintf("key-%d-", i%50), 100), pad(fmt.Sprintf("id-%d-", i), 100), at.Add(time.Duration(i)*time.Millisecond))
	}
	text, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "W#" + q}, "sk": &types.AttributeValueMemberS{Value: "room"},
		"queue": &types.AttributeValueMemberS{Value: q}, "gen": &types.AttributeValueMemberN{Value: "1"},
		"v": &types.AttributeValueMemberN{Value: "7"}, "horizon": &types.AttributeValueMemberS{Value: string(text)},
	}}); err != nil {
		t.Fatal(err)
	}
	h, err := st.GetHorizon(ctx, q)
	if err != nil || h.Version != 7 || h.Seq != 1000 {
		t.Fatalf("the previous release's horizon: version %d, seq %d, %v", h.Version, h.Seq, err)
	}
	if err := sameBookings(h.Booked, old.Booked); err != nil {
		t.Fatalf("the previous release's horizon: %v", err)
	}

	// put writes h from its version and checks it reads back, here and
	// in another process.
	put := func(what string, h slot.Horizon) slot.Horizon {
		t.Helper()
		out, err := st.PutHorizon(ctx, h, h.Version)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, s := range []*dynamostore.Store{st, other} {
			got, err := s.GetHorizon(ctx, q)
			if err != nil || got.Version != out.Version || got.Seq != h.Seq || got.Waiting != h.Waiting {
				t.Fatalf("%s: read back version %d seq %d waiting %d, %v; want %d, %d, %d", what, got.Version, got.Seq, got.Waiting, err, out.Version, h.Seq, h.Waiting)
			}
			if err := sameBookings(got.Booked, h.Booked); err != nil {
				t.Fatalf("%s: read back: %v", what, err)
			}
		}
		return out
	}
	items := func() (head map[string]types.AttributeValue, pages int) {
		t.Helper()
		out, err := client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "W#" + q}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Items {
			if m["sk"].(*types.AttributeValueMemberS).Value == "room" {
				head = m
			} else {
				pages++
			}
		}
		return head, pages
	}

	// Its next write (one booking freed, one started) puts its bookings
	// in pages: 63 of them, in one transaction with the head.
	h.Free(1)
	h.Hold(2)
	h.Waiting = 3
	h = put("the previous release's horizon, written again", h)
	head, pages := items()
	if _, ok := head["horizon"]; ok || pages != 63 {
		t.Fatalf("after the write: attribute horizon %v, %d pages; want none and 63", ok, pages)
	}

	// 2,000 bookings more: 125 pages, more than a transaction writes.
	for i := range 2000 {
		h.Book(pad(fmt.Sprintf("key-%d-", i), 100), pad(fmt.Sprintf("new-%d-", i), 100), at.Add(time.Second))
	}
	h = put("2,000 bookings more", h)
	// One freed on every page, and one started on every other.
	for seq := int64(3); seq <= h.Seq; seq += 16 {
		h.Free(seq)
		h.Hold(seq + 8)
	}
	h = put("a booking freed on every page", h)
	if _, pages = items(); pages != 188 {
		t.Fatalf("%d pages for bookings 2 to %d, want 188", pages, h.Seq)
	}

	// A read that a write of another process cuts across (between its
	// head and its pages) reads the horizon after that write.
	var once sync.Once
	cut := dynamostore.New(onQuery{DynamoDBAPI: client, hook: func() {
		once.Do(func() {
			g := h.Clone()
			g.Free(2)
			if _, err := other.PutHorizon(ctx, g, g.Version); err != nil {
				t.Errorf("the write across the read: %v", err)
			}
		})
	}}, table, dynamostore.Options{})
	got, err := cut.GetHorizon(ctx, q)
	if err != nil || got.Version != h.Version+1 || len(got.Booked) != len(h.Booked)-1 {
		t.Fatalf("a read cut across by a write: version %d, %d bookings, %v; want %d, %d", got.Version, len(got.Booked), err, h.Version+1, len(h.Booked)-1)
	}
	// st's view of version h.Version is stale now: its write is refused.
	if _, err := st.PutHorizon(ctx, h, h.Version); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a write from a version another process moved on: %v, want ErrConflict", err)
	}

	// Down to 10 bookings: back in the head, no page left.
	h, err = st.GetHorizon(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	keep := map[int64]slot.Booking{}
	for seq := h.Seq - 9; seq <= h.Seq; seq++ {
		keep[seq] = h.Booked[seq]
	}
	h.Booked = maps.Clone(keep)
	h = put("down to 10 bookings", h)
	if head, pages = items(); head["horizon"] == nil || pages != 0 {
		t.Fatalf("with 10 bookings: attribute horizon %v, %d pages; want it and none", head["horizon"] != nil, pages)
	}
}
