package dynamostore

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// versionIs is the condition that a lane item is at version from: for 0,
// that there is none (or one without a version).
func versionIs(from int64) expression.ConditionBuilder {
	v := expression.Name(attrVersion)
	if from == 0 {
		return v.AttributeNotExists()
	}
	return v.Equal(expression.Value(num(from)))
}

// PutLane writes the lane item with one conditional UpdateItem: it SETs
// every field of l but pending (and REMOVEs those l leaves empty), ADDs
// pendingDelta to pending and SETs v to from+1 (from 0, to laneSeed+1), on
// condition v = from (no item for 0). pending is left to the ADD, and
// AddPending leaves v alone, so an add never makes a put fail. A re-sent
// update that meets its own write token landed: the item is the answer.
//
// A lane that l leaves idle is deleted instead when pending +
// pendingDelta comes to 0 or less: a DeleteItem on condition v = from and
// pending <= -pendingDelta. Which of the two holds only a try tells, as
// adds may have moved the count since the caller read it; the count as
// read (l.Pending) picks the likelier, so the common case costs one
// write: the delete if it comes to 0 or less, else the update on
// condition v = from and pending > -pendingDelta. A try refused with v
// still at from was refused for the count (an add came between): the
// other one is tried. A delete leaves no token to meet, so a re-sent
// delete whose first send landed answers ErrConflict, and the caller,
// reading the lane again, finds it deleted, as it meant it to be.
// ErrConflict.
func (s *Store) PutLane(ctx context.Context, l slot.Lane, from, pendingDelta int64) (slot.Lane, error) {
	if !l.Idle() {
		out, _, err := s.writeLane(ctx, l, from, pendingDelta, false)
		return out, err
	}
	if from == 0 {
		// None stored, so none counted: the delta alone decides, and a
		// "delete" only checks that there is still no item.
		if pendingDelta > 0 {
			out, _, err := s.writeLane(ctx, l, 0, pendingDelta, false)
			return out, err
		}
		if _, err := s.deleteLane(ctx, l, 0, pendingDelta); err != nil {
			return slot.Lane{}, err
		}
		return slot.Lane{Queue: l.Queue, Key: l.Key}, nil
	}
	del := l.Pending+pendingDelta <= 0
	for range laneCountTries {
		if del {
			done, err := s.deleteLane(ctx, l, from, pendingDelta)
			if err != nil {
				return slot.Lane{}, err
			}
			if done {
				return slot.Lane{Queue: l.Queue, Key: l.Key}, nil
			}
		} else {
			out, done, err := s.writeLane(ctx, l, from, pendingDelta, true)
			if err != nil || done {
				return out, err
			}
		}
		del = !del
	}
	return slot.Lane{}, fmt.Errorf("put lane %s/%s: its pending count kept changing", l.Queue, l.Key)
}

// laneCountTries bounds PutLane's tries of an idle lane: each refusal for
// the count alone means adds moved it across 0 since the last try.
const laneCountTries = 6

// countIs is the condition that the lane's pending count plus delta is
// above 0 (above false) or not: an item without pending counts 0.
func countIs(above bool, delta int64) expression.ConditionBuilder {
	p, neg := expression.Name(attrPending), expression.Value(num(-delta))
	c, missingCounts := p.LessThanEqual(neg), delta <= 0
	if above {
		c, missingCounts = p.GreaterThan(neg), delta > 0
	}
	if missingCounts {
		return missingOr(p, c)
	}
	return c
}

// atVersion reports whether a lane item m is at version from.
func atVersion(m map[string]types.AttributeValue, from int64) bool {
	it := item{m: m}
	return it.int(attrVersion) == from && it.err == nil
}

