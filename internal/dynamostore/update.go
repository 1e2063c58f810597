package dynamostore

import (
	"context"
	"reflect"
	"regexp"
	"strconv"
	"strings"

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
// Expressions are built with the SDK's expression builder, which names
// and binds every placeholder: the conditions and updates several writes
// share are helpers that return its builders (all, genIs, versionIs,
// dueUpdate, …), and when and updateWhen make a write of them. Take's and
// Gate's forms (take.go, limits.go) are still written out as text, with
// expr; the builder's parts they share come in through expr.inline, at
// the end of this file, which goes when they move to the builder.

// exprs are a conditional write's expressions and the names and values
// their placeholders bind.
type exprs struct {
	update string // UpdateItem's; empty for a put or delete
	cond   string
	names  map[string]string
	values map[string]types.AttributeValue
	err    error // the builder's, which the write returns instead
}

// when is a put's or a delete's write: on condition c.
func when(c expression.ConditionBuilder) exprs {
	return built(expression.NewBuilder().WithCondition(c).Build())
}

// updateWhen is an update's write: u on condition c.
func updateWhen(u expression.UpdateBuilder, c expression.ConditionBuilder) exprs {
	return built(expression.NewBuilder().WithCondition(c).WithUpdate(u).Build())
}

// built is the write the SDK's expression builder made.
func built(x expression.Expression, err error) exprs {
	if err != nil {
		return exprs{err: err}
	}
	return exprs{update: deref(x.Update()), cond: deref(x.Condition()), names: x.Names(), values: x.Values()}
}

// all is the condition that every one of cs that is set holds (unset
// when none is).
func all(cs ...expression.ConditionBuilder) expression.ConditionBuilder {
	var set []expression.ConditionBuilder
	for _, c := range cs {
		if c.IsSet() {
			set = append(set, c)
		}
	}
	switch len(set) {
	case 0:
		return expression.ConditionBuilder{}
	case 1:
		return set[0]
	}
	return expression.And(set[0], set[1], set[2:]...)
}

// notToken is the condition that attribute a does not carry write token
// tok: a write that meets its own token was sent again after it landed.
func notToken(a, tok string) expression.ConditionBuilder {
	t := expression.Name(a)
	return missingOr(t, t.NotEqual(expression.Value(str(tok))))
}

// missingOr is the condition that attribute a is missing or c holds.
func missingOr(a expression.NameBuilder, c expression.ConditionBuilder) expression.ConditionBuilder {
	return a.AttributeNotExists().Or(c)
}

// setOrRemove sets attribute a to v when present, and else removes it.
func setOrRemove(u expression.UpdateBuilder, a string, present bool, v types.AttributeValue) expression.UpdateBuilder {
	if present {
		return u.Set(expression.Name(a), expression.Value(v))
	}
	return u.Remove(expression.Name(a))
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
	return send(ctx, x, s.updateItem, in, func(o *dynamodb.UpdateItemOutput) map[string]types.AttributeValue { return o.Attributes })
}

// putIf writes item, if x's condition holds on the item it replaces.
// Refused, it returns that item (nil as for updateIf).
func (s *Store) putIf(ctx context.Context, item map[string]types.AttributeValue, x exprs) (old map[string]types.AttributeValue, ok bool, err error) {
	in := &dynamodb.PutItemInput{Item: item}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure = x.condition()
	return send(ctx, x, s.putItem, in, func(*dynamodb.PutItemOutput) map[string]types.AttributeValue { return nil })
}

// deleteIf deletes the item at key, if x's condition holds. Refused, it
// returns the item (nil as for updateIf).
func (s *Store) deleteIf(ctx context.Context, key map[string]types.AttributeValue, x exprs) (old map[string]types.AttributeValue, ok bool, err error) {
	in := &dynamodb.DeleteItemInput{Key: key}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure = x.condition()
	return send(ctx, x, s.deleteItem, in, func(*dynamodb.DeleteItemOutput) map[string]types.AttributeValue { return nil })
}

// send sends the conditional write in with call, unless the builder
// failed to make x, its expressions, and reads the outcome: the item of
// a write that landed (after), the item a refused one sent back, or the
// error.
func send[I, O any](ctx context.Context, x exprs, call func(context.Context, I) (O, error), in I, after func(O) map[string]types.AttributeValue) (map[string]types.AttributeValue, bool, error) {
	if x.err != nil {
		return nil, false, x.err
	}
	out, err := call(ctx, in)
	if old, refused := conditionFailed(err); refused {
		return old, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return after(out), true, nil
}

// Take's and Gate's forms (take.go, limits.go), and the staging of a
// configure that pins their limit state (reslotExprs), are written out
// as text with expr until they move to the builder; the parts they share
// with the builder's writes (genCond, capForm.add, slowGate) are the
// builder's, inlined.

// expr collects the names and values of one expression written out.
type expr struct {
	names   map[string]string
	values  map[string]types.AttributeValue
	inlined int   // the builder's placeholders inline has renamed
	err     error // the builder's, from inline
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// n returns the placeholder of an attribute name ("#status").
func (e *expr) n(name string) string {
	e.names["#"+name] = name
	return "#" + name
}

// v binds a value to a placeholder (":now") and returns it.
func (e *expr) v(placeholder string, v types.AttributeValue) string {
	e.values[placeholder] = v
	return placeholder
}

// build is the write with update and condition cond, whose placeholders
// e bound.
func (e *expr) build(update, cond string) exprs {
	return exprs{update: update, cond: cond, names: e.names, values: e.values, err: e.err}
}

// builderPlaceholder is a placeholder the builder writes: #0, :0, …
var builderPlaceholder = regexp.MustCompile(`[#:][0-9]+`)

// inline writes condition c and update u, which the builder made, into
// e's text: the condition, parenthesised, and the update's items by
// clause ("SET", "REMOVE", …: their comma-separated items). Their
// placeholders become e's own (#i0, :i0, … apart from e.n's and e.v's).
// An unset u is no update. A builder's error is the write's (build).
func (e *expr) inline(c expression.ConditionBuilder, u expression.UpdateBuilder) (cond string, clauses map[string]string) {
	b := expression.NewBuilder().WithCondition(c)
	if !reflect.ValueOf(u).IsZero() {
		b = b.WithUpdate(u)
	}
	x, err := b.Build()
	if err != nil {
		e.err = err
		return "", nil
	}
	renamed := map[string]string{}
	rename := func(p string) string {
		if r, ok := renamed[p]; ok {
			return r
		}
		r := p[:1] + "i" + strconv.Itoa(e.inlined)
		e.inlined++
		renamed[p] = r
		if p[0] == '#' {
			e.names[r] = x.Names()[p]
		} else {
			e.values[r] = x.Values()[p]
		}
		return r
	}
	clauses = map[string]string{}
	for _, line := range strings.Split(builderPlaceholder.ReplaceAllStringFunc(deref(x.Update()), rename), "\n") {
		if mode, items, ok := strings.Cut(line, " "); ok {
			clauses[mode] = items
		}
	}
	return "(" + builderPlaceholder.ReplaceAllStringFunc(deref(x.Condition()), rename) + ")", clauses
}
