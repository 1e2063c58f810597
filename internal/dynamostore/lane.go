package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

// GetLane reads queue's lane of key with a strongly consistent GetItem,
// and the waiters of its tail, if it has one (laneWithTail); a lane with
// no item is returned at Version 0.
func (s *Store) GetLane(ctx context.Context, queue, key string) (slot.Lane, error) {
	m, err := s.getItem(ctx, laneKey(queue, key))
	if err != nil {
		return slot.Lane{}, fmt.Errorf("get lane %s/%s: %w", queue, key, err)
	}
	if len(m) == 0 {
		return slot.Lane{Queue: queue, Key: key}, nil
	}
	l, _, err := s.laneWithTail(ctx, queue, key, m)
	if err != nil {
		return slot.Lane{}, fmt.Errorf("get lane %s/%s: %w", queue, key, err)
	}
	return l, nil
}

// ListLanes queries the queue's lane partition key (L#<queue>) for the
// sort keys that begin with K#, strongly consistent, page by page: every
// lane, in key order, each with the waiters of its tail (laneWithTail).
func (s *Store) ListLanes(ctx context.Context, queue string) ([]slot.Lane, error) {
	var out []slot.Lane
	err := s.queryAll(ctx, partBeginsWith(lanePK(queue), skLanePrefix), func(m map[string]types.AttributeValue) error {
		l, err := decodeLane(m)
		if err != nil {
			return err
		}
		if ref, _ := tailRef(m); ref.epoch != 0 {
			if l, _, err = s.laneWithTail(ctx, queue, l.Key, m); err != nil {
				return err
			}
		}
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list lanes %s: %w", queue, err)
	}
	// DynamoDB orders by the sort key's bytes, as Go compares strings;
	// the sort only guards that.
	slices.SortStableFunc(out, func(a, b slot.Lane) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
