package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// A queue's limits on its state item. The plain interval form keeps only
// interval (and last_start, clock), as every queue did before the rate and
// window forms. Any other limits add:
//
//   - limits: their signature (slot.Limits.Signature), which every take
//     and gate requires to be the caller's (ErrLimitChanged otherwise);
//   - marks: what the gate remembers beyond the first limit's last_start
//     and clock (slot.State.Marks: the other limits' marks and a window's
//     recent runs), as JSON of integers, so that the text read back is
//     the text written and a condition can pin it.
//
// One interval or one rate (with its burst) takes and gates by the
// conditional forms of take.go: one write whatever the contention. A
// window or several limits take and gate by compare-and-set: the write
// pins last_start, clock and marks to the values it computed from, and a
// write that meets another first is decided again on the item DynamoDB
// sends back (no extra read) and sent again.
const (
	attrLimits = "limits"
	attrMarks  = "marks"
)

// limitsKey is what a state item says of its queue's limits.
type limitsKey struct {
	interval time.Duration
	sig      string // "" for the plain interval form
}

func keyOf(ls slot.Limits) limitsKey {
	k := limitsKey{interval: tick(ls)}
	if !ls.Plain() {
		k.sig = ls.Signature()
	}
	return k
}

// tick is the interval attribute of a queue under ls: the shortest
// emission interval (slot.Config.Tick).
func tick(ls slot.Limits) time.Duration {
	return slot.Config{Limits: ls}.Tick()
}

// limitCond is the condition that the item's limits are ls.
func limitCond(e *expr, ls slot.Limits) string {
	k := keyOf(ls)
	if k.sig == "" {
		return e.n(attrInterval) + " = " + e.v(":iv", durNum(k.interval)) + " AND attribute_not_exists(" + e.n(attrLimits) + ")"
	}
	return e.n(attrLimits) + " = " + e.v(":lim", str(k.sig))
}

// gcra reports the emission interval and burst of ls when it is one
// interval or one rate: the limits the conditional forms take and gate.
func gcra(ls slot.Limits) (t time.Duration, burst int, ok bool) {
	if len(ls) != 1 || !ls[0].Window.IsZero() {
		return 0, 0, false
	}
	return tick(ls), ls[0].Burst, true
}

// markJSON is a slot.Mark with times as Unix nanoseconds.
type markJSON struct {
	Last   int64      `json:"l,omitempty"`
	Clock  int64      `json:"c,omitempty"`
	Starts [][2]int64 `json:"s,omitempty"`
	Booked [][2]int64 `json:"b,omitempty"`
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// encodeMarks writes marks as the marks attribute's text ("" for none).
func encodeMarks(marks []slot.Mark) string {
	if len(marks) == 0 {
		return ""
	}
	runs := func(rs []slot.Tally) [][2]int64 {
		out := make([][2]int64, len(rs))
		for i, r := range rs {
			out[i] = [2]int64{nanos(r.At), int64(r.N)}
		}
		return out
	}
	w := make([]markJSON, len(marks))
	for i, m := range marks {
		w[i] = markJSON{Last: nanos(m.Last), Clock: nanos(m.Clock), Starts: runs(m.Starts), Booked: runs(m.Booked)}
	}
	b, _ := json.Marshal(w) // integers and slices of them: cannot fail
	return string(b)
}

// decodeMarks reads the marks attribute's text.
func decodeMarks(s string) ([]slot.Mark, error) {
	if s == "" {
		return nil, nil
	}
	var w []markJSON
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return nil, fmt.Errorf("marks: %w", err)
	}
	runs := func(rs [][2]int64) []slot.Tally {
		if len(rs) == 0 {
			return nil
		}
		out := make([]slot.Tally, len(rs))
		for i, r := range rs {
			out[i] = slot.Tally{At: fromNanos(r[0]), N: int(r[1])}
		}
		return out
	}
	marks := make([]slot.Mark, len(w))
	for i, m := range w {
		marks[i] = slot.Mark{Last: fromNanos(m.Last), Clock: fromNanos(m.Clock), Starts: runs(m.Starts), Booked: runs(m.Booked)}
	}
	return marks, nil
}

