package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/pkg/engine"
	"github.com/slotq/slotq/pkg/slot"
)

// takeVariant is one of the conditional forms of Take's UpdateItem.
type takeVariant int

const (
	// takeNoLine: no place in the line, only tickets.
	takeNoLine takeVariant = iota
	// takeBusy: the line is busy (clock + interval ≥ now), so the first
	// slot is clock + interval and the clock moves by line·interval.
	takeBusy
	// takeIdle: the line ran dry (or never started): the first slot is now
	// and the clock becomes now + (line−1)·interval.
	takeIdle
)

// Take applies slot.Take with one UpdateItem: ADD ticket :n is an atomic
// counter, and the slot clock moves by one of two conditional forms,
// because max(clock + interval, now) cannot be written as one update
// expression. Each form's condition says when it equals slot.Take: busy
// when clock ≥ now − interval, idle otherwise. If the form tried first
// fails its condition, the item DynamoDB sends back (ALL_OLD) tells which
// form holds; since the clock only moves forward, busy never turns idle
// again for the same now, so there are at most three tries (idle, busy —
// or busy, idle, busy under a race), usually one.
//
// Both forms also require the stored interval to be r.Interval
// (ErrIntervalChanged otherwise). ErrQueueNotFound.
func (s *Store) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	if r.N < 1 || r.Line < 0 || r.Line > r.N {
		return engine.Taken{}, fmt.Errorf("take ticket %s: want 0 ≤ line ≤ n and n ≥ 1, got n=%d line=%d", r.Queue, r.N, r.Line)
	}
	nowMinusIv := r.Now.Add(-r.Interval)
	v := takeNoLine
	if r.Line > 0 {
		v = takeIdle
		if seen := s.seenClock(r.Queue); !seen.IsZero() && !seen.Before(nowMinusIv) {
			v = takeBusy // the clock is at least what we saw: still busy
		}
	}
	tok := newToken()
	for range 4 {
		out, err := s.updateItem(ctx, OpTake, takeInput(r, v, nowMinusIv, tok))
		if old, ok := conditionFailed(err); ok {
			if old, err = s.orRead(ctx, OpTake, stateKey(r.Queue), old); err != nil {
				return engine.Taken{}, fmt.Errorf("take ticket %s: %w", r.Queue, err)
			}
			if old == nil {
				return engine.Taken{}, notFound("take ticket", r.Queue)
			}
			if hasToken(old, tok) {
				// The SDK retried this very take after it had landed.
				return takenFrom(old, r)
			}
			st, iv, err := decodeState(old)
			if err != nil {
				return engine.Taken{}, fmt.Errorf("take ticket %s: %w", r.Queue, err)
			}
			if iv != r.Interval {
				return engine.Taken{}, fmt.Errorf("take ticket %s: %w", r.Queue, engine.ErrIntervalChanged)
			}
			if !st.Clock.IsZero() && !st.Clock.Before(nowMinusIv) {
				v = takeBusy
			} else {
				v = takeIdle
			}
			continue
		}
		if err != nil {
			return engine.Taken{}, fmt.Errorf("take ticket %s: %w", r.Queue, err)
		}
		t, err := takenFrom(out.Attributes, r)
		if err == nil {
			s.sawClock(r.Queue, t.State.Clock)
		}
		return t, err
	}
	return engine.Taken{}, fmt.Errorf("take ticket %s: the slot clock kept changing under the update", r.Queue)
}

// takenFrom reads Take's answer from the state item right after it: the
// ticket is exact, since only takes move it, and take_clock keeps the
// clock this take set, should a start have raised the clock since.
func takenFrom(m map[string]types.AttributeValue, r engine.TakeRequest) (engine.Taken, error) {
	st, _, err := decodeState(m)
	it := item{m: m}
	takeClock := it.time(attrTakeClock)
	if err == nil {
		err = it.err
	}
	if err != nil {
		return engine.Taken{}, fmt.Errorf("take ticket %s: %w", r.Queue, err)
	}
	t := engine.Taken{First: st.Ticket - int64(r.N) + 1, State: st}
	if r.Line > 0 {
		t.FirstSlot = takeClock.Add(-time.Duration(r.Line-1) * r.Interval)
	}
	return t, nil
}

