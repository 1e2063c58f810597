package dynamostore

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
)

// A debounce key's item (engine.DebounceStore): pk D#<queue>, sk
// K#<debounce key>, apart from the queue's hot state item. Each step of a
// debounce is one conditional write on it (engine/debounce.go), so a join
// and the close that ends the debounce cannot both win.
const (
	attrDebounceKey = "debounce_key" // also on a job item, while it waits for its debounce
	attrClosed      = "closed"
	// And attrUntil, a lane's word: when the debounce ends.
)

var _ engine.DebounceStore = (*Store)(nil)

func debounceKey(queue, key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str("D#" + queue), attrSK: str("K#" + key)}
}

// payloadValue is a payload's attribute: a string when it is UTF-8 (JSON
// always is), else binary.
func payloadValue(p []byte) types.AttributeValue {
	if utf8.Valid(p) {
		return str(string(p))
	}
	return &types.AttributeValueMemberB{Value: p}
}

func debounceItem(d engine.Debounce) map[string]types.AttributeValue {
	m := debounceKey(d.Queue, d.Key)
	m[attrQueue], m[attrDebounceKey], m[attrJobID] = str(d.Queue), str(d.Key), str(d.JobID)
	m[attrGen], m[attrUntil], m[attrClosed] = num(d.Gen), timeNum(d.Until), boolean(d.Closed)
	if len(d.Payload) > 0 {
		m[attrPayload] = payloadValue(d.Payload)
	}
	return m
}

// decodeDebounce reads a debounce item; nil is no item (an empty JobID).
func decodeDebounce(m map[string]types.AttributeValue) (engine.Debounce, error) {
	if m == nil {
		return engine.Debounce{}, nil
	}
	it := item{m: m}
	d := engine.Debounce{
		Queue: it.str(attrQueue), Gen: it.int(attrGen), Key: it.str(attrDebounceKey), JobID: it.str(attrJobID),
		Until: it.time(attrUntil), Payload: it.bytes(attrPayload), Closed: it.bool(attrClosed),
	}
	if it.err != nil {
		return engine.Debounce{}, fmt.Errorf("decode debounce: %w", it.err)
	}
	return d, nil
}

// GetDebounce reads the item of queue and key, strongly.
func (s *Store) GetDebounce(ctx context.Context, queue, key string) (engine.Debounce, error) {
	m, err := s.getItem(ctx, debounceKey(queue, key))
	if err != nil {
		return engine.Debounce{}, fmt.Errorf("get debounce %s: %w", key, err)
	}
	return decodeDebounce(m)
}

// OpenDebounce puts d with one conditional PutItem: no item is stored
// (an empty prev.JobID), or the stored one is still prev (job, generation,
// until and closed). A put sent again after it landed meets its own item,
// and lands. ErrConflict.
func (s *Store) OpenDebounce(ctx context.Context, d, prev engine.Debounce) error {
	cond := expression.Name(attrPK).AttributeNotExists()
	if prev.JobID != "" {
		cond = all(expression.Name(attrJobID).Equal(expression.Value(str(prev.JobID))),
			expression.Name(attrGen).Equal(expression.Value(num(prev.Gen))),
			expression.Name(attrUntil).Equal(expression.Value(timeNum(prev.Until))),
			expression.Name(attrClosed).Equal(expression.Value(boolean(prev.Closed))))
	}
	old, ok, err := s.putIf(ctx, debounceItem(d), when(cond))
	if err != nil {
		return fmt.Errorf("open debounce %s: %w", d.Key, err)
	}
	if !ok {
		if was, err := decodeDebounce(old); err == nil && was.Same(d) {
			return nil // our own put, sent again
		}
		return fmt.Errorf("open debounce %s: %w", d.Key, engine.ErrConflict)
	}
	return nil
}

// JoinDebounce moves the item on to d.Until and d.Payload with one
// conditional UpdateItem: of generation d.Gen, not closed, until after
// now. A join sent again after it landed lands again, the same.
// ErrConflict.
func (s *Store) JoinDebounce(ctx context.Context, d engine.Debounce, now time.Time) (engine.Debounce, error) {
	upd := expression.Set(expression.Name(attrUntil), expression.Value(timeNum(d.Until)))
	upd = setOrRemove(upd, attrPayload, len(d.Payload) > 0, payloadValue(d.Payload))
	cond := all(expression.Name(attrGen).Equal(expression.Value(num(d.Gen))),
		expression.Name(attrClosed).Equal(expression.Value(boolean(false))),
		expression.Name(attrUntil).GreaterThan(expression.Value(timeNum(now))))
	m, ok, err := s.updateIf(ctx, debounceKey(d.Queue, d.Key), updateWhen(upd, cond))
	if err != nil {
		return engine.Debounce{}, fmt.Errorf("join debounce %s: %w", d.Key, err)
	}
	if !ok {
		return engine.Debounce{}, fmt.Errorf("join debounce %s: %w", d.Key, engine.ErrConflict)
	}
	return decodeDebounce(m)
}

// CloseDebounce closes jobID's item with one conditional UpdateItem:
// not closed, until not after now. Refused, an item jobID closed already
// (a close sent again, or a delivery after a crash) is returned as it
// is. ErrConflict.
func (s *Store) CloseDebounce(ctx context.Context, queue, key, jobID string, now time.Time) (engine.Debounce, error) {
	cond := all(expression.Name(attrJobID).Equal(expression.Value(str(jobID))),
		expression.Name(attrClosed).Equal(expression.Value(boolean(false))),
		expression.Name(attrUntil).LessThanEqual(expression.Value(timeNum(now))))
	upd := expression.Set(expression.Name(attrClosed), expression.Value(boolean(true)))
	m, ok, err := s.updateIf(ctx, debounceKey(queue, key), updateWhen(upd, cond))
	if err != nil {
		return engine.Debounce{}, fmt.Errorf("close debounce %s: %w", key, err)
	}
	d, derr := decodeDebounce(m)
	if derr != nil {
		return engine.Debounce{}, derr
	}
	if !ok && (d.JobID != jobID || !d.Closed) {
		return engine.Debounce{}, fmt.Errorf("close debounce %s: %w", key, engine.ErrConflict)
	}
	return d, nil
}

// DeleteDebounce deletes jobID's closed item with one conditional
// DeleteItem; another's, or an open one, stays.
func (s *Store) DeleteDebounce(ctx context.Context, queue, key, jobID string) error {
	cond := all(expression.Name(attrJobID).Equal(expression.Value(str(jobID))),
		expression.Name(attrClosed).Equal(expression.Value(boolean(true))))
	if _, _, err := s.deleteIf(ctx, debounceKey(queue, key), when(cond)); err != nil {
		return fmt.Errorf("delete debounce %s: %w", key, err)
	}
	return nil
}
