package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// A configure changes two items, the queue's config item and its hot
// state item, and holds no transaction on the state item: a transaction
// there makes every take and gate that meets it in flight fail with
// TransactionConflictException (and wait, and miss its slot), and is
// itself cancelled by every one of them that lands first. Instead:
//
//  1. the change is staged on the config item beside the configuration
//     it replaces (next_config, next_rebooked, next_change: the change's
//     number, one more than the state item's);
//  2. one conditional write of the state item makes it: the limit state
//     for the new limits, pinned to the state read (as a compare-and-set
//     take or gate is), and config_change set to the change's number;
//  3. the config item takes the staged configuration as its own (change),
//     which a reader does not wait for.
//
// A reader takes the configuration the state item's config_change names
// (decodeQueue): the config item's own, or the staged one once the state
// item says the change was made. A change staged and never made (a
// configure that died between 1 and 2) is never read; one made and not
// yet taken over (between 2 and 3) is read from the stage, and the next
// configure takes it over first (settle). The state item's write is
// refused only by a take or gate that landed after the read, and is then
// decided again on the item DynamoDB sends back; the takes and gates
// themselves never fail because of a configure.
const (
	// attrConfigChange is, on a state item, the number of the last
	// configuration change made (absent: 0), and on a config item the
	// number of the change whose configuration attrConfig holds.
	attrConfigChange = "config_change"
	attrNextConfig   = "next_config"
	attrNextRebooked = "next_rebooked"
	attrNextChange   = "next_change"
)

// errChangeUnseen: a state item names a configuration change its config
// item, as read, does not hold (the read of the two items straddled the
// change's writes): read again.
var errChangeUnseen = errors.New("configuration change not yet visible")

// Reconfigure replaces the queue's configuration and moves the state
// item's limit state to r.Reslot of the state it holds, as the steps
// above make it: the state item's ticket, current, limits and limit state
// (last_start, clock, marks) are pinned to the values read, so a take or a
// gate that lands between the read and the write makes the write fail,
// and it is decided again on the item as it then stood. ErrQueueNotFound.
func (s *Store) Reconfigure(ctx context.Context, r engine.ReconfigureRequest) (slot.State, error) {
	b, err := r.Config.Stored()
	if err != nil {
		return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
	}
	cfgItem, err := s.getItem(ctx, configKey(r.Queue))
	if err != nil {
		return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
	}
	m, err := s.getItem(ctx, stateKey(r.Queue))
	if err != nil {
		return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
	}
	if len(m) == 0 || len(cfgItem) == 0 || otherGen(m, r.Gen) || otherGen(cfgItem, r.Gen) {
		return slot.State{}, notFound("reconfigure", r.Queue)
	}
	if err := s.settle(ctx, r.Queue, cfgItem, m); err != nil {
		return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
	}
	tok, staged := newToken(), ""
	for range reconfigureTries {
		if len(m) == 0 || otherGen(m, r.Gen) {
			return slot.State{}, notFound("reconfigure", r.Queue)
		}
		seen, k, err := decodeState(m)
		if err != nil {
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
		}
		it := item{m: m}
		change := it.int(attrConfigChange) + 1
		if it.err != nil {
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, it.err)
		}
		next, rec, err := r.Reslot(seen)
		if err != nil {
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
		}
		key := fmt.Sprint(change)
		if rec != nil {
			key += " " + encodeRebooked(*rec)
		}
		if key != staged {
			if _, ok, err := s.updateIf(ctx, configKey(r.Queue), stageUpdate(r, string(b), rec, change)); err != nil {
				return slot.State{}, fmt.Errorf("reconfigure %s: stage: %w", r.Queue, err)
			} else if !ok {
				return slot.State{}, notFound("reconfigure", r.Queue)
			}
			staged = key
		}
		old, ok, err := s.updateIf(ctx, stateKey(r.Queue), reslotExprs(r, seen, next, k, change, tok))
		if err != nil {
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
		}
		if !ok {
			if old, err = s.orRead(ctx, stateKey(r.Queue), old); err != nil {
				return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
			}
			if len(old) == 0 || !hasToken(old, tok) && (&item{m: old}).int(attrConfigChange) != change {
				m = old // the state moved since the read: decide again
				continue
			}
			// The SDK sent this very write again after it had landed
			// (under the queue's lease no other configure makes a
			// change of this number).
		}
		// Made: the config item takes it over. A failure here leaves it
		// staged, which readers take all the same (settle finishes it).
		_ = s.adopt(ctx, r.Queue, string(b), rec, change)
		seen.LastStart, seen.Clock, seen.Marks = next.LastStart, next.Clock, next.Marks
		seen.RunFrom, seen.Gated, seen.GatedUntil, seen.GatedThrough = next.RunFrom, next.Gated, next.GatedUntil, next.GatedThrough
		seen.Current = max(seen.Current, next.Current)
		return seen, nil
	}
	return slot.State{}, fmt.Errorf("reconfigure %s: the queue state kept changing under the update", r.Queue)
}

