package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// A queue's booking horizon (slot.Horizon) is a head item of its own,
// W#<queue> / room: the room's counts and round-robin as JSON
// (attrHorizon, or attrRoomHead while pages hold its bookings), with
// attrQueue, attrGen, attrVersion and attrWriteToken, and its bookings,
// inline or in page items of the same partition (room_pages.go). It
// shares no partition with the queue's hot state item, and every write
// is a compare-and-set of the head's version. While jobs wait in the
// room the head is in the due index (engine.HorizonDue), so the resume
// function looks at it. A horizon written before pages is a head with
// its bookings inline, and reads as one.
const (
	skRoom      = "room"
	attrHorizon = "horizon"
)

func horizonPK(queue string) string { return "W#" + queue }

func horizonKey(queue string) map[string]types.AttributeValue {
	return key(horizonPK(queue), skRoom)
}

// errTorn is a read of a horizon's pages that a write changed meanwhile.
var errTorn = errors.New("the horizon changed while its pages were read")

// GetHorizon reads queue's horizon with a strongly consistent GetItem of
// its head; one with no item is returned at Version 0. A head whose
// bookings lie in pages is read with them (a Query of its partition)
// unless the store read or wrote it at that version last (roomCache),
// and its head again after: a version that moved meanwhile reads again.
func (s *Store) GetHorizon(ctx context.Context, queue string) (slot.Horizon, error) {
	v, err := s.readRoom(ctx, queue)
	if err != nil {
		return slot.Horizon{}, fmt.Errorf("get horizon %s: %w", queue, err)
	}
	return v.h.Clone(), nil
}

func (s *Store) readRoom(ctx context.Context, queue string) (roomView, error) {
	for try := 0; ; try++ {
		v, err := s.readRoomOnce(ctx, queue)
		if !errors.Is(err, errTorn) || try >= maxTornReads {
			return v, err
		}
	}
}

func (s *Store) readRoomOnce(ctx context.Context, queue string) (roomView, error) {
	got, err := s.getItem(ctx, horizonKey(queue))
	if err != nil || len(got) == 0 {
		return roomView{h: slot.Horizon{Queue: queue}}, err
	}
	v, n, err := decodeHead(queue, got)
	if err != nil {
		return roomView{}, err
	}
	if n == 0 {
		s.rooms.put(queue, v)
		return v, nil
	}
	if c, ok := s.rooms.get(queue, v.h.Version); ok {
		return c, nil
	}
	v.pages = map[int64]bookings{}
	err = s.queryAll(ctx, partBeginsWith(horizonPK(queue), skPagePrefix), func(m map[string]types.AttributeValue) error {
		n, b, err := decodePage(m)
		v.pages[n] = b
		return err
	})
	if err != nil {
		return roomView{}, err
	}
	again, err := s.getItem(ctx, horizonKey(queue))
	if err != nil {
		return roomView{}, err
	}
	if (&item{m: again}).int(attrVersion) != v.h.Version || int64(len(v.pages)) != n {
		return roomView{}, errTorn
	}
	for _, b := range v.pages {
		maps.Copy(v.h.Booked, b)
	}
	s.rooms.put(queue, v)
	return v, nil
}

// decodeHead reads a horizon's head: the horizon with the bookings it
// holds inline, and how many pages hold the others.
func decodeHead(queue string, m map[string]types.AttributeValue) (roomView, int64, error) {
	it := &item{m: m}
	h := slot.Horizon{Queue: queue, Gen: it.int(attrGen), Version: it.int(attrVersion)}
	n := it.int(attrRoomPages)
	text := it.str(attrHorizon)
	if n > 0 {
		text = it.str(attrRoomHead)
	}
	if it.err == nil {
		it.err = json.Unmarshal([]byte(text), &h)
	}
	if it.err != nil {
		return roomView{}, 0, it.err
	}
	v := roomView{h: h, inline: h.Booked}
	v.h.Booked = maps.Clone(h.Booked)
	if v.h.Booked == nil {
		v.h.Booked = bookings{}
	}
	return v, n, nil
}

