package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// A queue's booking horizon (slot.Horizon) is an item of its own,
// W#<queue> / room: the bookings that hold a slot and the room's
// round-robin, as JSON (attrHorizon), with attrQueue, attrGen,
// attrVersion and attrWriteToken. It shares no partition with the
// queue's hot state item, and every write is a compare-and-set of its
// version. While jobs wait in the room it is in the due index
// (engine.HorizonDue), so the resume function looks at it.
const (
	skRoom      = "room"
	attrHorizon = "horizon"
)

func horizonPK(queue string) string { return "W#" + queue }

func horizonKey(queue string) map[string]types.AttributeValue {
	return key(horizonPK(queue), skRoom)
}

// GetHorizon reads queue's horizon with a strongly consistent GetItem;
// one with no item is returned at Version 0.
func (s *Store) GetHorizon(ctx context.Context, queue string) (slot.Horizon, error) {
	got, err := s.getItem(ctx, horizonKey(queue))
	if err != nil {
		return slot.Horizon{}, fmt.Errorf("get horizon %s: %w", queue, err)
	}
	if len(got) == 0 {
		return slot.Horizon{Queue: queue}, nil
	}
	it := &item{m: got}
	h := slot.Horizon{Queue: queue, Gen: it.int(attrGen), Version: it.int(attrVersion)}
	text := it.str(attrHorizon)
	if it.err == nil {
		it.err = json.Unmarshal([]byte(text), &h)
	}
	if it.err != nil {
		return slot.Horizon{}, fmt.Errorf("get horizon %s: %w", queue, it.err)
	}
	return h, nil
}

// PutHorizon writes the horizon item whole with one PutItem on condition
// that it is at version from (none for 0: a created horizon continues
// from laneSeed, so its versions never repeat) and of h's generation or
// an older one. A re-sent put that meets its own write token landed.
func (s *Store) PutHorizon(ctx context.Context, h slot.Horizon, from int64) (slot.Horizon, error) {
	next := from + 1
	if from == 0 {
		next = laneSeed(s.now()) + 1
	}
	text, err := json.Marshal(h)
	if err != nil {
		return slot.Horizon{}, fmt.Errorf("put horizon %s: %w", h.Queue, err)
	}
	tok := newToken()
	it := map[string]types.AttributeValue{
		attrPK: str(horizonPK(h.Queue)), attrSK: str(skRoom),
		attrQueue: str(h.Queue), attrGen: num(h.Gen),
		attrVersion: num(next), attrHorizon: str(string(text)), attrWriteToken: str(tok),
	}
	setDue(it, horizonPK(h.Queue), skRoom, engine.HorizonDue(h))
	old, ok, err := s.putIf(ctx, it, when(putFrom(from, h.Gen)))
	if err != nil {
		return slot.Horizon{}, fmt.Errorf("put horizon %s: %w", h.Queue, err)
	}
	switch {
	case ok, hasToken(old, tok):
	case laterGen((&item{m: old}).int(attrGen), h.Gen):
		return slot.Horizon{}, fmt.Errorf("put horizon %s of generation %d: %w", h.Queue, h.Gen, engine.ErrQueueNotFound)
	default:
		return slot.Horizon{}, fmt.Errorf("put horizon %s at version %d: %w", h.Queue, from, engine.ErrConflict)
	}
	h = h.Clone()
	h.Version = next
	return h, nil
}
