package dynamolocal_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dev/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// These tests are the reason slotq trusts DynamoDB Local where it asserts
// behaviour under concurrency: many clients race on one item, with no
// serialization of any kind, and DynamoDB's per-item atomicity must hold.
// moto_server fails each of them.

const (
	clients = 50
	perOp   = 20 // operations per client
	perCAS  = 5  // compare-and-set wins per client
)

var tables atomic.Int64

// newTable returns a client built from the environment, as slotq's
// functions build theirs, and a table of the test's own (the server is
// shared by the whole test binary).
func newTable(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	dynamolocal.Require(t)
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg, dynamolocal.Quiet)
	name := fmt.Sprintf("dynamolocal-%s-%d", t.Name(), tables.Add(1))
	_, err = db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return db, name
}

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
}

func num(n int) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
}

// race runs f(i) for i in [0, clients) at once, released together.
func race(f func(i int)) {
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := range clients {
		wg.Go(func() {
			<-ready
			f(i)
		})
	}
	close(ready)
	wg.Wait()
}

func counter(t *testing.T, db *dynamodb.Client, table, pk string) int {
	t.Helper()
	out, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(pk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("GetItem %s: %v", pk, err)
	}
	v, ok := out.Item["n"].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("item %s has no number n: %v", pk, out.Item)
	}
	n, err := strconv.Atoi(v.Value)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// addOne adds 1 to counter c of table.
func addOne(ctx context.Context, db *dynamodb.Client, table string) error {
	_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key("c"),
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1)},
	})
	return err
}

// No ADD is lost.
func TestConcurrentAdd(t *testing.T) {
	db, table := newTable(t)
	race(func(int) {
		for range perOp {
			if err := addOne(t.Context(), db, table); err != nil {
				t.Errorf("ADD: %v", err)
				return
			}
		}
	})
	if got, want := counter(t, db, table, "c"), clients*perOp; got != want {
		t.Errorf("counter = %d after %d concurrent ADDs: %d lost", got, want, want-got)
	}
}

// A compare-and-set has exactly one winner per value: every client reads
// the counter and writes it plus one on condition it did not change. Each
// old value is won once, and the counter ends at the number of wins.
func TestConcurrentCompareAndSet(t *testing.T) {
	db, table := newTable(t)
	if _, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "c"}, "n": num(0)}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	won := map[int]int{} // old value → wins
	race(func(int) {
		// Fewer per client than elsewhere: every win costs a round of
		// all the clients' reads and writes.
		for wins := 0; wins < perCAS; {
			old := counter(t, db, table, "c")
			_, err := db.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
				TableName: aws.String(table), Key: key("c"),
				UpdateExpression:          aws.String("SET n = :new"),
				ConditionExpression:       aws.String("n = :old"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":old": num(old), ":new": num(old + 1)},
			})
			switch {
			case err == nil:
				wins++
				mu.Lock()
				won[old]++
				mu.Unlock()
			case !conditionFailed(err):
				t.Errorf("compare-and-set: %v", err)
				return
			}
		}
	})
	for old, n := range won {
		if n > 1 {
			t.Errorf("%d clients all set the counter from %d", n, old)
		}
	}
	if got, want := counter(t, db, table, "c"), clients*perCAS; got != want {
		t.Errorf("counter = %d after %d won compare-and-sets", got, want)
	}
}

// Of many attribute_not_exists claims on one key, exactly one wins, in
// every round.
func TestConcurrentClaim(t *testing.T) {
	db, table := newTable(t)
	for round := range perOp {
		pk := fmt.Sprintf("claim-%d", round)
		var winners atomic.Int64
		race(func(i int) {
			_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{
				TableName: aws.String(table),
				Item: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: pk}, "owner": num(i)},
				ConditionExpression: aws.String("attribute_not_exists(pk)"),
			})
			switch {
			case err == nil:
				winners.Add(1)
			case !conditionFailed(err):
				t.Errorf("claim: %v", err)
			}
		})
		if n := winners.Load(); n != 1 {
			t.Errorf("round %d: %d winners of the claim, want 1", round, n)
		}
	}
}

// A cancelled transaction undoes nothing but itself: half the clients ADD
// to a counter directly, the other half in transactions beside a condition
// check that always fails. The counter ends at the direct ADDs exactly.
// (moto restores a copy of the whole table when it cancels a transaction,
// losing the direct ADDs that landed meanwhile.)
func TestCancelledTransactionsBesideAdds(t *testing.T) {
	db, table := newTable(t)
	ctx := t.Context()
	var direct atomic.Int64
	race(func(i int) {
		for range perOp {
			if i%2 == 0 {
				if err := addOne(ctx, db, table); err != nil {
					t.Errorf("ADD: %v", err)
					return
				}
				direct.Add(1)
				continue
			}
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Update: &types.Update{
					TableName: aws.String(table), Key: key("c"),
					UpdateExpression:          aws.String("ADD n :big"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":big": num(1000)},
				}},
				{ConditionCheck: &types.ConditionCheck{
					TableName: aws.String(table), Key: key(fmt.Sprintf("absent-%d", i)),
					ConditionExpression: aws.String("attribute_exists(pk)"),
				}},
			}})
			var tce *types.TransactionCanceledException
			if !errors.As(err, &tce) {
				t.Errorf("transaction with a failing check: got %v, want TransactionCanceledException", err)
				return
			}
		}
	})
	if got, want := counter(t, db, table, "c"), int(direct.Load()); got != want {
		t.Errorf("counter = %d, want %d: cancelled transactions changed it or lost direct ADDs", got, want)
	}
}
