package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// takeForm is one of the conditional forms of Take's UpdateItem.
type takeForm int

const (
	// takeNoLine: no place in the line, only tickets.
	takeNoLine takeForm = iota
	// takeLine: the line is busy and ahead of the last start (clock ≥
	// last_start, clock + interval ≥ now): the first slot is
	// clock + interval and the clock moves by line·interval.
	takeLine
	// takeVirtual: the last start is ahead of the line (a scheduled job or
	// a late start ran after the line's last slot) and recent: the first
	// slot is last_start + interval.
	takeVirtual
	// takeIdle: both lie more than an interval back (or never were): the
	// first slot is now and the clock becomes now + (line−1)·interval.
	takeIdle
)

// formOf is the form slot.Take takes on state s at now.
func formOf(s slot.State, line int, iv time.Duration, now time.Time) takeForm {
	last := s.Clock
	if s.LastStart.After(last) {
		last = s.LastStart
	}
	switch {
	case line == 0:
		return takeNoLine
	case last.IsZero() || last.Add(iv).Before(now):
		return takeIdle
	case !s.Clock.Before(s.LastStart):
		return takeLine
	}
	return takeVirtual
}

// Take applies slot.Take with one UpdateItem: ticket = ticket + :n is an atomic
// counter, and the slot clock moves by one of three conditional forms,
// because max(clock + interval, last_start + interval, now) cannot be
// written as one update expression. Each form's condition says when it
// equals slot.Take (see takeForm). The form r.Seen points to is tried
// first; if its condition fails, the item DynamoDB sends back (ALL_OLD)
// tells which form holds, so a take costs one write unless the state moved
// between that answer and the next try.
//
// Every form also requires the stored interval to be r.Interval
// (ErrLimitChanged otherwise) and, when r.Gen is set, the stored
// generation to be r.Gen (ErrQueueNotFound otherwise, as for a queue
// that is gone).
func (s *Store) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	if err := r.Check(); err != nil {
		return engine.Taken{}, err
	}
	ls := r.LimitList()
	t, _, forms := gcra(ls)
	if !forms || r.Batched() || casTaking(r, r.Seen) {
		return s.casTake(ctx, r)
	}
	if ungating(r, r.Seen) {
		// A gated queue gone idle: the take lifts its gated state by
		// compare-and-set if no other take meets it, else goes on by
		// the forms and leaves that to a later take.
		tk, err := s.casTakeIn(ctx, r, 2)
		if !errors.Is(err, errKeptChanging) {
			return tk, err
		}
	}
	f := formOf(r.Seen, r.Line, t, r.Now)
	// A refused take learns the state that refused it and picks its form
	// from it: it fails again only if a gate moved the state meanwhile
	// across the forms' boundary (last_start against the line's clock),
	// which a busy queue whose starts keep pace with its bookings does
	// at every gate. Hence more tries than one contention would need.
	tk, err := writeState(ctx, s, stateWrite[engine.Taken]{
		op: "take ticket", what: "take ticket " + r.Queue, queue: r.Queue, gen: r.Gen, limits: ls, tries: takeTries,
		exprs: func(tok string) exprs { return takeExprs(r, f, t, tok) },
		after: func(m map[string]types.AttributeValue) (engine.Taken, error) {
			return takenFrom(m, r, t, ls.BookedBurst(ls[0]))
		},
		refused: func(st slot.State) error {
			if casTaking(r, st) {
				return errGated{st}
			}
			f = formOf(st, r.Line, t, r.Now)
			return nil
		},
	})
	var g errGated
	if errors.As(err, &g) {
		// Gated since it was read: the take moves the gated state too.
		r.Seen = g.st
		return s.casTake(ctx, r)
	}
	return tk, err
}

// casTaking reports whether the take r goes by compare-and-set from
// state seen, though its limits have conditional forms: it lets starts
// cut in (r.CutIns) and so moves the gated state (engine.TakeRequest.
// Gating: turns the queue gated, settled, or extends it), which the forms
// leave alone. A take on a gated queue that changes none of it goes by
// the forms, as on any queue.
func casTaking(r engine.TakeRequest, seen slot.State) bool {
	if !r.CutIns {
		return false
	}
	g := r.Gating(seen)
	return g.Gated != seen.Gated || !g.GatedUntil.Equal(seen.GatedUntil)
}

// ungating reports whether the take r, which lets nothing cut in, finds
// the gated state seen run its course (slot.Ungate): it may lift it.
func ungating(r engine.TakeRequest, seen slot.State) bool {
	return !r.CutIns && seen.Gated && !r.Gating(seen).Gated
}

