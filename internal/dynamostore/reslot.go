package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// Reconfigure replaces the config item and, in the same transaction,
// moves the state item's limit state to r.Reslot of the state it holds:
// the state item's ticket, current, limits and limit state (last_start,
// clock, marks) are pinned to the values read, so a take or a gate that
// lands between the read and the write makes the transaction fail, and
// it is decided again on a new strong read. Two writes of a transaction
// each (the step is rare: configure). ErrQueueNotFound.
func (s *Store) Reconfigure(ctx context.Context, r engine.ReconfigureRequest) (slot.State, error) {
	b, err := r.Config.MarshalJSON()
	if err != nil {
		return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
	}
	for range reconfigureTries {
		m, err := s.getItem(ctx, stateKey(r.Queue))
		if err != nil {
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
		}
		if len(m) == 0 || otherGen(m, r.Gen) {
			return slot.State{}, notFound("reconfigure", r.Queue)
		}
		seen, k, err := decodeState(m)
		if err != nil {
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
		}
		next, rec, err := r.Reslot(seen)
		if err != nil {
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
		}
		err = s.transact(ctx, []types.TransactWriteItem{
			{Update: configUpdate(r.Queue, s.table, string(b), rec)},
			{Update: reslotUpdate(r, s.table, seen, next, k)},
		})
		reasons, cancelled := cancelReasons(err)
		switch {
		case err == nil:
			seen.LastStart, seen.Clock, seen.Marks = next.LastStart, next.Clock, next.Marks
			return seen, nil
		case cancelled && len(reasons) == 2 && code(reasons[0]) == reasonConditional:
			return slot.State{}, notFound("reconfigure", r.Queue)
		case cancelled && len(reasons) == 2 && code(reasons[1]) == reasonConditional:
			continue // the state moved since the read
		case cancelled:
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, txError(err, reasons))
		}
		return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
	}
	return slot.State{}, fmt.Errorf("reconfigure %s: the queue state kept changing under the update", r.Queue)
}

// reconfigureTries bounds the transactions of one Reconfigure: on a busy
// queue a gate lands between the read and the write now and then (each
// try is a strong read and a transaction; the caller, configure, is rare).
const reconfigureTries = 50

// configUpdate sets the config item's configuration to cfg (JSON) and
// what the change did to the queued jobs to rec (none: removed), if the
// item exists.
func configUpdate(queue, table, cfg string, rec *engine.Rebooked) *types.Update {
	e := newExpr()
	cond := "attribute_exists(" + e.n(attrPK) + ")"
	upd := "SET " + e.n(attrConfig) + " = " + e.v(":cfg", str(cfg))
	if rec != nil {
		upd += ", " + e.n(attrRebooked) + " = " + e.v(":rebooked", str(encodeRebooked(*rec)))
	} else {
		upd += " REMOVE " + e.n(attrRebooked)
	}
	return &types.Update{TableName: &table, Key: configKey(queue), UpdateExpression: &upd, ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}
}

// reslotUpdate moves the state item from seen (under limits k) to next
// under r's limits.
func reslotUpdate(r engine.ReconfigureRequest, table string, seen, next slot.State, k limitsKey) *types.Update {
	e := newExpr()
	pinned, set, remove := pin(e, seen, next)
	conds := []string{
		e.n(attrTicket) + " = " + e.v(":ticket", num(seen.Ticket)),
		e.n(attrCurrent) + " = " + e.v(":current", num(seen.Current)),
		e.n(attrInterval) + " = " + e.v(":was_iv", durNum(k.interval)),
		pinned,
	}
	if k.sig == "" {
		conds = append(conds, "attribute_not_exists("+e.n(attrLimits)+")")
	} else {
		conds = append(conds, e.n(attrLimits)+" = "+e.v(":was_lim", str(k.sig)))
	}
	nk := keyOf(r.Config.LimitList())
	sets := []string{e.n(attrInterval) + " = " + e.v(":iv", durNum(nk.interval)), e.n(attrWriteToken) + " = " + e.v(":tok", str(newToken()))}
	if set != "" {
		sets = append(sets, set)
	}
	if nk.sig != "" {
		sets = append(sets, e.n(attrLimits)+" = "+e.v(":lim", str(nk.sig)))
	} else if k.sig != "" {
		remove = append(remove, e.n(attrLimits))
	}
	upd := "SET " + strings.Join(sets, ", ")
	if len(remove) > 0 {
		upd += " REMOVE " + strings.Join(remove, ", ")
	}
	cond := strings.Join(conds, " AND ") + genCond(e, r.Gen)
	return &types.Update{TableName: &table, Key: stateKey(r.Queue), UpdateExpression: &upd, ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}
}

