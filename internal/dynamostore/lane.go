package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// The lane item: pk L#<queue>, sk K#<key> (K# alone for the queue's own
// lane, key ""). Keys cannot contain '#' (slot.ValidateKey), so a queue's
// lanes are the sort keys of its lane partition key that begin with K#,
// in key order. A lane is small (about 100 bytes, and 40 a waiter: one
// write unit up to about 25 waiters) and is written by compare-and-set on
// v, apart from the queue's hot state item and off its partition key
// (lanePK says why).
const (
	skLanePrefix = "K#"

	attrVersion      = "v"
	attrHolderTicket = "holder_ticket"
	attrHolderID     = "holder_id"
	attrUntil        = "until"
	attrLast         = "last"
	attrWaiting      = "waiting"
	// attrMore holds a key's holders beyond the first (slot.Lane.More),
	// under a key_max_running above one.
	attrMore    = "more"
	attrPending = "pending"
	// attrAddToken is AddPending's write token, apart from the other
	// writes' attrWriteToken: an add that lands between a PutLane and
	// the SDK's retry of it (its answer lost) does not hide the put's
	// token from that retry, which would otherwise answer ErrConflict
	// for a put that landed, and its caller do its change, and its
	// pending delta, again.
	attrAddToken = "add_token"
	// Also attrQueue, attrLaneKey, attrGen (always, 0 included: a lane of
	// generation 0 is told from a missing one by it), attrTTL and
	// attrWriteToken.
)

// laneKeep is how long a lane item outlives its last write, or its
// holder's lease if that ends later, before DynamoDB's TTL may delete it.
// Nothing else deletes a lane that is not idle and empty: a deleted
// queue's lanes stay behind (their generation is no queue's), and a crash
// between a job's end and its lane's update leaves Pending one too high,
// so the lane never empties. Every write moves the ttl on, and a lane
// whose jobs wait or run is written as they arrive, start and end (a
// holder's lease, minutes, is far shorter), so 30 days deletes only lanes
// nothing has touched for a month. A lane whose only trace is the Pending
// count of a job scheduled more than 30 days ahead loses that count, which
// then reads low until the job arrives.
const laneKeep = 30 * 24 * time.Hour

// laneSeed is the version a lane created at now continues from, so that
// it is created at laneSeed+1: the clock in microseconds. A lane's
// versions must never repeat, across deletes too (engine.State.GetLane),
// but a deleted lane leaves no item to remember its version by. An
// earlier lane of the same queue and key started at an earlier clock
// reading and grew by one a write, and DynamoDB takes about 1,000 writes
// a second on one item, a thousandth of the clock's pace: so a lane
// seeded from a later reading starts above every version the earlier
// one reached, unless that lane took more writes than microseconds
// passed. What this leans on is the clock: the writers' clocks (one per
// Lambda) must agree, and a write must not be held up in flight, to
// well within the earlier lane's lifetime. If they do not, a version
// may come back, and a stale write then lands only if the new lane is at
// exactly the version it read, while it still holds that read.
//
// Microseconds since 1970 stay below 2^53 until the year 2255, so
// versions are exact in JSON's float64 too.
func laneSeed(now time.Time) int64 { return max(0, now.UnixMicro()) }

func laneKey(queue, key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(lanePK(queue)), attrSK: str(skLanePrefix + key)}
}

// laneTTL is the ttl of lane l written at now: a while after its last
// holder's lease ends.
func laneTTL(now time.Time, l slot.Lane) types.AttributeValue {
	until := l.Until
	for _, h := range l.More {
		until = later(until, h.Until)
	}
	return num(ttlSeconds(later(now, until).Add(laneKeep)))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// encodeWaiting writes waiters as one string, "ticket:id,ticket:id": job
// ids hold no comma, and the ticket ends at the first colon. About half
// the bytes of a list of maps, whose every write pays its size.
func encodeWaiting(ws []slot.Waiter) (string, error) {
	var b strings.Builder
	for i, w := range ws {
		if w.JobID == "" || strings.ContainsRune(w.JobID, ',') {
			return "", fmt.Errorf("waiter %d: job id %q cannot be stored", i, w.JobID)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(w.Ticket, 10))
		b.WriteByte(':')
		b.WriteString(w.JobID)
	}
	return b.String(), nil
}

// encodeMore writes holders as one string, "ticket:until:id,…" (until in
// Unix nanoseconds; the id last, as it may hold colons but no comma).
func encodeMore(hs []slot.Hold) (string, error) {
	var b strings.Builder
	for i, h := range hs {
		if h.JobID == "" || strings.ContainsRune(h.JobID, ',') {
			return "", fmt.Errorf("holder %d: job id %q cannot be stored", i, h.JobID)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d:%s", h.Ticket, h.Until.UnixNano(), h.JobID)
	}
	return b.String(), nil
}

func decodeMore(s string) ([]slot.Hold, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]slot.Hold, len(parts))
	for i, p := range parts {
		f := strings.SplitN(p, ":", 3)
		if len(f) != 3 || f[2] == "" {
			return nil, fmt.Errorf("bad holder %q", p)
		}
		ticket, err1 := strconv.ParseInt(f[0], 10, 64)
		until, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad holder %q", p)
		}
		out[i] = slot.Hold{Waiter: slot.Waiter{Ticket: ticket, JobID: f[2]}, Until: time.Unix(0, until).UTC()}
	}
	return out, nil
}