// writeLane is PutLane's UpdateItem; counted adds the condition that the
// count stays above 0. done is false when that condition alone failed.
func (s *Store) writeLane(ctx context.Context, l slot.Lane, from, delta int64, counted bool) (_ slot.Lane, done bool, _ error) {
	tok := newToken()
	now := s.now()
	v := from + 1
	if from == 0 {
		v = laneSeed(now) + 1
	}
	upd := expression.Set(expression.Name(attrQueue), expression.Value(str(l.Queue))).
		Set(expression.Name(attrGen), expression.Value(num(l.Gen))).
		Set(expression.Name(attrVersion), expression.Value(num(v))).
		Set(expression.Name(attrTTL), expression.Value(laneTTL(now, l))).
		Set(expression.Name(attrWriteToken), expression.Value(str(tok)))
	if l.Key != "" {
		upd = upd.Set(expression.Name(attrLaneKey), expression.Value(str(l.Key)))
	}
	if strings.ContainsRune(l.Holder.JobID, ',') {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: holder: job id %q cannot be stored", l.Queue, l.Key, l.Holder.JobID)
	}
	if _, err := encodeWaiting(l.Waiting); err != nil {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
	}
	more, err := encodeMore(l.More)
	if err != nil {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
	}
	stored, at, err := s.storedTail(ctx, l.Queue, l.Key, from)
	if err != nil {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
	}
	if !at {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s at version %d: %w", l.Queue, l.Key, from, engine.ErrConflict)
	}
	plan := planTail(l.Waiting, stored, v)
	waiting, _ := encodeWaiting(plan.inline)
	if plan.next.epoch != 0 {
		waiting = tailMark + waiting
	}
	held := l.Holder != (slot.Waiter{})
	upd = setOrRemove(upd, attrHolderTicket, held, num(l.Holder.Ticket))
	upd = setOrRemove(upd, attrHolderID, held, str(l.Holder.JobID))
	upd = setOrRemove(upd, attrUntil, !l.Until.IsZero(), timeNum(l.Until))
	upd = setOrRemove(upd, attrLast, l.Last != 0, num(l.Last))
	upd = setOrRemove(upd, attrWaiting, waiting != "", str(waiting))
	upd = setOrRemove(upd, attrMore, more != "", str(more))
	upd = setOrRemove(upd, attrTailEpoch, plan.next.epoch != 0, num(plan.next.epoch))
	upd = setOrRemove(upd, attrTailAfter, plan.next.after != "", str(plan.next.after))
	upd = setOrRemove(upd, attrTailDels, plan.next.dels != 0, num(plan.next.dels))
	// The lane is an entry of the due index (due.go) while it is due.
	upd = dueUpdate(upd, lanePK(l.Queue), skLanePrefix+l.Key, engine.LaneDue(l))
	upd = upd.Add(expression.Name(attrPending), expression.Value(num(delta)))
	cond := versionIs(from)
	if counted {
		cond = cond.And(countIs(true, delta))
	}
	x := updateWhen(upd, cond)
	// refused decides on the lane item as it stood when the write was
	// refused.
	refused := func(old map[string]types.AttributeValue) (slot.Lane, bool, error) {
		switch {
		case hasToken(old, tok):
			// The SDK sent this very update again after it had landed.
			s.tails.put(l.Queue, l.Key, v, plan.next)
			stored, err := s.laneFrom(ctx, old, "put lane", l.Queue, l.Key)
			return stored, err == nil, err
		case counted && old != nil && atVersion(old, from):
			return slot.Lane{}, false, nil // refused for the count
		}
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s at version %d: %w", l.Queue, l.Key, from, engine.ErrConflict)
	}
	if len(plan.puts)+len(plan.dels) > 0 {
		return s.writeLaneTail(ctx, l, v, delta, plan, x, refused)
	}
	m, ok, err := s.updateIf(ctx, laneKey(l.Queue, l.Key), x)
	if err != nil {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
	}
	if !ok {
		old, err := s.orRead(ctx, laneKey(l.Queue, l.Key), m)
		if err != nil {
			return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
		}
		return refused(old)
	}
	s.tails.put(l.Queue, l.Key, v, plan.next)
	out, err := s.laneFrom(ctx, m, "put lane", l.Queue, l.Key)
	return out, err == nil, err
}

// writeLaneTail is writeLane's write of a lane whose tail items change:
// the lane's update x and the tail's puts and deletes of plan, in one
// transaction. A transaction answers no item, so the lane as stored is
// read after it (one small GetItem); if another write came first since,
// the answer is l at version v with the pending count as l had it plus
// delta.
func (s *Store) writeLaneTail(ctx context.Context, l slot.Lane, v, delta int64, plan tailPlan, x exprs,
	refused func(map[string]types.AttributeValue) (slot.Lane, bool, error)) (slot.Lane, bool, error) {
	if x.err != nil {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, x.err)
	}
	lk := laneKey(l.Queue, l.Key)
	upd := &types.Update{TableName: &s.table, Key: lk, UpdateExpression: ptr(x.update)}
	upd.ConditionExpression, upd.ExpressionAttributeNames, upd.ExpressionAttributeValues, upd.ReturnValuesOnConditionCheckFailure = x.condition()
	items := append([]types.TransactWriteItem{{Update: upd}}, s.tailWrites(l.Queue, l.Key, plan, v, num(ttlSeconds(s.now().Add(laneKeep))))...)
	err := s.transact(ctx, items)
	if reasons, ok := cancelReasons(err); ok {
		if len(reasons) > 0 && code(reasons[0]) == reasonConditional {
			old, err := s.orRead(ctx, lk, reasons[0].Item)
			if err != nil {
				return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
			}
			return refused(old)
		}
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, txError(err, reasons))
	}
	if err != nil {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
	}
	s.tails.put(l.Queue, l.Key, v, plan.next)
	m, err := s.getItem(ctx, lk)
	if err == nil && m != nil && atVersion(m, v) {
		out, err := s.laneFrom(ctx, m, "put lane", l.Queue, l.Key)
		return out, err == nil, err
	}
	out := l
	out.Version, out.Pending = v, l.Pending+delta
	return out, true, nil
}

// deleteLane is PutLane's DeleteItem: on condition v = from and, from a
// stored version, that the count plus delta is 0 or less. done is false
// when that condition alone failed.
func (s *Store) deleteLane(ctx context.Context, l slot.Lane, from, delta int64) (done bool, _ error) {
	cond := versionIs(from)
	if from != 0 {
		cond = cond.And(countIs(false, delta))
	}
	old, ok, err := s.deleteIf(ctx, laneKey(l.Queue, l.Key), when(cond))
	if err != nil {
		return false, fmt.Errorf("delete lane %s/%s: %w", l.Queue, l.Key, err)
	}
	if !ok {
		if from != 0 {
			if old, err = s.orRead(ctx, laneKey(l.Queue, l.Key), old); err != nil {
				return false, fmt.Errorf("delete lane %s/%s: %w", l.Queue, l.Key, err)
			}
			if old != nil && atVersion(old, from) {
				return false, nil // refused for the count
			}
		}
		return false, fmt.Errorf("delete lane %s/%s at version %d: %w", l.Queue, l.Key, from, engine.ErrConflict)
	}
	return true, nil
}
