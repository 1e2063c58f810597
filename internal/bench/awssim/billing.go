package awssim

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dynamostore"
)

// Bill is what DynamoDB on-demand would charge for the calls a Billed
// client passed on, in request units.
type Bill struct {
	Calls int64
	// ReadUnits are read request units; WriteUnits write request units,
	// index writes and writes that failed their condition included.
	ReadUnits, WriteUnits float64
	// IndexWrites is the part of WriteUnits spent on global secondary
	// indexes; FailedWrites the part spent on writes that failed a
	// condition (or cancelled transactions).
	IndexWrites, FailedWrites float64
}

// Sub returns b minus an earlier bill.
func (b Bill) Sub(o Bill) Bill {
	return Bill{b.Calls - o.Calls, b.ReadUnits - o.ReadUnits, b.WriteUnits - o.WriteUnits,
		b.IndexWrites - o.IndexWrites, b.FailedWrites - o.FailedWrites}
}

// Billed wraps a DynamoDB client and works out, call by call, the request
// units DynamoDB on-demand bills, from the items themselves: an emulator's
// ConsumedCapacity need not be DynamoDB's (moto_server reports 0.5 for an
// UpdateItem and nothing for a TransactWriteItems), so it cannot be
// trusted against one.
//
// The rules applied (DynamoDB developer guide, "Read/write capacity mode"
// and "Global secondary indexes — provisioned throughput"):
//   - a write costs 1 unit per started KB of the larger of the item's before
//     and after images; in TransactWriteItems twice that;
//   - a write that fails its condition still costs the item's size (at least
//     1 unit), and a cancelled transaction its items' (twice, as above);
//   - each global secondary index the item is in costs 1 unit per started KB
//     of the index entry (projection ALL: the item) when the entry is put,
//     updated or deleted, and 2 when its index key changes (delete + put);
//     a keys-only index (due) 1 unit when its entry is put or deleted, 2
//     when its key changes, nothing otherwise;
//   - a strongly consistent read costs 1 unit per started 4 KB, an
//     eventually consistent one half that; a Query adds up the items it
//     read before rounding, a BatchGetItem rounds item by item; an empty
//     answer still costs the minimum.
//
// To know before and after images it reads each written item before and
// after the write through the unwrapped client (those reads are not billed).
// That is not atomic with other writers; the cost benchmark runs one job's
// steps at a time, so it does not matter there.
type Billed struct {
	dynamostore.DynamoDBAPI
	mu   sync.Mutex
	bill Bill
	// spent is the time spent reading images, which a caller timing its
	// calls should take off.
	spent time.Duration
}

// Overhead returns the time spent reading before and after images so far.
func (b *Billed) Overhead() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// NewBilled wraps api.
func NewBilled(api dynamostore.DynamoDBAPI) *Billed { return &Billed{DynamoDBAPI: api} }

// Bill returns the bill so far.
func (b *Billed) Bill() Bill {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bill
}

func (b *Billed) add(x Bill) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bill.Calls += x.Calls
	b.bill.ReadUnits += x.ReadUnits
	b.bill.WriteUnits += x.WriteUnits
	b.bill.IndexWrites += x.IndexWrites
	b.bill.FailedWrites += x.FailedWrites
}

// Index key attributes of the table's global secondary indexes that
// project ALL, and of those that project keys only (the due index: an
// entry is 1 unit when put or deleted, 2 when its key changes, and a write
// that leaves its key alone writes nothing to it).
var (
	indexKeys     = [][2]string{{"queue_status", "ticket"}, {"item_kind", "queue"}}
	keysOnlyIndex = [][2]string{{"due_pk", "due_sk"}}
)