// pin is the condition that the item's limit state is seen's, and set the
// update that moves it to next: last_start, clock, marks, the line's run
// and current, and the gated state, each set or removed.
func pin(e *expr, seen, next slot.State) (cond, set string, remove []string) {
	var conds, sets []string
	one := func(attr, ph string, was, now types.AttributeValue) {
		n := e.n(attr)
		if was == nil {
			conds = append(conds, "attribute_not_exists("+n+")")
		} else {
			conds = append(conds, n+" = "+e.v(":was_"+ph, was))
		}
		if now == nil {
			if was != nil {
				remove = append(remove, n)
			}
		} else {
			sets = append(sets, n+" = "+e.v(":new_"+ph, now))
		}
	}
	tm := func(t time.Time) types.AttributeValue {
		if t.IsZero() {
			return nil
		}
		return timeNum(t)
	}
	mk := func(ms []slot.Mark) types.AttributeValue {
		if s := encodeMarks(ms); s != "" {
			return str(s)
		}
		return nil
	}
	flag := func(b bool) types.AttributeValue {
		if !b {
			return nil
		}
		return boolean(true)
	}
	count := func(n int64) types.AttributeValue {
		if n == 0 {
			return nil
		}
		return num(n)
	}
	one(attrLastStart, "last", tm(seen.LastStart), tm(next.LastStart))
	one(attrClock, "clock", tm(seen.Clock), tm(next.Clock))
	one(attrMarks, "marks", mk(seen.Marks), mk(next.Marks))
	one(attrRunFrom, "run_from", tm(seen.RunFrom), tm(next.RunFrom))
	one(attrGated, "gated", flag(seen.Gated), flag(next.Gated))
	one(attrGatedUntil, "gated_until", tm(seen.GatedUntil), tm(next.GatedUntil))
	one(attrGatedThrough, "gated_through", count(seen.GatedThrough), count(next.GatedThrough))
	one(attrBatchTicket, "batch_ticket", count(seen.BatchTicket), count(next.BatchTicket))
	one(attrBatchAt, "batch_at", tm(seen.BatchAt), tm(next.BatchAt))
	one(attrBatchFill, "batch_fill", count(int64(seen.BatchFill)), count(int64(next.BatchFill)))
	if next.Current != seen.Current {
		// Gating settled it (slot.GateAll); a gate's own move of it is
		// lineMoves'.
		one(attrCurrent, "current", num(seen.Current), num(next.Current))
	}
	return strings.Join(conds, " AND "), strings.Join(sets, ", "), remove
}

// casTakeExprs is Take by compare-and-set from state seen: the tickets by
// ticketUpdate (an atomic counter), the limit state by pin.
func casTakeExprs(r engine.TakeRequest, seen slot.State, tok string) exprs {
	next, _ := r.Apply(seen)
	e := newExpr()
	wt := e.n(attrWriteToken)
	cond, set, remove := pin(e, seen, next)
	tickets := ticketUpdate
	if r.Batched() {
		// A batch's jobs share its ticket: the counter moves by the
		// batches the take opened, known from seen's, which it pins.
		cond += " AND " + pinTicket(e, seen.Ticket)
		tickets = func(e *expr, r engine.TakeRequest) string { return batchTicketUpdate(e, r, next) }
	}
	upd := tickets(e, r) + ", " + wt + " = " + e.v(":tok", str(tok))
	if set != "" {
		upd += ", " + set
	}
	if len(remove) > 0 {
		upd += " REMOVE " + strings.Join(remove, ", ")
	}
	cond = limitCond(e, r.LimitList()) + " AND (attribute_not_exists(" + wt + ") OR " + wt + " <> :tok) AND " + cond + genCond(e, r.Gen)
	return e.build(upd, cond)
}

// casGateExprs is Gate by compare-and-set from state seen, on which
// r.Decide said Start: the gate's conditions (not paused, not purged, the
// running cap), the state pinned to seen's and moved to r.Started(seen)
// (the limit state, the line's current and front, a gated state), so
// that what Decide judged on seen is what the write finds.
func casGateExprs(r engine.GateRequest, seen slot.State, tok string) exprs {
	next := r.Started(seen)
	e := newExpr()
	wt := e.n(attrWriteToken)
	pinned, set, remove := pin(e, seen, next)
	cond := gateCond(e, r, wt, tok) + " AND " + pinned + genCond(e, r.Gen)
	upd := "SET " + wt + " = :tok"
	if !next.Front.Equal(seen.Front) {
		f := e.n(attrFront)
		if seen.Front.IsZero() {
			cond += " AND attribute_not_exists(" + f + ")"
		} else {
			cond += " AND " + f + " = " + e.v(":was_front", timeNum(seen.Front))
		}
		upd += ", " + f + " = " + e.v(":new_front", timeNum(next.Front))
	}
	if set != "" {
		upd += ", " + set
	}
	return endGate(e, r, seen, cond, upd, remove)
}

