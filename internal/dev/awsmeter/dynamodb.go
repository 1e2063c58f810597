package awsmeter

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dynamostore"
)

var _ dynamostore.DynamoDBAPI = (*DynamoDB)(nil)

// Count is what the requests of one operation came to.
type Count struct {
	// Calls counts requests, failed ones included.
	Calls int64
	// CondFailed counts requests refused for a condition: a failed
	// conditional check or a cancelled transaction. DynamoDB bills them
	// (a failed conditional write costs the write).
	CondFailed int64
}

// DynamoDB counts the requests made through it by operation: the SDK
// operation and the items it touches, named by their sort key as
// internal/dynamostore lays out its table ("UpdateItem state" is a take, gate,
// end of a run, pause, unpause or purge; "PutItem job" a job created or
// updated; "UpdateItem lane" a lane written or its jobs counted;
// "Query by_status" a listing).
// Safe for concurrent use.
type DynamoDB struct {
	dynamostore.DynamoDBAPI
	mu     sync.Mutex
	counts map[string]Count
	// labelled counts the requests made under a context of WithLabel,
	// by "label: operation".
	labelled map[string]Count
}

type labelKey struct{}

// WithLabel returns ctx with label on it: the requests a DynamoDB passes
// on under it are counted also by "label: operation" (Labelled), so a
// caller that wraps the store's steps can tell whose writes an item took
// ("gate: UpdateItem state" against "take: UpdateItem state").
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

// Labelled returns a snapshot of the counts of the requests made under a
// label (WithLabel), by "label: operation".
func (d *DynamoDB) Labelled() map[string]Count {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.labelled)
}

// NewDynamoDB wraps api.
func NewDynamoDB(api dynamostore.DynamoDBAPI) *DynamoDB { return &DynamoDB{DynamoDBAPI: api} }

// Counts returns a snapshot of the counts so far, by operation.
func (d *DynamoDB) Counts() map[string]Count {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.counts)
}

// Total returns the counts of every operation added up.
func (d *DynamoDB) Total() Count {
	var t Count
	for _, c := range d.Counts() {
		t.Calls += c.Calls
		t.CondFailed += c.CondFailed
	}
	return t
}

func (d *DynamoDB) count(ctx context.Context, op string, err error) {
	c := Count{Calls: 1}
	var ccf *types.ConditionalCheckFailedException
	var tce *types.TransactionCanceledException
	if errors.As(err, &ccf) || errors.As(err, &tce) {
		c.CondFailed = 1
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.counts == nil {
		d.counts = map[string]Count{}
	}
	add(d.counts, op, c)
	if label, ok := ctx.Value(labelKey{}).(string); ok {
		if d.labelled == nil {
			d.labelled = map[string]Count{}
		}
		add(d.labelled, label+": "+op, c)
	}
}

func add(m map[string]Count, op string, c Count) {
	old := m[op]
	m[op] = Count{Calls: old.Calls + c.Calls, CondFailed: old.CondFailed + c.CondFailed}
}

// GetItem counts a read.
func (d *DynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := d.DynamoDBAPI.GetItem(ctx, in, o...)
	d.count(ctx, single("GetItem", in.Key), err)
	return out, err
}

// PutItem counts a put.
func (d *DynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := d.DynamoDBAPI.PutItem(ctx, in, o...)
	d.count(ctx, single("PutItem", in.Item), err)
	return out, err
}

// UpdateItem counts an update.
func (d *DynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := d.DynamoDBAPI.UpdateItem(ctx, in, o...)
	d.count(ctx, single("UpdateItem", in.Key), err)
	return out, err
}

// DeleteItem counts a delete.
func (d *DynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := d.DynamoDBAPI.DeleteItem(ctx, in, o...)
	d.count(ctx, single("DeleteItem", in.Key), err)
	return out, err
}

// Query counts a page of a query, named by its index ("Query table" for
// the table itself) and "count" for Select COUNT.
func (d *DynamoDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := d.DynamoDBAPI.Query(ctx, in, o...)
	op := "Query " + cmp.Or(aws.ToString(in.IndexName), "table")
	if in.Select == types.SelectCount {
		op += " count"
	}
	d.count(ctx, op, err)
	return out, err
}

// BatchGetItem counts a batch read.
func (d *DynamoDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := d.DynamoDBAPI.BatchGetItem(ctx, in, o...)
	var kinds []string
	for _, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			kinds = append(kinds, itemKind(k))
		}
	}
	slices.Sort(kinds)
	d.count(ctx, "BatchGetItem "+strings.Join(slices.Compact(kinds), "+"), err)
	return out, err
}

// TransactWriteItems counts a transaction, named by its actions in order:
// "TransactWriteItems put state, put config".
func (d *DynamoDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := d.DynamoDBAPI.TransactWriteItems(ctx, in, o...)
	var acts []string
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			acts = append(acts, "put "+itemKind(it.Put.Item))
		case it.Update != nil:
			acts = append(acts, "update "+itemKind(it.Update.Key))
		case it.Delete != nil:
			acts = append(acts, "delete "+itemKind(it.Delete.Key))
		case it.ConditionCheck != nil:
			acts = append(acts, "check "+itemKind(it.ConditionCheck.Key))
		}
	}
	d.count(ctx, "TransactWriteItems "+strings.Join(acts, ", "), err)
	return out, err
}

// single names a single-item request: the SDK operation and the item's
// sort key ("state", "config", "resume" or "job" in slotq's table; "lane"
// for every lane, whose sort key is K#<key>; "lane waiter" for every
// waiter kept in an item of its own, whose sort key is W#<epoch>#…).
func single(operation string, key map[string]types.AttributeValue) string {
	return operation + " " + itemKind(key)
}

func itemKind(key map[string]types.AttributeValue) string {
	if sk, ok := key["sk"].(*types.AttributeValueMemberS); ok {
		if strings.HasPrefix(sk.Value, "K#") {
			return "lane"
		}
		if strings.HasPrefix(sk.Value, "W#") {
			return "lane waiter"
		}
		return sk.Value
	}
	return "?"
}
