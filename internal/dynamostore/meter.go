package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// A key's meter (slot.Meter: the key's own limit state) is an item of its
// own, M#<queue>#<key> / meter: one partition key per key, so neither
// the queue's hot state item nor the queue's lanes share a partition
// with it, and 10,000 keys of one queue spread over the table. It holds
// attrQueue, attrLaneKey, attrGen, attrVersion, attrMeter (the key's
// starts and its own limits, as JSON), attrWriteToken and, unless the
// key has limits of its own, attrTTL: a day after the meter stops holding
// anything back (slot.Meter.Keep), so a key with nothing waiting leaves
// nothing behind.
const (
	skMeter   = "meter"
	attrMeter = "meter"
)

func meterPK(queue, key string) string { return "M#" + queue + "#" + key }

func meterKey(queue, k string) map[string]types.AttributeValue {
	return key(meterPK(queue, k), skMeter)
}

// meterJSON is attrMeter's text: times in nanoseconds since 1970.
type meterJSON struct {
	Current   int64       `json:"current,omitempty"`
	LastStart int64       `json:"last_start,omitempty"`
	Marks     string      `json:"marks,omitempty"`
	Limits    []api.Limit `json:"limits,omitempty"`
	// The key's slow-down (slot.SlowDown), when its target answered one.
	SlowUntil  int64 `json:"slow_until,omitempty"`
	SlowTicket int64 `json:"slow_ticket,omitempty"`
	SlowHold   int64 `json:"slow_hold,omitempty"`
	SlowDowns  int64 `json:"slow_downs,omitempty"`
	// The limits the marks were kept under (slot.Meter.KeptUnder): absent
	// when not known, [] for none; and the answered tickets.
	KeptUnder *[]api.Limit `json:"kept_under,omitempty"`
	Answered  []int64      `json:"answered,omitempty"`
	// SlowSeen is slot.State.SlowSeen, its empty tail left out.
	SlowSeen []string `json:"slow_seen,omitempty"`
	// The key's weight in the waiting room (slot.Meter.Weight).
	Weight int `json:"weight,omitempty"`
}

func encodeMeter(m slot.Meter) string {
	w := meterJSON{
		Current: m.State.Current, LastStart: nanos(m.State.LastStart),
		Marks: encodeMarks(m.State.Marks), Limits: m.Limits,
		SlowUntil: nanos(m.State.SlowUntil), SlowTicket: m.State.SlowTicket, SlowHold: nanos(m.State.SlowHold), SlowDowns: m.State.SlowDowns,
		Answered: m.Answered, SlowSeen: seenList(m.State.SlowSeen), Weight: m.Weight,
	}
	if m.KeptUnder != nil {
		kept := []api.Limit(m.KeptUnder)
		w.KeptUnder = &kept
	}
	b, _ := json.Marshal(w) // numbers, strings and limits: cannot fail
	return string(b)
}

func decodeMeter(m map[string]types.AttributeValue) (slot.Meter, error) {
	it := item{m: m}
	mt := slot.Meter{Queue: it.str(attrQueue), Key: it.str(attrLaneKey), Gen: it.int(attrGen), Version: it.int(attrVersion)}
	text := it.str(attrMeter)
	if it.err != nil {
		return mt, fmt.Errorf("decode meter: %w", it.err)
	}
	m0 := mt
	var w meterJSON
	if err := json.Unmarshal([]byte(text), &w); err != nil {
		return mt, fmt.Errorf("meter %s/%s: %w", mt.Queue, mt.Key, err)
	}
	m0.State.Current, m0.State.LastStart = w.Current, fromNanos(w.LastStart)
	m0.State.SlowUntil, m0.State.SlowTicket, m0.State.SlowHold, m0.State.SlowDowns = fromNanos(w.SlowUntil), w.SlowTicket, fromNanos(w.SlowHold), w.SlowDowns
	copy(m0.State.SlowSeen[:], w.SlowSeen)
	marks, err := decodeMarks(w.Marks)
	if err != nil {
		return mt, fmt.Errorf("meter %s/%s: %w", mt.Queue, mt.Key, err)
	}
	m0.State.Marks, m0.Limits, m0.Answered, m0.Weight = marks, w.Limits, w.Answered, w.Weight
	if w.KeptUnder != nil {
		m0.KeptUnder = append(slot.Limits{}, *w.KeptUnder...)
	}
	return m0, nil
}