func decodeWaiting(s string) ([]slot.Waiter, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]slot.Waiter, len(parts))
	for i, p := range parts {
		t, id, ok := strings.Cut(p, ":")
		ticket, err := strconv.ParseInt(t, 10, 64)
		if !ok || err != nil || id == "" {
			return nil, fmt.Errorf("bad waiter %q", p)
		}
		out[i] = slot.Waiter{Ticket: ticket, JobID: id}
	}
	return out, nil
}

// laneItem encodes l at version v, written at now with AddPending's write
// token tok (only AddPending puts a whole item: a lane started afresh).
// Zero fields are left out, but for gen, pending and v.
func laneItem(l slot.Lane, v int64, tok string, now time.Time) (map[string]types.AttributeValue, error) {
	m := laneKey(l.Queue, l.Key)
	m[attrQueue] = str(l.Queue)
	if l.Key != "" {
		m[attrLaneKey] = str(l.Key)
	}
	m[attrGen] = num(l.Gen)
	m[attrVersion] = num(v)
	if l.Holder != (slot.Waiter{}) {
		if strings.ContainsRune(l.Holder.JobID, ',') {
			return nil, fmt.Errorf("holder: job id %q cannot be stored", l.Holder.JobID)
		}
		m[attrHolderTicket] = num(l.Holder.Ticket)
		m[attrHolderID] = str(l.Holder.JobID)
	}
	if !l.Until.IsZero() {
		m[attrUntil] = timeNum(l.Until)
	}
	if l.Last != 0 {
		m[attrLast] = num(l.Last)
	}
	if len(l.Waiting) > 0 {
		w, err := encodeWaiting(l.Waiting)
		if err != nil {
			return nil, err
		}
		m[attrWaiting] = str(w)
	}
	if len(l.More) > 0 {
		more, err := encodeMore(l.More)
		if err != nil {
			return nil, err
		}
		m[attrMore] = str(more)
	}
	m[attrPending] = num(l.Pending)
	m[attrTTL] = laneTTL(now, l)
	m[attrAddToken] = str(tok)
	return m, nil
}

// decodeLane reads a lane item; its key comes from the sort key.
func decodeLane(m map[string]types.AttributeValue) (slot.Lane, error) {
	it := item{m: m}
	sk := it.str(attrSK)
	l := slot.Lane{
		Queue:   it.str(attrQueue),
		Key:     strings.TrimPrefix(sk, skLanePrefix),
		Gen:     it.int(attrGen),
		Version: it.int(attrVersion),
		Holder:  slot.Waiter{Ticket: it.int(attrHolderTicket), JobID: it.str(attrHolderID)},
		Until:   it.time(attrUntil),
		Last:    it.int(attrLast),
		Pending: it.int(attrPending),
	}
	waiting, more := it.str(attrWaiting), it.str(attrMore)
	if it.err == nil && !strings.HasPrefix(sk, skLanePrefix) {
		it.fail(attrSK, fmt.Errorf("%q is not a lane's", sk))
	}
	if it.err != nil {
		return slot.Lane{}, fmt.Errorf("decode lane: %w", it.err)
	}
	w, err := decodeWaiting(waiting)
	if err != nil {
		return slot.Lane{}, fmt.Errorf("decode lane %s/%s: %w", l.Queue, l.Key, err)
	}
	l.Waiting = w
	if l.More, err = decodeMore(more); err != nil {
		return slot.Lane{}, fmt.Errorf("decode lane %s/%s: %w", l.Queue, l.Key, err)
	}
	return l, nil
}