// reconfigureTries bounds the state item's writes of one Reconfigure: on
// a busy queue a take or gate lands between the read and the write now
// and then (each try is one conditional write, decided again at once on
// the item a refusal sends back; at 200 takes and starts a second and a
// write's round trip of 10 ms, about one try in eight lands).
const reconfigureTries = 200

// stageUpdate stages configuration cfg (JSON) and what the change did to
// the queued jobs (rec; nil: none) as change number change on the config
// item, if it exists and is of r's generation.
func stageUpdate(r engine.ReconfigureRequest, cfg string, rec *engine.Rebooked, change int64) exprs {
	upd := expression.Set(expression.Name(attrNextConfig), expression.Value(str(cfg))).
		Set(expression.Name(attrNextChange), expression.Value(num(change)))
	return updateWhen(setRebooked(upd, attrNextRebooked, rec), all(itemExists(), genIs(r.Gen)))
}

// setRebooked adds to u that attribute a holds rec's record, or, for
// nil, none.
func setRebooked(u expression.UpdateBuilder, a string, rec *engine.Rebooked) expression.UpdateBuilder {
	if rec == nil {
		return u.Remove(expression.Name(a))
	}
	return u.Set(expression.Name(a), expression.Value(str(encodeRebooked(*rec))))
}

// adopt makes change number change, staged and made, the config item's
// own: configuration cfg (JSON), rec what it did to the queued jobs.
func (s *Store) adopt(ctx context.Context, queue, cfg string, rec *engine.Rebooked, change int64) error {
	next := expression.Name(attrNextChange)
	upd := expression.Set(expression.Name(attrConfig), expression.Value(str(cfg))).
		Set(expression.Name(attrConfigChange), expression.Value(num(change))).
		Remove(expression.Name(attrNextConfig)).Remove(next).Remove(expression.Name(attrNextRebooked))
	_, _, err := s.updateIf(ctx, configKey(queue), updateWhen(setRebooked(upd, attrRebooked, rec), next.Equal(expression.Value(num(change)))))
	return err
}

// settle makes a change the state item says was made, and the config
// item holds only staged (a configure died before adopt), the config
// item's own, so that a new change can be staged.
func (s *Store) settle(ctx context.Context, queue string, cfgItem, stateItem map[string]types.AttributeValue) error {
	st, c := item{m: stateItem}, item{m: cfgItem}
	made, own, next := st.int(attrConfigChange), c.int(attrConfigChange), c.int(attrNextChange)
	if err := errors.Join(st.err, c.err); err != nil || made == own || next != made {
		return err
	}
	rec, err := decodeRebooked(cfgItem, attrNextRebooked)
	if err != nil {
		return err
	}
	return s.adopt(ctx, queue, c.str(attrNextConfig), rec, made)
}

// configAttrs are the config item's attributes that hold the queue's
// configuration and rebooked record as of the state item's change:
// its own, or the staged change once made. errChangeUnseen when it holds
// neither.
func configAttrs(cfgItem, stateItem map[string]types.AttributeValue) (cfg, rebooked string, err error) {
	st, c := item{m: stateItem}, item{m: cfgItem}
	made, own, next := st.int(attrConfigChange), c.int(attrConfigChange), c.int(attrNextChange)
	if err := errors.Join(st.err, c.err); err != nil {
		return "", "", err
	}
	switch made {
	case own:
		return attrConfig, attrRebooked, nil
	case next:
		return attrNextConfig, attrNextRebooked, nil
	}
	return "", "", fmt.Errorf("state at change %d, config item at %d (staged %d): %w", made, own, next, errChangeUnseen)
}

