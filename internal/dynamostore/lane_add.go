package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// AddPending adds n to the lane's pending count with one UpdateItem (ADD
// pending, and SET v = if_not_exists(v, laneSeed+1): concurrent adds all
// count, and none moves the version, so none makes a PutLane fail),
// creating the item if there is none, at laneSeed+1 as PutLane creates
// one, on condition that the lane is of generation gen (or has none) and
// does not carry this call's token (in add_token, apart from the other
// writes' write_token: see attrAddToken). If it carries the token, the
// SDK sent the update again after it had landed: the item is the answer.
// If the lane is of another generation, a deleted queue's, it is replaced
// by a fresh one with pending n, on condition that it is still at the
// version read, at the next version, and the add is done; if that fails,
// another write came first, and the add starts over.
//
// The ttl this sets ignores a holder's lease, which ends far sooner than
// laneKeep.
func (s *Store) AddPending(ctx context.Context, queue string, gen int64, key string, n int64) (slot.Lane, error) {
	tok := newToken()
	for range 6 {
		g, v := expression.Name(attrGen), expression.Name(attrVersion)
		now := s.now()
		upd := expression.Add(expression.Name(attrPending), expression.Value(num(n))).
			Set(v, v.IfNotExists(expression.Value(num(laneSeed(now)+1)))).
			Set(expression.Name(attrQueue), expression.Value(str(queue))).
			Set(g, expression.Value(num(gen))).
			Set(expression.Name(attrTTL), expression.Value(laneTTL(now, slot.Lane{}))).
			Set(expression.Name(attrAddToken), expression.Value(str(tok)))
		if key != "" {
			upd = upd.Set(expression.Name(attrLaneKey), expression.Value(str(key)))
		}
		cond := missingOr(g, g.Equal(expression.Value(num(gen)))).And(notToken(attrAddToken, tok))
		m, ok, err := s.updateIf(ctx, laneKey(queue, key), updateWhen(upd, cond))
		if err != nil {
			return slot.Lane{}, fmt.Errorf("add pending %s/%s: %w", queue, key, err)
		}
		if !ok {
			old, err := s.orRead(ctx, laneKey(queue, key), m)
			if err != nil {
				return slot.Lane{}, fmt.Errorf("add pending %s/%s: %w", queue, key, err)
			}
			if old == nil {
				continue // deleted since: add again
			}
			if hasAddToken(old, tok) {
				// The SDK sent this very add again after it had landed.
				return s.laneFrom(ctx, old, "add pending", queue, key)
			}
			l, err := decodeLane(old)
			if err != nil {
				return slot.Lane{}, fmt.Errorf("add pending %s/%s: %w", queue, key, err)
			}
			if l.Gen == gen {
				continue // a condition that failed on a state now gone
			}
			fresh, done, err := s.freshLane(ctx, l, gen, n, tok)
			if err != nil {
				return slot.Lane{}, fmt.Errorf("add pending %s/%s: %w", queue, key, err)
			}
			if done {
				return fresh, nil
			}
			continue
		}
		return s.laneFrom(ctx, m, "add pending", queue, key)
	}
	return slot.Lane{}, fmt.Errorf("add pending %s/%s: the lane kept changing under the update", queue, key)
}

func hasAddToken(m map[string]types.AttributeValue, tok string) bool {
	v, ok := m[attrAddToken].(*types.AttributeValueMemberS)
	return ok && v.Value == tok
}

// laneFrom is the lane of item m, which a write answered, with the
// waiters of its tail.
func (s *Store) laneFrom(ctx context.Context, m map[string]types.AttributeValue, op, queue, key string) (slot.Lane, error) {
	l, _, err := s.laneWithTail(ctx, queue, key, m)
	if err != nil {
		return slot.Lane{}, fmt.Errorf("%s %s/%s: %w", op, queue, key, err)
	}
	return l, nil
}

// freshLane replaces old, a lane of another generation, by a fresh lane
// of gen with pending n, at old's version + 1, on condition that it is
// still at old's version and that gen is the queue's generation now (a
// ConditionCheck on the queue's config item, in one transaction: rare,
// once per lane and generation, and off the hot item). done is false when
// another write came first; ErrQueueNotFound when the queue is gone or of
// another generation, so a caller of a deleted generation never takes a
// lane of the queue created again under its name. It carries
// AddPending's token, so a re-sent put, or the add tried again after it,
// finds that it landed.
func (s *Store) freshLane(ctx context.Context, old slot.Lane, gen, n int64, tok string) (slot.Lane, bool, error) {
	fresh := old.Fresh(gen)
	fresh.Pending = n
	m, err := laneItem(fresh, old.Version+1, tok, s.now())
	if err != nil {
		return slot.Lane{}, false, err
	}
	isGen := itemExists().And(expression.Name(attrGen).AttributeNotExists())
	if gen != 0 {
		isGen = expression.Name(attrGen).Equal(expression.Value(num(gen)))
	}
	gx, err := expression.NewBuilder().WithCondition(isGen).Build()
	if err != nil {
		return slot.Lane{}, false, err
	}
	vx, err := expression.NewBuilder().WithCondition(versionIs(old.Version)).Build()
	if err != nil {
		return slot.Lane{}, false, err
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: &s.table, Key: configKey(old.Queue),
			ConditionExpression: gx.Condition(), ExpressionAttributeNames: gx.Names(), ExpressionAttributeValues: gx.Values()}},
		{Put: &types.Put{TableName: &s.table, Item: m, ConditionExpression: vx.Condition(),
			ExpressionAttributeNames: vx.Names(), ExpressionAttributeValues: vx.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
	})
	if reasons, ok := cancelReasons(err); ok {
		if len(reasons) > 0 && code(reasons[0]) == reasonConditional {
			return slot.Lane{}, false, fmt.Errorf("start lane afresh for generation %d: %w", gen, engine.ErrQueueNotFound)
		}
		if len(reasons) > 1 && code(reasons[1]) == reasonConditional {
			if cur := reasons[1].Item; hasAddToken(cur, tok) {
				l, err := decodeLane(cur)
				return l, err == nil, err
			}
			return slot.Lane{}, false, nil
		}
		return slot.Lane{}, false, txError(err, reasons)
	}
	if err != nil {
		return slot.Lane{}, false, err
	}
	l, err := decodeLane(m)
	return l, err == nil, err
}
