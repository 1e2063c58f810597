package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Every conditional write of the store goes through updateIf, putIf or
// deleteIf, so that each asks DynamoDB the same way and reads its answer
// the same way: the item after an update (ALL_NEW), and, when the
// condition refuses the write, the item as it stood (ALL_OLD), which is
// what callers decide on (a token that says the write had landed, the
// state that refused a take or gate, a missing item) without a second
// read. A refusal is an answer (ok false), not an error: the caller turns
// it into its domain's (ErrConflict, ErrQueueNotFound, a GateError, a
// try in another form). Other errors come back as the call wrappers map
// them (calls.go), with TransactionConflictException already retried.
//
// Expressions are written with the SDK's expression builder or, where a
// long condition reads best written out (Take's and Gate's forms), with
// expr; both end as exprs.

// exprs are a conditional write's expressions and the names and values
// their placeholders bind.
type exprs struct {
	update string // UpdateItem's; empty for a put or delete
	cond   string
	names  map[string]string
	values map[string]types.AttributeValue
}

// build is the write with update and condition cond, whose placeholders
// e bound.
func (e *expr) build(update, cond string) exprs {
	return exprs{update: update, cond: cond, names: e.names, values: e.values}
}

// built is the write the SDK's expression builder made.
func built(x expression.Expression) exprs {
	return exprs{update: deref(x.Update()), cond: deref(x.Condition()), names: x.Names(), values: x.Values()}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// orNil returns m, or nil when it is empty: DynamoDB refuses an empty
// map of names or values (and ptr, an empty expression).
func orNil[M ~map[K]V, K comparable, V any](m M) M {
	if len(m) == 0 {
		return nil
	}
	return m
}

func ptr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// condition is the part every conditional input shares: the
// condition, the names and values of x's placeholders, and the item as
// it stood sent back when the condition refuses the write.
func (x exprs) condition() (*string, map[string]string, map[string]types.AttributeValue, types.ReturnValuesOnConditionCheckFailure) {
	return ptr(x.cond), orNil(x.names), orNil(x.values), types.ReturnValuesOnConditionCheckFailureAllOld
}

// updateIf applies x to the item at key, if x's condition holds. ok, it
// returns the item after the update; refused, the item as it stood (nil
// when there was none, or the endpoint sent none back: see orRead).
func (s *Store) updateIf(ctx context.Context, key map[string]types.AttributeValue, x exprs) (item map[string]types.AttributeValue, ok bool, err error) {
	in := &dynamodb.UpdateItemInput{Key: key, UpdateExpression: ptr(x.update), ReturnValues: types.ReturnValueAllNew}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure = x.condition()
	out, err := s.updateItem(ctx, in)
	return answer(out, err, func(o *dynamodb.UpdateItemOutput) map[string]types.AttributeValue { return o.Attributes })
}

// putIf writes item, if x's condition holds on the item it replaces.
// Refused, it returns that item (nil as for updateIf).
func (s *Store) putIf(ctx context.Context, item map[string]types.AttributeValue, x exprs) (old map[string]types.AttributeValue, ok bool, err error) {
	in := &dynamodb.PutItemInput{Item: item}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure = x.condition()
	out, err := s.putItem(ctx, in)
	return answer(out, err, func(*dynamodb.PutItemOutput) map[string]types.AttributeValue { return nil })
}

// deleteIf deletes the item at key, if x's condition holds. Refused, it
// returns the item (nil as for updateIf).
func (s *Store) deleteIf(ctx context.Context, key map[string]types.AttributeValue, x exprs) (old map[string]types.AttributeValue, ok bool, err error) {
	in := &dynamodb.DeleteItemInput{Key: key}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure = x.condition()
	out, err := s.deleteItem(ctx, in)
	return answer(out, err, func(*dynamodb.DeleteItemOutput) map[string]types.AttributeValue { return nil })
}

// answer reads a conditional write's outcome: the item of a write that
// landed (after), the item a refused one sent back, or the error.
func answer[O any](out O, err error, after func(O) map[string]types.AttributeValue) (map[string]types.AttributeValue, bool, error) {
	if old, refused := conditionFailed(err); refused {
		return old, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return after(out), true, nil
}