// reslotExprs moves the state item from seen (under limits k) to next
// under r's limits, as change number change, if it still holds seen.
// The limit state is pinned by pin (limits.go), written out as text as
// the take's and gate's forms are: the rest comes in through inline.
func reslotExprs(r engine.ReconfigureRequest, seen, next slot.State, k limitsKey, change int64, tok string) exprs {
	lim, cc := expression.Name(attrLimits), expression.Name(attrConfigChange)
	conds := []expression.ConditionBuilder{
		expression.Name(attrTicket).Equal(expression.Value(num(seen.Ticket))),
		expression.Name(attrCurrent).Equal(expression.Value(num(seen.Current))),
		expression.Name(attrInterval).Equal(expression.Value(durNum(k.interval))),
		lim.AttributeNotExists(),
		cc.AttributeNotExists(),
		genIs(r.Gen),
	}
	if k.sig != "" {
		conds[3] = lim.Equal(expression.Value(str(k.sig)))
	}
	if change != 1 {
		conds[4] = cc.Equal(expression.Value(num(change - 1)))
	}
	nk := keyOf(r.Config.LimitList())
	upd := expression.Set(expression.Name(attrInterval), expression.Value(durNum(nk.interval))).
		Set(expression.Name(attrWriteToken), expression.Value(str(tok))).
		Set(cc, expression.Value(num(change)))
	if nk.sig != "" {
		upd = upd.Set(lim, expression.Value(str(nk.sig)))
	} else if k.sig != "" {
		upd = upd.Remove(lim)
	}
	e := newExpr()
	pinned, set, remove := pin(e, seen, next)
	cond, clauses := e.inline(all(conds...), upd)
	sets := clauses["SET"]
	if set != "" {
		sets += ", " + set
	}
	if rm := clauses["REMOVE"]; rm != "" {
		remove = append(remove, rm)
	}
	text := "SET " + sets
	if len(remove) > 0 {
		text += " REMOVE " + strings.Join(remove, ", ")
	}
	return e.build(text, cond+" AND "+pinned)
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
	Keys bool      `json:"keys,omitempty"`
	// Skip is engine.Rebooked.Skip; a release before it reads none.
	Skip [][2]int64 `json:"skip,omitempty"`
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
	RunFrom   int64  `json:"run_from,omitempty"`
	Marks     string `json:"marks,omitempty"`
}

func baseOf(s slot.State) baseJSON {
	return baseJSON{Ticket: s.Ticket, Current: s.Current, LastStart: nanos(s.LastStart), Clock: nanos(s.Clock), RunFrom: nanos(s.RunFrom), Marks: encodeMarks(s.Marks)}
}

func (b baseJSON) state() (slot.State, error) {
	marks, err := decodeMarks(b.Marks)
	if err != nil {
		return slot.State{}, err
	}
	var s slot.State
	s.Ticket, s.Current = b.Ticket, b.Current
	s.LastStart, s.Clock, s.RunFrom, s.Marks = fromNanos(b.LastStart), fromNanos(b.Clock), fromNanos(b.RunFrom), marks
	return s, nil
}

func encodeRebooked(r engine.Rebooked) string {
	w := rebookedJSON{After: r.After, Upto: r.Upto, At: nanos(r.At), baseJSON: baseOf(r.Base), Keys: r.Keys, Skip: r.Skip}
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
	r := &engine.Rebooked{After: w.After, Upto: w.Upto, At: fromNanos(w.At), Base: base, Keys: w.Keys, Skip: w.Skip}
	if w.Line != nil {
		if r.LineBase, err = w.Line.Base.state(); err != nil {
			return nil, fmt.Errorf("rebooked: %w", err)
		}
		r.First, r.Last, r.From = w.Line.First, w.Line.Last, fromNanos(w.Line.From)
	}
	return r, nil
}