// seenList is seen without its empty tail (nil if all are empty).
func seenList(seen [slot.SlowSeenSlots]string) []string {
	n := len(seen)
	for n > 0 && seen[n-1] == "" {
		n--
	}
	if n == 0 {
		return nil
	}
	return slices.Clone(seen[:n])
}

// GetMeter reads queue's meter of key with a strongly consistent GetItem;
// one with no item is returned at Version 0.
func (s *Store) GetMeter(ctx context.Context, queue, key string) (slot.Meter, error) {
	got, err := s.getItem(ctx, meterKey(queue, key))
	if err != nil {
		return slot.Meter{}, fmt.Errorf("get meter %s/%s: %w", queue, key, err)
	}
	if len(got) == 0 {
		return slot.Meter{Queue: queue, Key: key}, nil
	}
	m, err := decodeMeter(got)
	if err != nil {
		return slot.Meter{}, fmt.Errorf("get meter %s/%s: %w", queue, key, err)
	}
	return m, nil
}

// PutMeter writes the meter item whole with one PutItem on condition
// that it is at version from (none for 0: a created meter continues from
// laneSeed, so its versions never repeat after the TTL deleted an earlier
// one) and of m's generation or an older one (engine.GenBefore): a
// meter of a later generation is the queue's created again under its
// name, and a write of the deleted one is ErrQueueNotFound. A re-sent
// put that meets its own write token landed.
func (s *Store) PutMeter(ctx context.Context, m slot.Meter, from int64, keep time.Time) (slot.Meter, error) {
	next := from + 1
	if from == 0 {
		next = laneSeed(s.now()) + 1
	}
	tok := newToken()
	it := map[string]types.AttributeValue{
		attrPK: str(meterPK(m.Queue, m.Key)), attrSK: str(skMeter),
		attrQueue: str(m.Queue), attrLaneKey: str(m.Key), attrGen: num(m.Gen),
		attrVersion: num(next), attrMeter: str(encodeMeter(m)), attrWriteToken: str(tok),
	}
	if !keep.IsZero() {
		it[attrTTL] = num(ttlSeconds(keep))
	}
	old, ok, err := s.putIf(ctx, it, when(putFrom(from, m.Gen)))
	if err != nil {
		return slot.Meter{}, fmt.Errorf("put meter %s/%s: %w", m.Queue, m.Key, err)
	}
	switch {
	case ok, hasToken(old, tok): // a token: a re-sent put whose first send landed
	case laterGen((&item{m: old}).int(attrGen), m.Gen):
		return slot.Meter{}, fmt.Errorf("put meter %s/%s of generation %d: %w", m.Queue, m.Key, m.Gen, engine.ErrQueueNotFound)
	default:
		return slot.Meter{}, fmt.Errorf("put meter %s/%s at version %d: %w", m.Queue, m.Key, from, engine.ErrConflict)
	}
	m.Version = next
	return m, nil
}

// putFrom is the condition of a put of a versioned item (a meter, a
// horizon) of generation gen read at version from: there is none for
// from 0; else it is still at from, and of gen or an older generation
// (notLaterGen).
func putFrom(from, gen int64) expression.ConditionBuilder {
	if from == 0 {
		return itemMissing()
	}
	return all(expression.Name(attrVersion).Equal(expression.Value(num(from))), notLaterGen(gen))
}

// notLaterGen is the condition that an item's generation is gen or an
// older one (engine.GenBefore; 0 stands for none and orders nothing): a
// write of generation gen may replace it. Unset for gen 0.
func notLaterGen(gen int64) expression.ConditionBuilder {
	if gen == 0 {
		return expression.ConditionBuilder{}
	}
	g := expression.Name(attrGen)
	random := g.GreaterThanEqual(expression.Value(num(engine.RandomGens)))
	older := g.LessThanEqual(expression.Value(num(gen))).Or(random)
	if gen >= engine.RandomGens {
		// A queue's random generation, from before they were ordered:
		// any random one counts as older, no ordered one does.
		older = g.Equal(expression.Value(num(0))).Or(random)
	}
	return missingOr(g, older)
}

// laterGen reports whether an item of generation stored belongs to a
// queue created after the one of generation gen (0 on either side: no
// generation, which orders nothing).
func laterGen(stored, gen int64) bool {
	return stored != 0 && gen != 0 && stored != gen && !engine.GenBefore(stored, gen)
}
