package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/engine"
)

// The debounce keys' items (engine.DebounceStore): each method one step
// under the store's mutex, as DynamoDB's conditional write on the item is.

var _ engine.DebounceStore = (*Store)(nil)

type debounceID struct{ queue, key string }

// GetDebounce reads the item of queue and key; an empty JobID for none.
func (s *Store) GetDebounce(_ context.Context, queue, key string) (engine.Debounce, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyDebounce(s.debounces[debounceID{queue, key}]), nil
}

// OpenDebounce stores d if the stored item is still prev. ErrConflict.
func (s *Store) OpenDebounce(_ context.Context, d, prev engine.Debounce) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := debounceID{d.Queue, d.Key}
	if !s.debounces[id].Same(prev) {
		return fmt.Errorf("open debounce %s: %w", d.Key, engine.ErrConflict)
	}
	if s.debounces == nil {
		s.debounces = map[debounceID]engine.Debounce{}
	}
	s.debounces[id] = copyDebounce(d)
	return nil
}

// JoinDebounce moves the open item of d's generation on to d.Until and
// d.Payload if its Until is after now. ErrConflict.
func (s *Store) JoinDebounce(_ context.Context, d engine.Debounce, now time.Time) (engine.Debounce, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := debounceID{d.Queue, d.Key}
	it, ok := s.debounces[id]
	if !ok || it.Gen != d.Gen || it.Closed || !it.Until.After(now) {
		return engine.Debounce{}, fmt.Errorf("join debounce %s: %w", d.Key, engine.ErrConflict)
	}
	it.Until, it.Payload = d.Until, slices.Clone(d.Payload)
	s.debounces[id] = it
	return copyDebounce(it), nil
}

// CloseDebounce closes jobID's open item whose Until is not after now.
// ErrConflict.
func (s *Store) CloseDebounce(_ context.Context, queue, key, jobID string, now time.Time) (engine.Debounce, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := debounceID{queue, key}
	it, ok := s.debounces[id]
	if !ok || it.JobID != jobID || (!it.Closed && it.Until.After(now)) {
		return engine.Debounce{}, fmt.Errorf("close debounce %s: %w", key, engine.ErrConflict)
	}
	it.Closed = true
	s.debounces[id] = it
	return copyDebounce(it), nil
}

// DeleteDebounce deletes jobID's closed item.
func (s *Store) DeleteDebounce(_ context.Context, queue, key, jobID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := debounceID{queue, key}
	if it, ok := s.debounces[id]; ok && it.JobID == jobID && it.Closed {
		delete(s.debounces, id)
	}
	return nil
}

func copyDebounce(d engine.Debounce) engine.Debounce {
	d.Payload = slices.Clone(d.Payload)
	return d
}