// errKeptChanging ends a write to the queue's state that every try
// found moved by another.
var errKeptChanging = errors.New("the queue state kept changing under the update")

// errGated ends a take in the conditional forms that found the queue
// gated (st): it goes on by compare-and-set.
type errGated struct{ st slot.State }

func (errGated) Error() string { return "queue gated" }

// takenFrom reads Take's answer from the state item right after it: the
// ticket is exact, since only takes move it, and take_clock keeps the
// clock this take set, should another take have moved the clock since (an
// SDK retry that met its own token). The clock is the theoretical time of
// the last line ticket (for a rate with burst b, its slot is b emission
// intervals t earlier less the room the line keeps, booked, and never
// before the take's now).
func takenFrom(m map[string]types.AttributeValue, r engine.TakeRequest, t, booked time.Duration) (engine.Taken, error) {
	st, _, err := decodeState(m)
	it := item{m: m}
	takeClock := it.time(attrTakeClock)
	if err == nil {
		err = it.err
	}
	if err != nil {
		return engine.Taken{}, fmt.Errorf("take ticket %s: %w", r.Queue, err)
	}
	tk := engine.Taken{First: st.Ticket - int64(r.N) + 1, State: st}
	if r.Line > 0 {
		tk.Slots = make([]time.Time, r.Line)
		for k := range tk.Slots {
			v := takeClock.Add(-time.Duration(r.Line-1-k) * t)
			tk.Slots[k] = later(r.Now, v.Add(-booked))
		}
	}
	return tk, nil
}

// stateWrite is a take or a gate on a queue's state item, written in the
// form the state last seen points to (a conditional form, or a
// compare-and-set from that state) and, when refused, decided again on
// the state the refusal sent back and tried again.
type stateWrite[T any] struct {
	op     string // notFound's word: "take ticket", "gate"
	what   string // its errors' prefix
	queue  string
	gen    int64
	limits slot.Limits
	tries  int
	// exprs is the write from the state last seen, carrying token tok.
	exprs func(tok string) exprs
	// after reads the answer from the item a write left.
	after func(map[string]types.AttributeValue) (T, error)
	// landed, if set, tells from the refusing state that this write had
	// landed before (beyond its token, which the loop checks).
	landed func(slot.State) bool
	// stale, if set, reports that the state last seen refuses already:
	// the write is decided on the item read afresh instead of being sent.
	stale func() bool
	// refused decides on st, the item's state that refused the write (or
	// that stale sent for): an error ends the write, nil tries again from st.
	refused func(st slot.State) error
	// spread, if set, waits a random while, up to a bound that doubles
	// each try, before trying again after a refusal: writers that
	// compare-and-set the whole state (batched takes) would else meet
	// each other again at every try.
	spread bool
}

// spreadMax bounds the wait between two tries of a spread write.
const spreadMax = 32 * time.Millisecond

// writeState runs w: one write while nothing else moved the state, and
// at most w.tries. A refusal whose item carries this write's token (the
// SDK sent it again after it landed), or that w.landed recognises, is
// answered from that item; one from limits other than w.limits is
// ErrLimitChanged; a missing queue, or one of another generation,
// ErrQueueNotFound.
func writeState[T any](ctx context.Context, s *Store, w stateWrite[T]) (T, error) {
	var zero T
	decide := func(st slot.State, k limitsKey) error {
		if k != keyOf(w.limits) {
			return fmt.Errorf("%s: %w", w.what, engine.ErrLimitChanged)
		}
		return w.refused(st)
	}
	tok := newToken()
	for try := range w.tries {
		if w.spread && try > 0 {
			if err := clock.Sleep(ctx, fullJitter(try, time.Millisecond, spreadMax)); err != nil {
				return zero, fmt.Errorf("%s: %w", w.what, err)
			}
		}
		if w.stale != nil && w.stale() {
			// The caller's read may be stale: only the item's own state
			// refuses.
			_, st, k, err := s.refusedState(ctx, w.op, w.what, w.queue, w.gen, nil)
			if err == nil {
				err = decide(st, k)
			}
			if err != nil {
				return zero, err
			}
		}
		m, ok, err := s.updateIf(ctx, stateKey(w.queue), w.exprs(tok))
		if err != nil {
			return zero, fmt.Errorf("%s: %w", w.what, err)
		}
		if ok {
			return w.after(m)
		}
		old, st, k, err := s.refusedState(ctx, w.op, w.what, w.queue, w.gen, m)
		if err != nil {
			return zero, err
		}
		if hasToken(old, tok) || (w.landed != nil && w.landed(st)) {
			// The SDK sent this very write again after it had landed.
			return w.after(old)
		}
		if err := decide(st, k); err != nil {
			return zero, err
		}
	}
	return zero, fmt.Errorf("%s: %w", w.what, errKeptChanging)
}