func takeInput(r engine.TakeRequest, v takeVariant, nowMinusIv time.Time, tok string) *dynamodb.UpdateItemInput {
	e := newExpr()
	wt := e.n(attrWriteToken)
	upd := "ADD " + e.n(attrTicket) + " " + e.v(":n", num(int64(r.N))) +
		" SET " + wt + " = " + e.v(":tok", str(tok))
	cond := e.n(attrInterval) + " = " + e.v(":iv", durNum(r.Interval)) +
		" AND (attribute_not_exists(" + wt + ") OR " + wt + " <> :tok)"
	switch v {
	case takeBusy:
		clock, tc := e.n(attrClock), e.n(attrTakeClock)
		span := e.v(":span", durNum(time.Duration(r.Line)*r.Interval))
		upd += ", " + clock + " = " + clock + " + " + span + ", " + tc + " = " + clock + " + " + span
		cond += " AND " + clock + " >= " + e.v(":nmi", timeNum(nowMinusIv))
	case takeIdle:
		clock, tc := e.n(attrClock), e.n(attrTakeClock)
		last := e.v(":last", timeNum(r.Now.Add(time.Duration(r.Line-1)*r.Interval)))
		upd += ", " + clock + " = " + last + ", " + tc + " = " + last
		cond += " AND (attribute_not_exists(" + clock + ") OR " + clock + " < " + e.v(":nmi", timeNum(nowMinusIv)) + ")"
	}
	return &dynamodb.UpdateItemInput{
		Key:                                 stateKey(r.Queue),
		UpdateExpression:                    &upd,
		ConditionExpression:                 &cond,
		ExpressionAttributeNames:            e.names,
		ExpressionAttributeValues:           e.values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// Start is the gate and the claim in one TransactWriteItems:
//
//  1. the job item, if it is queued at r.From, becomes running with
//     started_at = now;
//  2. the queue's state item, if it is not paused, current < ticket, the
//     last start was at least interval − skew ago and the interval is
//     r.Interval, gets current = ticket and last_start = now.
//
// Those are slot.Gate and slot.Started except the clock raise
// (clock = max(clock, now)), which one update expression cannot write. It
// follows as its own conditional UpdateItem, SET clock = :now IF clock <
// :now. That is safe because the clock is only an estimate for Take; the
// spacing guarantee rests on last_start, which the transaction moved. Until
// the raise lands (or if the process dies first), a Take may hand out a
// slot up to one interval too early; that job then waits at the gate
// (slot.Early) — it is never started early. The raise never moves the clock
// back, so a Take that moved it further in between is kept.
//
// ErrJobNotFound or ErrConflict when the job failed its condition (checked
// first), then ErrQueueNotFound, ErrIntervalChanged, or a *engine.GateError
// built from the queue state DynamoDB sent back with the cancellation.
func (s *Store) Start(ctx context.Context, r engine.StartRequest) (slot.State, error) {
	tok := newToken()
	je := newExpr()
	jcond := je.n(attrStatus) + " = " + je.v(":queued", str("queued")) +
		" AND " + je.n(attrStatus) + " = " + je.v(":from_status", str(string(r.From.Status))) +
		" AND " + je.n(attrTicket) + " = " + je.v(":from_ticket", num(r.From.Ticket)) +
		" AND " + je.n(attrAttempt) + " = " + je.v(":from_attempt", num(int64(r.From.Attempt)))
	jupd := "SET " + je.n(attrStatus) + " = " + je.v(":running", str("running")) +
		", " + je.n(attrStartedAt) + " = " + je.v(":now", timeNum(r.Now)) +
		", " + je.n(attrQueueStatus) + " = " + je.v(":qs", str(queueStatus(r.Key.Queue, "running"))) +
		", " + je.n(attrWriteToken) + " = " + je.v(":tok", str(tok))

	qe := newExpr()
	lastStart := qe.n(attrLastStart)
	qcond := qe.n(attrInterval) + " = " + qe.v(":iv", durNum(r.Interval)) +
		" AND " + qe.n(attrPaused) + " = " + qe.v(":f", boolean(false)) +
		" AND " + qe.n(attrCurrent) + " < " + qe.v(":t", num(r.From.Ticket)) +
		" AND (attribute_not_exists(" + lastStart + ") OR " + lastStart + " <= " +
		qe.v(":open", timeNum(r.Now.Add(-(r.Interval-r.Skew)))) + ")"
	qupd := "SET " + qe.n(attrCurrent) + " = :t, " + lastStart + " = " + qe.v(":now", timeNum(r.Now))

	items := []types.TransactWriteItem{
		{Update: &types.Update{TableName: &s.table, Key: jobKey(r.Key),
			UpdateExpression: &jupd, ConditionExpression: &jcond,
			ExpressionAttributeNames: je.names, ExpressionAttributeValues: je.values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		{Update: &types.Update{TableName: &s.table, Key: stateKey(r.Key.Queue),
			UpdateExpression: &qupd, ConditionExpression: &qcond,
			ExpressionAttributeNames: qe.names, ExpressionAttributeValues: qe.values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
	}
	for attempt := 0; ; attempt++ {
		err := s.transact(ctx, OpStart, items)
		if err == nil {
			break
		}
		reasons, ok := cancelReasons(err)
		if !ok {
			return slot.State{}, fmt.Errorf("start %s: %w", r.Key, err)
		}
		if len(reasons) != 2 {
			return slot.State{}, fmt.Errorf("start %s: %w", r.Key, txError(err, reasons))
		}
		if code(reasons[0]) == reasonConditional {
			old, err := s.orRead(ctx, OpStart, jobKey(r.Key), reasons[0].Item)
			if err != nil {
				return slot.State{}, fmt.Errorf("start %s: %w", r.Key, err)
			}
			if old == nil {
				return slot.State{}, fmt.Errorf("start %s: %w", r.Key, engine.ErrJobNotFound)
			}
			if hasToken(old, tok) {
				// The SDK retried this very start after it had landed
				// (DynamoDB itself would have answered the retry from the
				// transaction's ClientRequestToken).
				break
			}
			return slot.State{}, fmt.Errorf("start %s: %w", r.Key, engine.ErrConflict)
		}
		if code(reasons[1]) == reasonConditional {
			return slot.State{}, s.gateError(ctx, r, reasons[1].Item)
		}
		if (transient(code(reasons[0])) || transient(code(reasons[1]))) && attempt < maxTxRetries {
			if err := backoff(ctx, attempt); err != nil {
				return slot.State{}, fmt.Errorf("start %s: %w", r.Key, err)
			}
			continue
		}
		return slot.State{}, fmt.Errorf("start %s: %w", r.Key, txError(err, reasons))
	}
	return s.raiseClock(ctx, r), nil
}

// gateError explains why the queue item failed Start's condition.
func (s *Store) gateError(ctx context.Context, r engine.StartRequest, old map[string]types.AttributeValue) error {
	old, err := s.orRead(ctx, OpStart, stateKey(r.Key.Queue), old)
	if err != nil {
		return fmt.Errorf("start %s: %w", r.Key, err)
	}
	if old == nil {
		return notFound("start", r.Key.Queue)
	}
	st, iv, err := decodeState(old)
	if err != nil {
		return fmt.Errorf("start %s: %w", r.Key, err)
	}
	if iv != r.Interval {
		return fmt.Errorf("start %s: %w", r.Key, engine.ErrIntervalChanged)
	}
	v, openAt := slot.Gate(st, r.From.Ticket, r.Interval, r.Skew, r.Now)
	if v == slot.Start {
		return fmt.Errorf("start %s: %w", r.Key, errGateDisagrees)
	}
	return &engine.GateError{Verdict: v, OpenAt: openAt, State: st}
}

// raiseClock is Start's follow-up, clock = max(clock, now), and returns the
// queue state after it (which may include later takes). The start has
// happened by then, so a failure here is not an error of Start: it returns
// the state the start made as far as it is known (ticket and clock as lower
// bounds).
func (s *Store) raiseClock(ctx context.Context, r engine.StartRequest) slot.State {
	if seen := s.seenClock(r.Key.Queue); !seen.Before(r.Now) {
		// The clock is at least seen ≥ now: nothing to raise, and the
		// write would only fail its condition (a billed write). Read the
		// state instead, at a fifth of the price.
		if m, err := s.getItem(ctx, OpStart, stateKey(r.Key.Queue)); err == nil && len(m) > 0 {
			if st, _, err := decodeState(m); err == nil {
				return st
			}
		}
		return slot.State{Ticket: r.From.Ticket, Current: r.From.Ticket, Clock: seen, LastStart: r.Now}
	}
	e := newExpr()
	clock := e.n(attrClock)
	now := e.v(":now", timeNum(r.Now))
	out, err := s.updateItem(ctx, OpStart, &dynamodb.UpdateItemInput{
		Key:                                 stateKey(r.Key.Queue),
		UpdateExpression:                    aws.String("SET " + clock + " = " + now),
		ConditionExpression:                 aws.String("attribute_exists(" + e.n(attrPK) + ") AND (attribute_not_exists(" + clock + ") OR " + clock + " < " + now + ")"),
		ExpressionAttributeNames:            e.names,
		ExpressionAttributeValues:           e.values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	m := map[string]types.AttributeValue(nil)
	if old, ok := conditionFailed(err); ok {
		m = old
	} else if err == nil {
		m = out.Attributes
	}
	if st, _, err := decodeState(m); err == nil && len(m) > 0 {
		s.sawClock(r.Key.Queue, st.Clock)
		return st
	}
	return slot.State{Ticket: r.From.Ticket, Current: r.From.Ticket, Clock: r.Now, LastStart: r.Now}
}

// seenClock returns the latest slot clock this store saw for queue (zero
// if none).
func (s *Store) seenClock(queue string) time.Time {
	if v, ok := s.clocks.Load(queue); ok {
		return v.(time.Time)
	}
	return time.Time{}
}

// sawClock records a clock read from the queue's state item.
func (s *Store) sawClock(queue string, clock time.Time) {
	for {
		old, loaded := s.clocks.LoadOrStore(queue, clock)
		if !loaded || !clock.After(old.(time.Time)) || s.clocks.CompareAndSwap(queue, old, clock) {
			return
		}
	}
}
