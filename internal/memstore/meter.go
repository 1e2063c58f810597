package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// meterRec is a stored meter and when it may be dropped (zero: never).
type meterRec struct {
	m    slot.Meter
	keep time.Time
}

// GetMeter returns queue's meter of key, or an unwritten one: also when
// the stored one's keep has passed, which drops it, as DynamoDB's TTL
// would.
func (s *Store) GetMeter(_ context.Context, queue, key string) (slot.Meter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := laneID{queue, key}
	r, ok := s.meters[id]
	if ok && !r.keep.IsZero() && s.now().After(r.keep) {
		delete(s.meters, id)
		ok = false
	}
	if !ok {
		return slot.Meter{Queue: queue, Key: key}, nil
	}
	return cloneMeter(r.m), nil
}

// PutMeter stores m if the stored meter is at version from, at the next
// version (from 0, above every version a meter has had). ErrConflict;
// ErrQueueNotFound when the stored meter is of a later generation than
// m's (m is a deleted queue's).
func (s *Store) PutMeter(_ context.Context, m slot.Meter, from int64, keep time.Time) (slot.Meter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := laneID{m.Queue, m.Key}
	cur, ok := s.meters[id]
	if ok && !cur.keep.IsZero() && s.now().After(cur.keep) {
		delete(s.meters, id)
		ok = false
	}
	if ok && laterGen(cur.m.Gen, m.Gen) {
		return slot.Meter{}, fmt.Errorf("put meter %s/%s of generation %d over generation %d: %w", m.Queue, m.Key, m.Gen, cur.m.Gen, engine.ErrQueueNotFound)
	}
	if v := cur.m.Version; !ok && from != 0 || ok && v != from {
		return slot.Meter{}, fmt.Errorf("put meter %s/%s at version %d: %w", m.Queue, m.Key, from, engine.ErrConflict)
	}
	m = cloneMeter(m)
	m.Version = from + 1
	if from == 0 {
		m.Version = s.meterTop + 1
	}
	s.meterTop = max(s.meterTop, m.Version)
	s.meters[id] = meterRec{m: m, keep: keep}
	return cloneMeter(m), nil
}

// laterGen reports whether a record of generation stored belongs to a
// queue created after the one of generation gen (0 on either side: no
// generation, which orders nothing), so that gen's writes must leave it
// alone.
func laterGen(stored, gen int64) bool {
	return stored != 0 && gen != 0 && stored != gen && !engine.GenBefore(stored, gen)
}

// Meters returns the stored meters of queue (for tests): expired ones
// left out.
func (s *Store) Meters(queue string) []slot.Meter {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []slot.Meter
	for id, r := range s.meters {
		if id.queue == queue && (r.keep.IsZero() || !s.now().After(r.keep)) {
			out = append(out, cloneMeter(r.m))
		}
	}
	return out
}

func cloneMeter(m slot.Meter) slot.Meter {
	m.Limits = slices.Clone(m.Limits)
	m.KeptUnder = slices.Clone(m.KeptUnder)
	m.Answered = slices.Clone(m.Answered)
	m.State.Marks = slices.Clone(m.State.Marks)
	for i, mk := range m.State.Marks {
		mk.Starts, mk.Booked = slices.Clone(mk.Starts), slices.Clone(mk.Booked)
		m.State.Marks[i] = mk
	}
	return m
}
