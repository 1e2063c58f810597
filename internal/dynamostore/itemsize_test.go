package dynamostore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/bench/awssim"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// maxStateItem is the largest a queue's state item gets, as
// docs/dynamodb.md states it: three windows, each with its starts and
// bookings at different milliseconds (their runs at the cap), and a full
// running map of 100 places. (It leaves about 100 bytes for a slow-down's
// and a timed pause's attributes.)
const maxStateItem = 6 * 1024

// TestStateItemSize drives a queue into the largest state item it can
// have — three window limits whose starts and bookings all fall at
// different milliseconds, without a running cap and with max_running 100
// and every place taken — through the store's own takes and gates on
// DynamoDB Local, and measures
// the item as DynamoDB bills it. Each write to the hot item costs one
// write unit per started KB of it, so the queue's ~1,000 write units a
// second make fewer writes. The figures are logged (go test -v) and
// docs/dynamodb.md quotes them.
func TestStateItemSize(t *testing.T) {
	client := newClient(t, nil)
	table := newTable(t, client)
	st := dynamostore.New(client, table, dynamostore.Options{})
	for _, maxRunning := range []int{0, slot.MaxRunningLimit} {
		t.Run(fmt.Sprintf("MaxRunning%d", maxRunning), func(t *testing.T) {
			full := stateItemSize(t, client, table, st, maxRunning)
			if full > maxStateItem {
				t.Errorf("the state item takes %d bytes, above the %d docs/dynamodb.md states", full, maxStateItem)
			}
		})
	}
}

// stateItemSize drives a queue under three windows (and a running cap of
// maxRunning) to its largest state item and returns its size in bytes.
func stateItemSize(t *testing.T, client *dynamodb.Client, table string, st *dynamostore.Store, maxRunning int) int {
	ctx := t.Context()
	limits := slot.Limits{
		{Window: api.Rate{N: 100000, Per: time.Hour}},
		{Window: api.Rate{N: 20000, Per: 10 * time.Minute}},
		{Window: api.Rate{N: 5000, Per: time.Minute}},
	}
	cfg := slot.Config{Limits: limits, MaxRunning: maxRunning, Targets: []string{"https://example.com/*"}}.WithDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("item-size-%d", maxRunning)
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	if err := st.CreateQueue(ctx, engine.Queue{Name: name, Config: cfg, CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	size := func(what string) int {
		t.Helper()
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(table),
			Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "Q#" + name}, "sk": &types.AttributeValueMemberS{Value: "state"}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil || out.Item == nil {
			t.Fatalf("%s: read the state item: %v", what, err)
		}
		n := awssim.ItemSize(out.Item)
		t.Logf("%s: state item %d bytes (%d write units a write)", what, n, (n+1023)/1024)
		return n
	}
	size("new queue")

	// Bookings one at a time, 7 ms apart: each at a millisecond of its
	// own, so no two fall in one run.
	const jobs = 150
	var slots []time.Time
	var seen slot.State
	for i := range jobs {
		tk, err := st.Take(ctx, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: limits, Now: base.Add(time.Duration(i) * 7 * time.Millisecond), Seen: seen})
		if err != nil {
			t.Fatalf("take %d: %v", i, err)
		}
		seen = tk.State
		slots = append(slots, tk.Slots...)
	}
	size(fmt.Sprintf("%d bookings", jobs))

	// Starts at those slots, each holding a running place (under a cap)
	// until long after: the map fills to max_running.
	lease := base.Add(time.Hour)
	started := 0
	for i, at := range slots {
		if started == slot.MaxRunningLimit {
			break
		}
		s, err := st.Gate(ctx, engine.GateRequest{Queue: name, Ticket: int64(i + 1), Limits: limits, Skew: cfg.Skew,
			Now: at, At: at, MaxRunning: maxRunning, Until: lease, Seen: seen})
		if err != nil {
			t.Fatalf("gate of ticket %d at %v: %v", i+1, at.Sub(base), err)
		}
		seen = s
		started++
	}
	if len(seen.Running) != maxRunning {
		t.Fatalf("%d running places taken, want %d", len(seen.Running), maxRunning)
	}
	return size(fmt.Sprintf("%d starts, %d running", started, len(seen.Running)))
}