// takeTries bounds Take's tries: each refused one is a conditional write
// DynamoDB bills as one.
const takeTries = 20

// ticketUpdate is a take's SET of its tickets: ticket moves by r.N and,
// when some of them start in ticket order (r.MovesLine), line_ticket to
// the last of those (r.LineAfter past the ticket before the update). Both
// read the ticket before the update.
func ticketUpdate(e *expr, r engine.TakeRequest) string {
	t := e.n(attrTicket)
	before := "if_not_exists(" + t + ", " + e.v(":zero", num(0)) + ")"
	upd := "SET " + t + " = " + before + " + " + e.v(":n", num(int64(r.N)))
	if r.MovesLine() {
		upd += ", " + e.n(attrLine) + " = " + before + " + " + e.v(":line_end", num(r.LineAfter()))
	}
	return upd
}

// pinTicket is the condition that the ticket counter stands at t (a
// new queue's item may not have it yet).
func pinTicket(e *expr, t int64) string {
	was := e.n(attrTicket) + " = " + e.v(":was_ticket", num(t))
	if t == 0 {
		return "(attribute_not_exists(" + e.n(attrTicket) + ") OR " + was + ")"
	}
	return was
}

// batchTicketUpdate is a batched take's move of the ticket counter and
// the line to next's (engine.TakeRequest.Batched).
func batchTicketUpdate(e *expr, r engine.TakeRequest, next slot.State) string {
	upd := "SET " + e.n(attrTicket) + " = " + e.v(":new_ticket", num(next.Ticket))
	if r.MovesLine() {
		upd += ", " + e.n(attrLine) + " = " + e.v(":new_line", num(next.Line))
	}
	return upd
}

// takeExprs is Take's write in form f.
func takeExprs(r engine.TakeRequest, f takeForm, iv time.Duration, tok string) exprs {
	e := newExpr()
	wt := e.n(attrWriteToken)
	upd := ticketUpdate(e, r) + ", " + wt + " = " + e.v(":tok", str(tok))
	cond := limitCond(e, r.LimitList()) +
		" AND (attribute_not_exists(" + wt + ") OR " + wt + " <> :tok)" + genCond(e, r.Gen)
	missing := func(a string) string { return "attribute_not_exists(" + a + ")" }
	if f != takeNoLine {
		clock, last, tc := e.n(attrClock), e.n(attrLastStart), e.n(attrTakeClock)
		nmi := e.v(":nmi", timeNum(r.Now.Add(-iv)))
		span := ""
		if f != takeIdle {
			span = e.v(":span", durNum(time.Duration(r.Line)*iv))
		}
		switch f {
		case takeLine:
			upd += ", " + clock + " = " + clock + " + " + span + ", " + tc + " = " + clock + " + " + span
			cond += " AND " + clock + " >= " + nmi + " AND (" + missing(last) + " OR " + clock + " >= " + last + ")"
		case takeVirtual:
			// A new run of bookings (slot.State.RunFrom), an interval
			// after the start off the line.
			upd += ", " + clock + " = " + last + " + " + span + ", " + tc + " = " + last + " + " + span +
				", " + e.n(attrRunFrom) + " = " + last + " + " + e.v(":iv", durNum(iv))
			cond += " AND " + last + " >= " + nmi + " AND (" + missing(clock) + " OR " + last + " > " + clock + ")"
		case takeIdle:
			end := e.v(":end", timeNum(r.Now.Add(time.Duration(r.Line-1)*iv)))
			upd += ", " + clock + " = " + end + ", " + tc + " = " + end + ", " + e.n(attrRunFrom) + " = " + e.v(":run", timeNum(r.Now))
			cond += " AND (" + missing(clock) + " OR " + clock + " < " + nmi + ")" +
				" AND (" + missing(last) + " OR " + last + " < " + nmi + ")"
		}
	}
	return e.build(upd, cond)
}

