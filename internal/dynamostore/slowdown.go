package dynamostore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// A target's slow-down (slot.SlowDown) lives on the queue's state item:
// slow_until (ms), when the slow-down ends; slow_ticket, the ticket of
// the job that got the answer, and slow_hold (ms), until when the others
// wait for it to start, both removed by that ticket's gate; slow_downs,
// the count; slow_seen_0 to slow_seen_7, the answer counted last for the
// tickets of each remainder modulo eight (slot.State.SlowSeen), so that
// an answer's write sent again after it landed counts it once. A queue
// never slowed down has none of them, and its gates cost nothing more:
// the conditions below hold on absent attributes.
const (
	attrSlowUntil  = "slow_until"
	attrSlowTicket = "slow_ticket"
	attrSlowHold   = "slow_hold"
	// attrSlowDowns ("slow_downs") counts them, as on a job item.
)

// attrSlowSeen is the attribute that remembers the answer counted last
// for the tickets of slot i (slot.SlowSeenSlot).
func attrSlowSeen(i int) string { return "slow_seen_" + strconv.Itoa(i) }

// decodeSlow reads the slow-down's attributes into s.
func decodeSlow(it *item, s *slot.State) {
	s.SlowUntil, s.SlowTicket, s.SlowHold = it.time(attrSlowUntil), it.int(attrSlowTicket), it.time(attrSlowHold)
	s.SlowDowns = it.int(attrSlowDowns)
	for i := range s.SlowSeen {
		s.SlowSeen[i] = it.str(attrSlowSeen(i))
	}
}

// SlowDown records a target's slow-down on the queue's state item with
// one UpdateItem: slow_until, slow_ticket and slow_hold are set on
// condition that the stored slow-down ends no later (it only extends),
// and slow_downs counts the answer. When a later one is stored the
// answer is only counted (a second UpdateItem, on that rare race). Each
// counts it on condition that its ticket's slow_seen is not r.Answer,
// and sets it: an answer counted already (a write of it sent again after
// it landed, as the SDK retries one whose answer was lost) is not
// counted again, and the state is returned as it is. ErrQueueNotFound,
// also for another generation than r.Gen: a stale generation writes
// nothing.
func (s *Store) SlowDown(ctx context.Context, r engine.SlowDownRequest) (slot.State, error) {
	what := "slow down " + r.Queue
	for _, extend := range []bool{true, false} {
		m, ok, err := s.updateIf(ctx, stateKey(r.Queue), slowDownExprs(r, extend))
		if err != nil {
			return slot.State{}, fmt.Errorf("%s: %w", what, err)
		}
		if !ok {
			if m == nil || otherGen(m, r.Gen) {
				return slot.State{}, notFound("slow down", r.Queue)
			}
			if st, _, err := decodeState(m); err == nil && slot.SlowCounted(st, r.Ticket, r.Answer) {
				return st, nil // counted already
			}
			continue // a later slow-down is stored: count this one
		}
		st, _, err := decodeState(m)
		if err != nil {
			return slot.State{}, fmt.Errorf("%s: %w", what, err)
		}
		return st, nil
	}
	return slot.State{}, fmt.Errorf("%s: the queue state changed under the update", what)
}

// slowDownExprs is SlowDown's UpdateItem: with extend, the one that sets
// the slow-down; without, the one that only counts it.
func slowDownExprs(r engine.SlowDownRequest, extend bool) exprs {
	conds := []expression.ConditionBuilder{itemExists(), genIs(r.Gen)}
	upd := expression.Add(expression.Name(attrSlowDowns), expression.Value(num(1)))
	if r.Gate {
		// A queue that books its starts turns gated (slot.GateAll,
		// nothing settled): the starts the slow-down holds cut in.
		upd = upd.Set(expression.Name(attrGated), expression.Value(boolean(true)))
	}
	if r.Answer != "" {
		seen, answer := expression.Name(attrSlowSeen(slot.SlowSeenSlot(r.Ticket))), expression.Value(str(r.Answer))
		conds = append(conds, missingOr(seen, seen.NotEqual(answer)))
		upd = upd.Set(seen, answer)
	}
	if extend {
		su, until := expression.Name(attrSlowUntil), expression.Value(timeNum(r.Until))
		conds = append(conds, missingOr(su, su.LessThanEqual(until)))
		hold := r.Hold
		if hold.Before(r.Until) {
			hold = r.Until
		}
		upd = upd.Set(su, until).
			Set(expression.Name(attrSlowTicket), expression.Value(num(r.Ticket))).
			Set(expression.Name(attrSlowHold), expression.Value(timeNum(hold)))
	}
	return updateWhen(upd, all(conds...))
}

// slowHold is the slow-down's part of a gate's write: its condition, no
// start before slow_until, and while slow_ticket waits, no other ticket
// before slow_hold; and its update added to upd. The answered ticket's
// own gate (as seen says it is) removes slow_ticket and slow_hold, on
// condition that they are still its own; one that did not see it is
// refused and tried again on the item's state, which says so.
func slowHold(r engine.GateRequest, seen slot.State, upd expression.UpdateBuilder) (expression.ConditionBuilder, expression.UpdateBuilder) {
	at := expression.Value(timeNum(r.Start()))
	su, st, sh := expression.Name(attrSlowUntil), expression.Name(attrSlowTicket), expression.Name(attrSlowHold)
	until := missingOr(su, su.LessThanEqual(at))
	if seen.SlowTicket != 0 && seen.SlowTicket == r.Ticket {
		return until.And(st.Equal(expression.Value(num(r.Ticket)))), upd.Remove(st).Remove(sh)
	}
	return until.And(missingOr(st, sh.LessThanEqual(at))), upd
}

// slowGate is slowHold for the gate's text forms: cond is the gate's,
// extended; remove is the REMOVE clause's paths.
func slowGate(e *expr, r engine.GateRequest, seen slot.State, cond *string) (remove []string) {
	c, u := slowHold(r, seen, expression.UpdateBuilder{})
	text, clauses := e.inline(c, u)
	*cond += " AND " + text
	if rm := clauses["REMOVE"]; rm != "" {
		remove = append(remove, rm)
	}
	return remove
}
