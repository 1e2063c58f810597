package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/engine"
)

var _ engine.ScheduleState = (*Store)(nil)

// scheduleID names a schedule: its queue and name.
type scheduleID struct{ queue, name string }

func scheduleDueID(queue, name string) dueID { return dueID{engine.DueSchedule, queue, name} }

// copySchedule copies s deeply (its spec holds pointers and a payload).
func copySchedule(s engine.Schedule) engine.Schedule {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var c engine.Schedule
	if err := json.Unmarshal(b, &c); err != nil {
		panic(err)
	}
	return c
}

// putSchedule stores s and its due entry; the caller holds the lock.
func (s *Store) putSchedule(sc engine.Schedule) {
	if s.schedules == nil {
		s.schedules = map[scheduleID]engine.Schedule{}
	}
	s.schedules[scheduleID{sc.Queue, sc.Name}] = copySchedule(sc)
	s.due.set(scheduleDueID(sc.Queue, sc.Name), engine.ScheduleDue(sc))
}

// CreateSchedule stores sc at version 1. ErrScheduleExists.
func (s *Store) CreateSchedule(_ context.Context, sc engine.Schedule) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.schedules[scheduleID{sc.Queue, sc.Name}]; ok {
		return fmt.Errorf("create schedule %s/%s: %w", sc.Queue, sc.Name, engine.ErrScheduleExists)
	}
	sc.Version = 1
	s.putSchedule(sc)
	return nil
}

// GetSchedule reads a schedule. ErrScheduleNotFound.
func (s *Store) GetSchedule(_ context.Context, queue, name string) (engine.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.schedules[scheduleID{queue, name}]
	if !ok {
		return engine.Schedule{}, fmt.Errorf("schedule %s/%s: %w", queue, name, engine.ErrScheduleNotFound)
	}
	return copySchedule(sc), nil
}

// ListSchedules returns queue's schedules in name order.
func (s *Store) ListSchedules(_ context.Context, queue string) ([]engine.Schedule, error) {
	s.mu.Lock()
	var out []engine.Schedule
	for id, sc := range s.schedules {
		if id.queue == queue {
			out = append(out, copySchedule(sc))
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b engine.Schedule) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// PutSchedule replaces a schedule at version from with sc at from+1.
// ErrConflict, ErrScheduleNotFound.
func (s *Store) PutSchedule(_ context.Context, sc engine.Schedule, from int64) (engine.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.schedules[scheduleID{sc.Queue, sc.Name}]
	switch {
	case !ok:
		return engine.Schedule{}, fmt.Errorf("put schedule %s/%s: %w", sc.Queue, sc.Name, engine.ErrScheduleNotFound)
	case old.Version != from:
		return engine.Schedule{}, fmt.Errorf("put schedule %s/%s: %w", sc.Queue, sc.Name, engine.ErrConflict)
	}
	sc.Version = from + 1
	s.putSchedule(sc)
	return copySchedule(sc), nil
}

// DeleteSchedule removes a schedule and its due entry.
func (s *Store) DeleteSchedule(_ context.Context, queue, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.schedules, scheduleID{queue, name})
	s.due.set(scheduleDueID(queue, name), time.Time{})
	return nil
}