// casTries bounds the sends of a compare-and-set take or gate: each
// failed one was decided again on the item DynamoDB sent back, so only
// writes that land between that answer and the next send make it fail
// again.
const casTries = 12

// batchTakeTries bounds the sends of a batched take (TakeRequest.
// Batched): by compare-and-set of the whole state, its ticket counter
// included, every other take and every gate's write refuses it once, so
// a queue with several producers and its workers' gates needs more tries
// than a window's take.
const batchTakeTries = 40

// casTake is Take for limits the conditional forms do not cover.
func (s *Store) casTake(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	if r.Batched() {
		tk, seen, ok, err := s.joinTake(ctx, r)
		if ok || err != nil {
			return tk, err
		}
		r.Seen = seen
		return s.casTakeIn(ctx, r, batchTakeTries)
	}
	return s.casTakeIn(ctx, r, casTries)
}

// casTakeIn is casTake in at most tries sends.
func (s *Store) casTakeIn(ctx context.Context, r engine.TakeRequest, tries int) (engine.Taken, error) {
	seen := r.Seen
	return writeState(ctx, s, stateWrite[engine.Taken]{
		op: "take ticket", what: "take ticket " + r.Queue, queue: r.Queue, gen: r.Gen, limits: r.LimitList(), tries: tries,
		spread: r.Batched(),
		exprs:  func(tok string) exprs { return casTakeExprs(r, seen, tok) },
		after: func(m map[string]types.AttributeValue) (engine.Taken, error) {
			// The item after a take from seen (or, sent again after it
			// landed, the item it met, if nothing wrote since).
			st, _, err := decodeState(m)
			if err != nil {
				return engine.Taken{}, fmt.Errorf("take ticket %s: %w", r.Queue, err)
			}
			return casTaken(r, seen, st)
		},
		refused: func(st slot.State) error {
			seen = st
			return nil
		},
	})
}

// casTaken is the answer of a take that landed from state seen and left
// the item at after: its tickets are after's last r.N, its slots those
// slot.Take gives from seen.
func casTaken(r engine.TakeRequest, seen, after slot.State) (engine.Taken, error) {
	if r.Batched() {
		_, tk := r.Apply(seen) // from the ticket it pinned
		tk.State = after
		return tk, nil
	}
	seen.Ticket = after.Ticket - int64(r.N)
	_, first, slots := slot.Take(r.Gating(seen), r.N, r.Line, r.LimitList(), r.Skew, r.Now)
	return engine.Taken{First: first, Slots: slots, State: after}, nil
}

// casGate is Gate for limits the conditional forms do not cover.
func (s *Store) casGate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	seen := r.Seen
	return writeState(ctx, s, stateWrite[slot.State]{
		op: "gate", what: fmt.Sprintf("gate %s ticket %d", r.Queue, r.Ticket), queue: r.Queue, gen: r.Gen, limits: r.LimitList(), tries: casTries,
		exprs:  func(tok string) exprs { return casGateExprs(r, seen, tok) },
		after:  gateAfter(r),
		landed: func(st slot.State) bool { return landed(st, r) },
		stale: func() bool {
			v, _ := r.Decide(seen)
			return v != slot.Start
		},
		refused: func(st slot.State) error {
			if err := gateRefused(r, st); err != nil {
				return err
			}
			seen = st
			return nil
		},
	})
}

// refusedState reads the queue state a refused take or gate is decided
// on: the item DynamoDB sent back with the refusal (old), or, when it sent
// none, the item itself, strongly. A queue that is gone, or of another
// generation than gen (0: any), is ErrQueueNotFound for op (as notFound
// names it); other errors are prefixed with what.
func (s *Store) refusedState(ctx context.Context, op, what, queue string, gen int64, old map[string]types.AttributeValue) (map[string]types.AttributeValue, slot.State, limitsKey, error) {
	old, err := s.orRead(ctx, stateKey(queue), old)
	if err != nil {
		return nil, slot.State{}, limitsKey{}, fmt.Errorf("%s: %w", what, err)
	}
	if old == nil || otherGen(old, gen) {
		return nil, slot.State{}, limitsKey{}, notFound(op, queue)
	}
	st, k, err := decodeState(old)
	if err != nil {
		return nil, slot.State{}, limitsKey{}, fmt.Errorf("%s: %w", what, err)
	}
	return old, st, k, nil
}