// Gate applies r.Decide and r.Started with one conditional UpdateItem on
// the queue's state item, and nothing else: no transaction, no second
// write. The condition is the gate (interval unchanged, not paused, not
// purged, last_start ≤ at − interval + burst·interval, where at is the
// start the gate reserves, r.Start; for a line ticket with its slot, the
// line's front no further than the room past the slot: slot.Behind); the
// update moves last_start to max(last_start + interval, rec), where rec
// is the latest the start is recorded at (the deadline less the skew, not
// before at), by one of two forms, since one expression cannot take a
// maximum:
//
//   - busy, last_start ≥ rec − interval: last_start = last_start + interval;
//   - idle, last_start < rec − interval (or none yet): last_start = rec.
//
// A line ticket also moves current to itself and front to its slot where
// they are higher, each by a form the state seen points to (a scheduled
// ticket's gate moves neither).
//
// Under a running cap (r.MaxRunning > 0) the same write takes the
// ticket's running place until r.Until, and its condition holds the cap
// (see capForm): it drops the entries of the running map whose lease had
// ended in the state seen, and requires fewer than MaxRunning others; or,
// while the item has no map, creates it with the ticket's entry alone.
// Entries that ended but that the state seen did not show stay in the
// map, where they count for nothing, until a later gate drops them.
//
// r.Seen picks the forms tried first. On a conditional failure the item
// DynamoDB sends back decides: a gate that says no (r.Decide, slot.Full
// under the cap) becomes a *engine.GateError with that state, a gate that
// says yes means another form holds, and the write is tried again in it.
// ErrQueueNotFound (also for a queue of another generation than r.Gen),
// ErrLimitChanged.
func (s *Store) Gate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	ls := r.LimitList()
	t, burst, forms := gcra(ls)
	if !forms || r.CutIn && !r.Seen.Gated || r.Alone {
		// A start that turns the queue gated settles its state
		// (GateRequest.Started), and the line's last booking starts
		// late only while nothing is booked behind it: the
		// compare-and-set pins and writes the whole state. On a gated
		// queue a start that cuts in is a gate like any other.
		return s.casGate(ctx, r)
	}
	busy := isBusy(r.Seen, t, recorded(r))
	seen := r.Seen
	st, err := writeState(ctx, s, stateWrite[slot.State]{
		op: "gate", what: fmt.Sprintf("gate %s ticket %d", r.Queue, r.Ticket), queue: r.Queue, gen: r.Gen, limits: ls, tries: 4,
		exprs:  func(tok string) exprs { return gateExprs(r, t, burst, busy, seen, tok) },
		after:  gateAfter(r),
		landed: func(st slot.State) bool { return landed(st, r) },
		refused: func(st slot.State) error {
			if err := gateRefused(r, st); err != nil {
				return err
			}
			if r.CutIn && !st.Gated {
				return errGated{st} // no longer gated: the cut-in turns it so
			}
			busy, seen = isBusy(st, t, recorded(r)), st
			return nil
		},
	})
	var g errGated
	if errors.As(err, &g) {
		r.Seen = g.st
		return s.casGate(ctx, r)
	}
	return st, err
}

// Admit is the gate of a booked start (engine.AdmitRequest): the
// queue's strongly consistent read (GetQueue), no write. The booking
// kept the start's moment and room, so the queue's state item takes no
// write for it: a start costs the item its take's share alone.
func (s *Store) Admit(ctx context.Context, r engine.AdmitRequest) (engine.Queue, error) {
	return r.Admitted(s.GetQueue(ctx, r.Queue))
}

// gateAfter reads a gate's answer from the state item after it.
func gateAfter(r engine.GateRequest) func(map[string]types.AttributeValue) (slot.State, error) {
	return func(m map[string]types.AttributeValue) (slot.State, error) {
		st, _, err := decodeState(m)
		if err != nil {
			return slot.State{}, fmt.Errorf("gate %s ticket %d: %w", r.Queue, r.Ticket, err)
		}
		return st, nil
	}
}

// gateRefused is the *engine.GateError of a gate that r.Decide refuses on
// st, the item's state; nil if it says yes (another form holds).
func gateRefused(r engine.GateRequest, st slot.State) error {
	if v, openAt := r.Decide(st); v != slot.Start {
		return &engine.GateError{Verdict: v, OpenAt: openAt, State: st}
	}
	return nil
}

// isBusy reports whether the gate's busy form applies to s for a start
// recorded at rec: the theoretical next start, last_start + interval, is
// not before it.
func isBusy(s slot.State, iv time.Duration, rec time.Time) bool {
	return !s.LastStart.IsZero() && !s.LastStart.Add(iv).Before(rec)
}

// recorded is the time r's start is recorded at for the interval and rate
// forms: its deadline less the skew, and not before the start it reserves
// (slot.StartedBy).
func recorded(r engine.GateRequest) time.Time {
	return later(r.Start(), r.CallBy().Add(-r.Skew))
}