func readUnits(bytes int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(bytes)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

func kb(bytes int) float64 { return math.Max(1, math.Ceil(float64(bytes)/1024)) }

// image reads an item without billing it; nil if there is none.
func (b *Billed) image(ctx context.Context, table *string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t0 := time.Now()
	out, err := b.DynamoDBAPI.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
	b.mu.Lock()
	b.spent += time.Since(t0)
	b.mu.Unlock()
	if err != nil || out == nil {
		return nil
	}
	return out.Item
}

func keyOf(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": item["pk"], "sk": item["sk"]}
}

type written struct {
	table  *string
	key    map[string]types.AttributeValue
	before map[string]types.AttributeValue
}

func (b *Billed) before(ctx context.Context, table *string, key map[string]types.AttributeValue) written {
	return written{table, key, b.image(ctx, table, key)}
}

// charge bills writes after the call returned err.
func (b *Billed) charge(ctx context.Context, ws []written, transactional bool, err error) {
	x := Bill{Calls: 1}
	factor := 1.0
	if transactional {
		factor = 2
	}
	var ccf *types.ConditionalCheckFailedException
	var tce *types.TransactionCanceledException
	if err != nil {
		if errors.As(err, &ccf) || errors.As(err, &tce) {
			for _, w := range ws {
				u := factor * kb(ItemSize(w.before))
				x.WriteUnits += u
				x.FailedWrites += u
			}
		}
		b.add(x)
		return
	}
	for _, w := range ws {
		after := b.image(ctx, w.table, w.key)
		x.WriteUnits += factor * kb(max(ItemSize(w.before), ItemSize(after)))
		for _, ik := range indexKeys {
			in0, in1 := hasKeys(w.before, ik), hasKeys(after, ik)
			var n float64
			switch {
			case in0 && in1 && sameKeys(w.before, after, ik):
				n = kb(max(ItemSize(w.before), ItemSize(after)))
			case in0 && in1:
				n = kb(ItemSize(w.before)) + kb(ItemSize(after))
			case in0:
				n = kb(ItemSize(w.before))
			case in1:
				n = kb(ItemSize(after))
			}
			x.WriteUnits += n
			x.IndexWrites += n
		}
		for _, ik := range keysOnlyIndex {
			in0, in1 := hasKeys(w.before, ik), hasKeys(after, ik)
			var n float64
			switch {
			case in0 && in1 && sameKeys(w.before, after, ik):
			case in0 && in1:
				n = 2
			case in0 || in1:
				n = 1
			}
			x.WriteUnits += n
			x.IndexWrites += n
		}
	}
	b.add(x)
}

func hasKeys(item map[string]types.AttributeValue, k [2]string) bool {
	if item == nil {
		return false
	}
	_, a := item[k[0]]
	_, c := item[k[1]]
	return a && c
}

func sameKeys(x, y map[string]types.AttributeValue, k [2]string) bool {
	return attrString(x[k[0]]) == attrString(y[k[0]]) && attrString(x[k[1]]) == attrString(y[k[1]])
}

func attrString(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S" + v.Value
	case *types.AttributeValueMemberN:
		return "N" + v.Value
	}
	return ""
}

// PutItem bills a put.
func (b *Billed) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	w := b.before(ctx, in.TableName, keyOf(in.Item))
	out, err := b.DynamoDBAPI.PutItem(ctx, in, o...)
	b.charge(ctx, []written{w}, false, err)
	return out, err
}

// UpdateItem bills an update.
func (b *Billed) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	w := b.before(ctx, in.TableName, in.Key)
	out, err := b.DynamoDBAPI.UpdateItem(ctx, in, o...)
	b.charge(ctx, []written{w}, false, err)
	return out, err
}

// DeleteItem bills a delete: the item's size, as any write.
func (b *Billed) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	w := b.before(ctx, in.TableName, in.Key)
	out, err := b.DynamoDBAPI.DeleteItem(ctx, in, o...)
	b.charge(ctx, []written{w}, false, err)
	return out, err
}

// TransactWriteItems bills a transaction.
func (b *Billed) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	var ws []written
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			ws = append(ws, b.before(ctx, it.Put.TableName, keyOf(it.Put.Item)))
		case it.Update != nil:
			ws = append(ws, b.before(ctx, it.Update.TableName, it.Update.Key))
		case it.Delete != nil:
			ws = append(ws, b.before(ctx, it.Delete.TableName, it.Delete.Key))
		case it.ConditionCheck != nil:
			ws = append(ws, b.before(ctx, it.ConditionCheck.TableName, it.ConditionCheck.Key))
		}
	}
	out, err := b.DynamoDBAPI.TransactWriteItems(ctx, in, o...)
	b.charge(ctx, ws, true, err)
	return out, err
}

// GetItem bills a read.
func (b *Billed) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := b.DynamoDBAPI.GetItem(ctx, in, o...)
	x := Bill{Calls: 1}
	if err == nil {
		x.ReadUnits = readUnits(ItemSize(out.Item), aws.ToBool(in.ConsistentRead))
	}
	b.add(x)
	return out, err
}

// Query bills a query page by the items it returned. (A filter would hide
// items that were read and billed; slotq filters only expired jobs.)
func (b *Billed) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := b.DynamoDBAPI.Query(ctx, in, o...)
	x := Bill{Calls: 1}
	if err == nil {
		n := 0
		for _, it := range out.Items {
			n += ItemSize(it)
		}
		if len(out.Items) == 0 && out.ScannedCount > 0 {
			n = int(out.ScannedCount) * 1024 // Select COUNT: assume 1 KB items
		}
		x.ReadUnits = readUnits(n, aws.ToBool(in.ConsistentRead))
	}
	b.add(x)
	return out, err
}

// BatchGetItem bills each item returned.
func (b *Billed) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := b.DynamoDBAPI.BatchGetItem(ctx, in, o...)
	x := Bill{Calls: 1}
	if err == nil {
		for table, items := range out.Responses {
			consistent := aws.ToBool(in.RequestItems[table].ConsistentRead)
			for _, it := range items {
				x.ReadUnits += readUnits(ItemSize(it), consistent)
			}
		}
	}
	b.add(x)
	return out, err
}

// ItemSize is an item's size as DynamoDB counts it: each attribute's name
// plus its value (strings and binaries by length, numbers about one byte
// per two digits plus one, maps and lists 3 bytes plus their elements plus
// one per element).
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(v.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += (len(s)+1)/2 + 1
		}
		return n
	}
	return 0
}