// PutHorizon writes the horizon on condition that its head is at version
// from (none for 0: a created horizon continues from laneSeed, so its
// versions never repeat) and of h's generation or an older one: one
// PutItem of the head while no page changes, else one transaction of the
// head and the pages that change (room_pages.go: chain, for more than a
// transaction holds). A re-sent write that meets its own write token
// landed.
func (s *Store) PutHorizon(ctx context.Context, h slot.Horizon, from int64) (slot.Horizon, error) {
	x, err := s.roomAt(ctx, h.Queue, from)
	switch {
	case err != nil:
		return slot.Horizon{}, fmt.Errorf("put horizon %s: %w", h.Queue, err)
	case x.h.Version != from && laterGen(x.h.Gen, h.Gen):
		return slot.Horizon{}, fmt.Errorf("put horizon %s of generation %d: %w", h.Queue, h.Gen, engine.ErrQueueNotFound)
	case x.h.Version != from:
		return slot.Horizon{}, fmt.Errorf("put horizon %s at version %d: %w", h.Queue, from, engine.ErrConflict)
	}
	at, prev := from, x
	for _, z := range chain(x, viewOf(h, len(x.pages) > 0)) {
		if at, err = s.writeRoom(ctx, prev, z, at, h.Gen); err != nil {
			return slot.Horizon{}, fmt.Errorf("put horizon %s: %w", h.Queue, err)
		}
		z.h.Version = at
		s.rooms.put(h.Queue, z)
		prev = z
	}
	h = h.Clone()
	h.Version = at
	return h, nil
}

// roomAt is queue's horizon as stored, when the store has it at version
// from; else read.
func (s *Store) roomAt(ctx context.Context, queue string, from int64) (roomView, error) {
	if from == 0 {
		return roomView{h: slot.Horizon{Queue: queue}}, nil
	}
	if v, ok := s.rooms.get(queue, from); ok {
		return v, nil
	}
	return s.readRoom(ctx, queue)
}

// writeRoom writes z, the horizon as stored after one write, over prev,
// stored at version from, and returns its version: one PutItem of the
// head, or one transaction of the head and the pages that change.
func (s *Store) writeRoom(ctx context.Context, prev, z roomView, from, gen int64) (int64, error) {
	next := from + 1
	if from == 0 {
		next = laneSeed(s.now()) + 1
	}
	head := z.h
	head.Booked = z.inline
	text, err := json.Marshal(head)
	if err != nil {
		return 0, err
	}
	tok := newToken()
	it := map[string]types.AttributeValue{
		attrPK: str(horizonPK(z.h.Queue)), attrSK: str(skRoom),
		attrQueue: str(z.h.Queue), attrGen: num(z.h.Gen),
		attrVersion: num(next), attrWriteToken: str(tok),
	}
	if len(z.pages) == 0 {
		it[attrHorizon] = str(string(text))
	} else {
		it[attrRoomHead], it[attrRoomPages] = str(string(text)), num(int64(len(z.pages)))
	}
	setDue(it, horizonPK(z.h.Queue), skRoom, engine.HorizonDue(z.h))
	pages, err := s.pageWrites(z.h.Queue, prev.pages, z.pages)
	if err != nil {
		return 0, err
	}
	old, ok, err := s.putRoom(ctx, it, when(putFrom(from, gen)), pages)
	switch {
	case err != nil:
		return 0, err
	case ok, hasToken(old, tok):
		return next, nil
	case laterGen((&item{m: old}).int(attrGen), gen):
		return 0, fmt.Errorf("of generation %d: %w", gen, engine.ErrQueueNotFound)
	}
	return 0, fmt.Errorf("at version %d: %w", from, engine.ErrConflict)
}

// putRoom puts head on condition x, with pages in one transaction when
// there are any; a refused condition answers the head as it stood.
func (s *Store) putRoom(ctx context.Context, head map[string]types.AttributeValue, x exprs, pages []types.TransactWriteItem) (old map[string]types.AttributeValue, ok bool, err error) {
	if len(pages) == 0 {
		return s.putIf(ctx, head, x)
	}
	if x.err != nil {
		return nil, false, x.err
	}
	put := &types.Put{TableName: &s.table, Item: head}
	put.ConditionExpression, put.ExpressionAttributeNames, put.ExpressionAttributeValues, put.ReturnValuesOnConditionCheckFailure = x.condition()
	err = s.transact(ctx, append([]types.TransactWriteItem{{Put: put}}, pages...))
	if reasons, cancelled := cancelReasons(err); cancelled {
		if len(reasons) > 0 && code(reasons[0]) == reasonConditional {
			old, err := s.orRead(ctx, horizonKey((&item{m: head}).str(attrQueue)), reasons[0].Item)
			return old, false, err
		}
		return nil, false, txError(err, reasons)
	}
	return nil, err == nil, err
}
