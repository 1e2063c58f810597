package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
)

var _ engine.ScheduleState = (*Store)(nil)

// A schedule (engine.Schedule) is one item, pk S#<queue>, sk S#<name>:
// the schedule as JSON in schedule, its version in schedule_v (the
// condition of every write), and, while it is due, due_pk and due_sk
// (engine.ScheduleDue), written in the same PutItem, so the due index
// holds one entry per active schedule and a write that advances it moves
// the entry. A queue's schedules share their partition key, apart from
// the queue's hot state item, so ListSchedules is one Query.
const (
	schedulePrefix = "S#"

	attrSchedule  = "schedule"
	attrScheduleV = "schedule_v"
)

func schedulePK(queue string) string { return schedulePrefix + queue }
func scheduleSK(name string) string  { return schedulePrefix + name }

// scheduleItem is s's item, due by engine.ScheduleDue, with write token
// tok.
func scheduleItem(s engine.Schedule, tok string) (map[string]types.AttributeValue, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	pk, sk := schedulePK(s.Queue), scheduleSK(s.Name)
	m := key(pk, sk)
	m[attrSchedule] = str(string(b))
	m[attrScheduleV] = num(s.Version)
	m[attrWriteToken] = str(tok)
	setDue(m, pk, sk, engine.ScheduleDue(s))
	return m, nil
}

func decodeSchedule(m map[string]types.AttributeValue) (engine.Schedule, error) {
	it := &item{m: m}
	raw := it.str(attrSchedule)
	if it.err != nil {
		return engine.Schedule{}, it.err
	}
	var s engine.Schedule
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return engine.Schedule{}, fmt.Errorf("decode schedule: %w", err)
	}
	return s, nil
}

// CreateSchedule writes s at version 1 with one PutItem on condition that
// no item of its key exists. ErrScheduleExists.
func (s *Store) CreateSchedule(ctx context.Context, sc engine.Schedule) error {
	sc.Version = 1
	tok := newToken()
	m, err := scheduleItem(sc, tok)
	if err != nil {
		return fmt.Errorf("create schedule %s/%s: %w", sc.Queue, sc.Name, err)
	}
	old, ok, err := s.putIf(ctx, m, when(itemMissing()))
	if err != nil {
		return fmt.Errorf("create schedule %s/%s: %w", sc.Queue, sc.Name, err)
	}
	if !ok && !hasToken(old, tok) { // a token: this write, sent again after it landed
		return fmt.Errorf("create schedule %s/%s: %w", sc.Queue, sc.Name, engine.ErrScheduleExists)
	}
	return nil
}

// GetSchedule reads a schedule strongly. ErrScheduleNotFound.
func (s *Store) GetSchedule(ctx context.Context, queue, name string) (engine.Schedule, error) {
	m, err := s.getItem(ctx, key(schedulePK(queue), scheduleSK(name)))
	if err != nil {
		return engine.Schedule{}, fmt.Errorf("schedule %s/%s: %w", queue, name, err)
	}
	if m == nil {
		return engine.Schedule{}, fmt.Errorf("schedule %s/%s: %w", queue, name, engine.ErrScheduleNotFound)
	}
	sc, err := decodeSchedule(m)
	if err != nil {
		return engine.Schedule{}, fmt.Errorf("schedule %s/%s: %w", queue, name, err)
	}
	return sc, nil
}

// ListSchedules queries the queue's schedule partition, strongly, in name
// order.
func (s *Store) ListSchedules(ctx context.Context, queue string) ([]engine.Schedule, error) {
	var out []engine.Schedule
	err := s.queryAll(ctx, partBeginsWith(schedulePK(queue), schedulePrefix), func(m map[string]types.AttributeValue) error {
		sc, err := decodeSchedule(m)
		if err != nil {
			return err
		}
		out = append(out, sc)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("schedules %s: %w", queue, err)
	}
	return out, nil
}

// PutSchedule replaces a schedule with one PutItem on condition that its
// version is still from. ErrConflict, or ErrScheduleNotFound when no item
// is there (read from the item DynamoDB returns with the failure).
func (s *Store) PutSchedule(ctx context.Context, sc engine.Schedule, from int64) (engine.Schedule, error) {
	sc.Version = from + 1
	tok := newToken()
	m, err := scheduleItem(sc, tok)
	if err != nil {
		return engine.Schedule{}, fmt.Errorf("put schedule %s/%s: %w", sc.Queue, sc.Name, err)
	}
	old, ok, err := s.putIf(ctx, m, when(expression.Name(attrScheduleV).Equal(expression.Value(num(from)))))
	if err != nil {
		return engine.Schedule{}, fmt.Errorf("put schedule %s/%s: %w", sc.Queue, sc.Name, err)
	}
	if !ok {
		switch {
		case hasToken(old, tok):
			return sc, nil // this write, sent again after it landed
		case old == nil:
			return engine.Schedule{}, fmt.Errorf("put schedule %s/%s: %w", sc.Queue, sc.Name, engine.ErrScheduleNotFound)
		}
		return engine.Schedule{}, fmt.Errorf("put schedule %s/%s: %w", sc.Queue, sc.Name, engine.ErrConflict)
	}
	return sc, nil
}

// DeleteSchedule deletes a schedule's item (and so its due entry).
func (s *Store) DeleteSchedule(ctx context.Context, queue, name string) error {
	if _, err := s.deleteItem(ctx, &dynamodb.DeleteItemInput{Key: key(schedulePK(queue), scheduleSK(name))}); err != nil {
		return fmt.Errorf("delete schedule %s/%s: %w", queue, name, err)
	}
	return nil
}

// scheduleEntry reads the due entry of a schedule item's key.
func scheduleEntry(pk, sk string) (queue, name string, ok bool) {
	if !strings.HasPrefix(pk, schedulePrefix) || !strings.HasPrefix(sk, schedulePrefix) {
		return "", "", false
	}
	return strings.TrimPrefix(pk, schedulePrefix), strings.TrimPrefix(sk, schedulePrefix), true
}