// attrRebooked is, on a queue's config item, what its last configure did
// to the queued jobs (engine.Rebooked), as rebookedJSON.
const attrRebooked = "rebooked"

// rebookedJSON is attrRebooked's text: times in nanoseconds since 1970,
// the base states' marks as the state item keeps them. Line is the parked
// line's places (none in a record written before they were kept).
type rebookedJSON struct {
	After int64 `json:"after"`
	Upto  int64 `json:"upto"`
	At    int64 `json:"at"`
	baseJSON
	Line *lineJSON `json:"line,omitempty"`
}

type lineJSON struct {
	First int64    `json:"first"`
	Last  int64    `json:"last"`
	From  int64    `json:"from"`
	Base  baseJSON `json:"base"`
}

// baseJSON is a booking's base state: what the line's booking reads.
type baseJSON struct {
	Ticket    int64  `json:"ticket,omitempty"`
	Current   int64  `json:"current,omitempty"`
	LastStart int64  `json:"last_start,omitempty"`
	Clock     int64  `json:"clock,omitempty"`
	Marks     string `json:"marks,omitempty"`
}

func baseOf(s slot.State) baseJSON {
	return baseJSON{Ticket: s.Ticket, Current: s.Current, LastStart: nanos(s.LastStart), Clock: nanos(s.Clock), Marks: encodeMarks(s.Marks)}
}

func (b baseJSON) state() (slot.State, error) {
	marks, err := decodeMarks(b.Marks)
	if err != nil {
		return slot.State{}, err
	}
	var s slot.State
	s.Ticket, s.Current = b.Ticket, b.Current
	s.LastStart, s.Clock, s.Marks = fromNanos(b.LastStart), fromNanos(b.Clock), marks
	return s, nil
}

func encodeRebooked(r engine.Rebooked) string {
	w := rebookedJSON{After: r.After, Upto: r.Upto, At: nanos(r.At), baseJSON: baseOf(r.Base)}
	if r.First != 0 {
		w.Line = &lineJSON{First: r.First, Last: r.Last, From: nanos(r.From), Base: baseOf(r.LineBase)}
	}
	b, _ := json.Marshal(w) // numbers and strings: cannot fail
	return string(b)
}

// decodeRebooked reads attribute attr of a config item as a Rebooked
// (nil: none).
func decodeRebooked(m map[string]types.AttributeValue, attr string) (*engine.Rebooked, error) {
	it := item{m: m}
	text := it.str(attr)
	if it.err != nil || text == "" {
		return nil, it.err
	}
	var w rebookedJSON
	if err := json.Unmarshal([]byte(text), &w); err != nil {
		return nil, fmt.Errorf("rebooked: %w", err)
	}
	base, err := w.baseJSON.state()
	if err != nil {
		return nil, fmt.Errorf("rebooked: %w", err)
	}
	r := &engine.Rebooked{After: w.After, Upto: w.Upto, At: fromNanos(w.At), Base: base}
	if w.Line != nil {
		if r.LineBase, err = w.Line.Base.state(); err != nil {
			return nil, fmt.Errorf("rebooked: %w", err)
		}
		r.First, r.Last, r.From = w.Line.First, w.Line.Last, fromNanos(w.Line.From)
	}
	return r, nil
}
