package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// A capped queue's running places are the state item's running map
// (slot.State.Running), written by the gate in the same UpdateItem that
// moves last_start, so the cap is checked in the gate's atomic step, and
// freed by EndRun. No other write touches the map.
//
// DynamoDB cannot count the entries of a map whose lease has not ended,
// only all of them (size). So the gate drops the ended entries it knows
// of in the same write, each pinned to the value it read, and allows for
// them in its bound: with k entries dropped, size(running) < max + k
// holds exactly when fewer than max live entries remain beside them. A
// stale read can only make the bound stricter (entries it did not know to
// be over still count), never looser: the condition fails, the item
// DynamoDB sends back is decided on, and the write goes again with the
// entries that item shows.

// maxDropped bounds the ended entries one gate drops. Since each gate
// keeps the map within the cap, it holds at most slot.MaxRunningLimit
// entries, so a gate always drops every ended entry it saw; a cap lowered
// since cannot leave more behind than a start may clear. At that bound the
// gate's condition stays under 3 KB and its update under 2 KB, within
// DynamoDB's 4 KB for each expression.
const maxDropped = slot.MaxRunningLimit

// capForm is how a gate under a running cap takes its place, read from
// the state the gate saw.
type capForm struct {
	// create: the item has no running map yet; the gate sets the whole
	// map to its own entry, on condition that there is none. (DynamoDB
	// cannot SET a path inside a map that does not exist.)
	create bool
	// dropped are the ended entries the gate removes, each on condition
	// that it still holds the value seen, in ticket order; the gate's own
	// ticket is never among them.
	dropped []int64
	seen    map[int64]time.Time
	// mine is set when the gate's own ticket has an entry (it passed the
	// gate before; ended or not): the gate overwrites it, so it frees a
	// place like a dropped one (slot.CappedFor), and it is pinned to its
	// value as they are.
	mine bool
	// bound: the condition is size(running) < bound.
	bound int
}

func capFormOf(s slot.State, r engine.GateRequest) capForm {
	if s.Running == nil {
		return capForm{create: true}
	}
	f := capForm{seen: s.Running, bound: r.MaxRunning}
	for ticket, until := range s.Running {
		switch {
		case ticket == r.Ticket:
			f.mine = true
			f.bound++
		case r.Now.Before(until):
		default:
			f.dropped = append(f.dropped, ticket)
		}
	}
	slices.Sort(f.dropped)
	f.dropped = f.dropped[:min(len(f.dropped), maxDropped)]
	f.bound += len(f.dropped)
	return f
}

// take is the form's part of a gate's write: its condition, and its
// update added to upd.
func (f capForm) take(r engine.GateRequest, upd expression.UpdateBuilder) (expression.ConditionBuilder, expression.UpdateBuilder) {
	run := expression.Name(attrRunning)
	if f.create {
		return run.AttributeNotExists(), upd.Set(run, expression.Value(&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			ticketKey(r.Ticket): timeNum(r.Until),
		}}))
	}
	me := runningEntry(r.Ticket)
	conds := []expression.ConditionBuilder{run.Size().LessThan(expression.Value(num(int64(f.bound))))}
	if f.mine {
		conds = append(conds, me.Equal(expression.Value(timeNum(f.seen[r.Ticket]))))
	}
	for _, ticket := range f.dropped {
		p := runningEntry(ticket)
		conds = append(conds, p.Equal(expression.Value(timeNum(f.seen[ticket]))))
		upd = upd.Remove(p)
	}
	return all(conds...), upd.Set(me, expression.Value(timeNum(r.Until)))
}

// add is take for the gate's text forms: cond and set are the gate's,
// extended; remove is the REMOVE clause's paths.
func (f capForm) add(e *expr, r engine.GateRequest, cond, set *string) (remove []string) {
	c, u := f.take(r, expression.UpdateBuilder{})
	text, clauses := e.inline(c, u)
	*cond += " AND " + text
	*set += ", " + clauses["SET"]
	if rm := clauses["REMOVE"]; rm != "" {
		remove = append(remove, rm)
	}
	return remove
}

// runningEntry is ticket's entry of the running map.
func runningEntry(ticket int64) expression.NameBuilder {
	return expression.Name(attrRunning + "." + ticketKey(ticket))
}

// ticketKey is a ticket as a key of the running map.
func ticketKey(ticket int64) string { return strconv.FormatInt(ticket, 10) }

// landed reports whether state s shows r's own running place: the entry
// of its ticket with its until. Nothing else writes that pair, so an
// earlier send of this very gate landed (its answer was lost, and a write
// of another caller has since replaced the write token that would tell).
func landed(s slot.State, r engine.GateRequest) bool {
	until, ok := s.Running[r.Ticket]
	return r.MaxRunning > 0 && ok && until.Equal(r.Until)
}

// EndRun frees ticket's running place with one UpdateItem on the state
// item: REMOVE running.<ticket>, on condition that the entry ends at until
// or after it (it is this attempt's place, or a later gate's of the same
// ticket whose claim was refused) and that the item is of generation gen.
// DynamoDB refuses to REMOVE a path inside a map that does not exist, and
// a condition that fails writes nothing: an entry that is not there (the
// attempt ended already, or took no place) or is another's leaves the
// item as it is. A send that meets its own earlier removal finds nothing
// to remove, so EndRun needs no write token, and it leaves the item's
// token alone: another caller's lost answer, re-sent, still finds its
// own. ErrQueueNotFound.
func (s *Store) EndRun(ctx context.Context, queue string, gen, ticket int64, until time.Time) error {
	p := runningEntry(ticket)
	_, gone, err := s.updateOrGone(ctx, stateKey(queue), updateWhen(expression.Remove(p),
		all(p.GreaterThanEqual(expression.Value(timeNum(until))), genIs(gen))))
	if gone {
		return notFound("end run", queue)
	}
	if err != nil {
		return fmt.Errorf("end run %s ticket %d: %w", queue, ticket, err)
	}
	return nil
}

// Skip moves current to ticket with one UpdateItem on the state item, on
// condition that current is ticket − 1. A condition that fails writes
// nothing (it is billed as a write, so the engine asks only when its last
// read says current stands there); the old item tells a missing queue
// (ErrQueueNotFound) from a current elsewhere (false). A send that meets
// its own earlier landing finds current at ticket and answers false:
// nothing is moved twice, so Skip needs no write token and leaves the
// item's alone.
func (s *Store) Skip(ctx context.Context, queue string, ticket int64) (bool, error) {
	cur := expression.Name(attrCurrent)
	ok, gone, err := s.updateOrGone(ctx, stateKey(queue), updateWhen(expression.Set(cur, expression.Value(ticket)), cur.Equal(expression.Value(ticket-1))))
	if gone {
		return false, notFound("skip", queue)
	}
	if err != nil {
		return false, fmt.Errorf("skip %s ticket %d: %w", queue, ticket, err)
	}
	return ok, nil
}