// gateExprs is the gate's UpdateItem in the busy or idle form and, under
// a cap, the running form that state seen points to.
func gateExprs(r engine.GateRequest, iv time.Duration, burst int, busy bool, seen slot.State, tok string) exprs {
	e := newExpr()
	wt, last := e.n(attrWriteToken), e.n(attrLastStart)
	at := r.Start() // the reserved start: the spacing is the start's, not the write's
	rec := recorded(r)
	nmi := e.v(":nmi", timeNum(rec.Add(-iv)))
	open := e.v(":open", timeNum(at.Add(-iv+time.Duration(burst)*iv)))
	cond := gateCond(e, r, wt, tok) + genCond(e, r.Gen)
	if r.CutIn {
		// Cuts in on a queue that stays gated (a compare-and-set turns one
		// that is not: Gate).
		cond += " AND " + e.n(attrGated) + " = " + e.v(":gated", boolean(true))
	}
	upd := "SET " + wt + " = :tok, "
	var remove []string
	if !r.Scheduled {
		upd += lineMoves(e, r, seen, &cond)
	}
	upd += last + " = "
	if busy {
		cond += " AND " + last + " BETWEEN " + nmi + " AND " + open
		upd += last + " + " + e.v(":step", durNum(iv))
	} else {
		cond += " AND (attribute_not_exists(" + last + ") OR (" + last + " < " + nmi + " AND " + last + " <= " + open + "))"
		upd += e.v(":now", timeNum(rec))
	}
	return endGate(e, r, seen, cond, upd, remove)
}

// gateCond is the condition every form of the gate's write holds to:
// the queue's limits are r's, it is not paused, r's ticket is not
// purged, and this write (tok, in the write token attribute wt) has not
// landed already.
func gateCond(e *expr, r engine.GateRequest, wt, tok string) string {
	return limitCond(e, r.LimitList()) +
		" AND " + e.n(attrPaused) + " = " + e.v(":f", boolean(false)) +
		" AND (attribute_not_exists(" + e.n(attrPurged) + ") OR " + e.n(attrPurged) + " < " + e.v(":t", num(r.Ticket)) + ")" +
		" AND (attribute_not_exists(" + wt + ") OR " + wt + " <> " + e.v(":tok", str(tok)) + ")"
}

// endGate ends every form of the gate's write alike: under a cap it
// takes a running place (capFormOf), it holds to the slow-down
// (slowGate), and it removes what those leave behind.
func endGate(e *expr, r engine.GateRequest, seen slot.State, cond, upd string, remove []string) exprs {
	if r.MaxRunning > 0 {
		remove = append(remove, capFormOf(seen, r).add(e, r, &cond, &upd)...)
	}
	remove = append(remove, slowGate(e, r, seen, &cond)...)
	if len(remove) > 0 {
		upd += " REMOVE " + strings.Join(remove, ", ")
	}
	return e.build(upd, cond)
}

// lineMoves adds to a line ticket's gate the conditions and updates of
// the line's counters, each in the form the state seen points to, since
// one expression cannot take a maximum: current moves to the ticket if
// it is higher, and front to the ticket's slot if it is later and the
// start keeps its moment (slot.MovesFront); else the condition keeps
// them at least as high (a refusal reads the item again and picks the
// other form). A ticket with its slot is also held to slot.Behind: the
// line's front no further past its slot than the room.
func lineMoves(e *expr, r engine.GateRequest, seen slot.State, cond *string) string {
	cur, t := e.n(attrCurrent), e.v(":t", num(r.Ticket))
	upd := ""
	if r.Ticket > seen.Current {
		*cond += " AND " + cur + " < " + t
		upd += cur + " = " + t + ", "
	} else {
		*cond += " AND " + cur + " >= " + t
	}
	if r.SlotAt.IsZero() {
		return upd
	}
	front := e.n(attrFront)
	if slot.MovesFront(r.SlotAt, r.Start(), r.LimitList(), r.Skew) && r.SlotAt.After(seen.Front) {
		at := e.v(":slot", timeNum(r.SlotAt))
		*cond += " AND (attribute_not_exists(" + front + ") OR " + front + " < " + at + ")"
		upd += front + " = " + at + ", "
	} else {
		behind := e.v(":behind", timeNum(r.SlotAt.Add(slot.LineRoom(r.LimitList(), r.Skew))))
		*cond += " AND (attribute_not_exists(" + front + ") OR " + front + " <= " + behind + ")"
	}
	return upd
}
