package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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
	e := newExpr()
	cond := "attribute_exists(" + e.n(attrPK) + ")" + genCond(e, r.Gen)
	var set []string
	if r.Answer != "" {
		seen, answer := e.n(attrSlowSeen(slot.SlowSeenSlot(r.Ticket))), e.v(":answer", str(r.Answer))
		cond += " AND (attribute_not_exists(" + seen + ") OR " + seen + " <> " + answer + ")"
		set = append(set, seen+" = "+answer)
	}
	if extend {
		su := e.n(attrSlowUntil)
		until := e.v(":until", timeNum(r.Until))
		cond += " AND (attribute_not_exists(" + su + ") OR " + su + " <= " + until + ")"
		hold := r.Hold
		if hold.Before(r.Until) {
			hold = r.Until
		}
		set = append(set, su+" = "+until, e.n(attrSlowTicket)+" = "+e.v(":st", num(r.Ticket)), e.n(attrSlowHold)+" = "+e.v(":hold", timeNum(hold)))
	}
	upd := "ADD " + e.n(attrSlowDowns) + " " + e.v(":one", num(1))
	if len(set) > 0 {
		upd = "SET " + strings.Join(set, ", ") + " " + upd
	}
	return e.build(upd, cond)
}

// slowGate adds the slow-down's part to a gate's condition (cond) and
// update (remove): no start before slow_until; and while slow_ticket
// waits, no other ticket before slow_hold. The answered ticket's own gate
// (as seen says it is) removes slow_ticket and slow_hold, on condition
// that they are still its own; one that did not see it is refused and
// tried again on the item's state, which says so.
func slowGate(e *expr, r engine.GateRequest, seen slot.State, cond *string) (remove []string) {
	at := e.v(":slow_at", timeNum(r.Start()))
	su, st, sh := e.n(attrSlowUntil), e.n(attrSlowTicket), e.n(attrSlowHold)
	*cond += " AND (attribute_not_exists(" + su + ") OR " + su + " <= " + at + ")"
	if seen.SlowTicket != 0 && seen.SlowTicket == r.Ticket {
		*cond += " AND " + st + " = " + e.v(":slow_t", num(r.Ticket))
		return []string{st, sh}
	}
	*cond += " AND (attribute_not_exists(" + st + ") OR " + sh + " <= " + at + ")"
	return nil
}