// GetLane reads queue's lane of key with a strongly consistent GetItem; a
// lane with no item is returned at Version 0.
func (s *Store) GetLane(ctx context.Context, queue, key string) (slot.Lane, error) {
	m, err := s.getItem(ctx, laneKey(queue, key))
	if err != nil {
		return slot.Lane{}, fmt.Errorf("get lane %s/%s: %w", queue, key, err)
	}
	if len(m) == 0 {
		return slot.Lane{Queue: queue, Key: key}, nil
	}
	l, err := decodeLane(m)
	if err != nil {
		return slot.Lane{}, fmt.Errorf("get lane %s/%s: %w", queue, key, err)
	}
	return l, nil
}

// versionIs is the condition that a lane item is at version from: for 0,
// that there is none (or one without a version).
func versionIs(e *expr, from int64) string {
	if from == 0 {
		return "attribute_not_exists(" + e.n(attrVersion) + ")"
	}
	return e.n(attrVersion) + " = " + e.v(":from", num(from))
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
func countIs(e *expr, above bool, delta int64) string {
	p, neg := e.n(attrPending), e.v(":neg", num(-delta))
	if above {
		c := p + " > " + neg
		if delta > 0 {
			c += " OR attribute_not_exists(" + p + ")"
		}
		return "(" + c + ")"
	}
	c := p + " <= " + neg
	if delta <= 0 {
		c += " OR attribute_not_exists(" + p + ")"
	}
	return "(" + c + ")"
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
	e := newExpr()
	set := []string{
		e.n(attrQueue) + " = " + e.v(":q", str(l.Queue)),
		e.n(attrGen) + " = " + e.v(":g", num(l.Gen)),
		e.n(attrVersion) + " = " + e.v(":v", num(v)),
		e.n(attrTTL) + " = " + e.v(":ttl", laneTTL(now, l)),
		e.n(attrWriteToken) + " = " + e.v(":tok", str(tok)),
	}
	var remove []string
	opt := func(name, placeholder string, present bool, val types.AttributeValue) {
		if present {
			set = append(set, e.n(name)+" = "+e.v(placeholder, val))
		} else {
			remove = append(remove, e.n(name))
		}
	}
	if l.Key != "" {
		set = append(set, e.n(attrLaneKey)+" = "+e.v(":k", str(l.Key)))
	}
	if strings.ContainsRune(l.Holder.JobID, ',') {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: holder: job id %q cannot be stored", l.Queue, l.Key, l.Holder.JobID)
	}
	waiting, err := encodeWaiting(l.Waiting)
	if err != nil {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
	}
	held := l.Holder != (slot.Waiter{})
	opt(attrHolderTicket, ":ht", held, num(l.Holder.Ticket))
	opt(attrHolderID, ":hid", held, str(l.Holder.JobID))
	opt(attrUntil, ":until", !l.Until.IsZero(), timeNum(l.Until))
	opt(attrLast, ":last", l.Last != 0, num(l.Last))
	opt(attrWaiting, ":w", waiting != "", str(waiting))
	more, err := encodeMore(l.More)
	if err != nil {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
	}
	opt(attrMore, ":more", more != "", str(more))
	// The lane is an entry of the due index (due.go) while it is due.
	if dueSet, dueRemove := dueUpdate(e, lanePK(l.Queue), skLanePrefix+l.Key, engine.LaneDue(l)); dueSet != "" {
		set = append(set, dueSet)
	} else {
		remove = append(remove, dueRemove)
	}
	upd := "SET " + strings.Join(set, ", ") + " ADD " + e.n(attrPending) + " " + e.v(":d", num(delta))
	if len(remove) > 0 {
		upd += " REMOVE " + strings.Join(remove, ", ")
	}
	cond := versionIs(e, from)
	if counted {
		cond += " AND " + countIs(e, true, delta)
	}
	m, ok, err := s.updateIf(ctx, laneKey(l.Queue, l.Key), e.build(upd, cond))
	if err != nil {
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
	}
	if !ok {
		old, err := s.orRead(ctx, laneKey(l.Queue, l.Key), m)
		if err != nil {
			return slot.Lane{}, false, fmt.Errorf("put lane %s/%s: %w", l.Queue, l.Key, err)
		}
		switch {
		case hasToken(old, tok):
			// The SDK sent this very update again after it had landed.
			stored, err := s.laneFrom(old, "put lane", l.Queue, l.Key)
			return stored, err == nil, err
		case counted && old != nil && atVersion(old, from):
			return slot.Lane{}, false, nil // refused for the count
		}
		return slot.Lane{}, false, fmt.Errorf("put lane %s/%s at version %d: %w", l.Queue, l.Key, from, engine.ErrConflict)
	}
	stored, err := s.laneFrom(m, "put lane", l.Queue, l.Key)
	return stored, err == nil, err
}

// deleteLane is PutLane's DeleteItem: on condition v = from and, from a
// stored version, that the count plus delta is 0 or less. done is false
// when that condition alone failed.
func (s *Store) deleteLane(ctx context.Context, l slot.Lane, from, delta int64) (done bool, _ error) {
	e := newExpr()
	cond := versionIs(e, from)
	if from != 0 {
		cond += " AND " + countIs(e, false, delta)
	}
	old, ok, err := s.deleteIf(ctx, laneKey(l.Queue, l.Key), e.build("", cond))
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
		e := newExpr()
		wt, g, v := e.n(attrAddToken), e.n(attrGen), e.n(attrVersion)
		now := s.now()
		upd := "ADD " + e.n(attrPending) + " " + e.v(":n", num(n)) +
			" SET " + v + " = if_not_exists(" + v + ", " + e.v(":seed", num(laneSeed(now)+1)) + ")" +
			", " + e.n(attrQueue) + " = " + e.v(":q", str(queue)) + ", " + g + " = " + e.v(":g", num(gen)) +
			", " + e.n(attrTTL) + " = " + e.v(":ttl", laneTTL(now, slot.Lane{})) + ", " + wt + " = " + e.v(":tok", str(tok))
		if key != "" {
			upd += ", " + e.n(attrLaneKey) + " = " + e.v(":k", str(key))
		}
		cond := "(attribute_not_exists(" + g + ") OR " + g + " = :g) AND (attribute_not_exists(" + wt + ") OR " + wt + " <> :tok)"
		m, ok, err := s.updateIf(ctx, laneKey(queue, key), e.build(upd, cond))
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
				return s.laneFrom(old, "add pending", queue, key)
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
		return s.laneFrom(m, "add pending", queue, key)
	}
	return slot.Lane{}, fmt.Errorf("add pending %s/%s: the lane kept changing under the update", queue, key)
}

func hasAddToken(m map[string]types.AttributeValue, tok string) bool {
	v, ok := m[attrAddToken].(*types.AttributeValueMemberS)
	return ok && v.Value == tok
}

func (s *Store) laneFrom(m map[string]types.AttributeValue, op, queue, key string) (slot.Lane, error) {
	l, err := decodeLane(m)
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
	e := newExpr()
	cond := versionIs(e, old.Version)
	g := newExpr()
	var genIs string
	if gen != 0 {
		genIs = g.n(attrGen) + " = " + g.v(":gen", num(gen))
	} else {
		genIs = "attribute_exists(" + g.n(attrPK) + ") AND attribute_not_exists(" + g.n(attrGen) + ")"
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: &s.table, Key: configKey(old.Queue),
			ConditionExpression: &genIs, ExpressionAttributeNames: g.names, ExpressionAttributeValues: orNil(g.values)}},
		{Put: &types.Put{TableName: &s.table, Item: m, ConditionExpression: &cond,
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: orNil(e.values),
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

// ListLanes queries the queue's lane partition key (L#<queue>) for the
// sort keys that begin with K#, strongly consistent, page by page: every
// lane, in key order.
func (s *Store) ListLanes(ctx context.Context, queue string) ([]slot.Lane, error) {
	e := newExpr()
	kc := e.n(attrPK) + " = " + e.v(":pk", str(lanePK(queue))) +
		" AND begins_with(" + e.n(attrSK) + ", " + e.v(":k", str(skLanePrefix)) + ")"
	var out []slot.Lane
	var start map[string]types.AttributeValue
	for {
		res, err := s.query(ctx, &dynamodb.QueryInput{
			KeyConditionExpression:    &kc,
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("list lanes %s: %w", queue, err)
		}
		for _, m := range res.Items {
			l, err := decodeLane(m)
			if err != nil {
				return nil, fmt.Errorf("list lanes %s: %w", queue, err)
			}
			out = append(out, l)
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		start = res.LastEvaluatedKey
	}
	// DynamoDB orders by the sort key's bytes, as Go compares strings;
	// the sort only guards that.
	slices.SortStableFunc(out, func(a, b slot.Lane) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
