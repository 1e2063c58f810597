package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/slot"
)

// A lane's waiters are kept in two parts, so that the lane item stays
// small however many wait: the first ones inline, in the item's waiting
// string, up to inlineBudget bytes, and the rest, its tail, one item
// each:
//
//	pk W#<queue>#<key>   sk W#<epoch>#<ticket>#<job id>   v, ttl
//
// (epoch and ticket as 16 hex digits, so the sort key orders a tail by
// ticket). GetLane returns the inline waiters followed by the tail, read
// with a Query of the range the lane item names. Every write of the lane
// that changes its tail is one transaction: the lane's own compare-and-set
// on v, the tail items it adds (Put) and those that left from its middle
// (Delete). Waiters that leave from the tail's front (a hand-off) cost no
// write of their own: the lane item's tail_after moves past them, and the
// Query starts after it, so they are dead where they stand until their
// ttl takes them. A lane that empties its tail drops the epoch, and so
// every item of it at once; a tail started again gets a new epoch (the
// version of the write that starts it: versions never repeat), so no
// dead item ever comes back.
//
// A lane written by an earlier release keeps every waiter inline and no
// tail: it is read as it is, and each of its writes moves up to
// maxTailOps waiters into the tail, until its item is back under the
// budget. The other way round, an earlier release cannot read a tail: a
// lane that has one begins its waiting string with tailMark, which an
// earlier release's decoding refuses, so while both run (during an
// update) it fails on such a lane, and its job comes back later, rather
// than write the lane back without its tail.
const (
	// tailMark begins the waiting string of a lane that has a tail.
	tailMark = "~"

	// attrTailEpoch is the epoch of the lane's tail items (absent: the
	// tail is empty); attrTailAfter the sort key of the last one that
	// left from the front (absent: none did), which the live ones follow.
	attrTailEpoch = "tail"
	attrTailAfter = "tail_after"
	// attrTailDels counts the writes that deleted some of the tail's
	// items (laneWithTail says why).
	attrTailDels = "tail_dels"

	// inlineBudget is the most bytes of waiters a lane item keeps inline
	// (its waiting string) when it has a tail: three waiters with ids of
	// 128 characters, about twelve with UUIDs.
	inlineBudget = 512
	// maxTailOps bounds the tail items one write adds or deletes: with
	// the lane item, one transaction of at most 51 actions (DynamoDB
	// takes 100).
	maxTailOps = 50
)

// tail is a lane's stored tail: its epoch (0: none), the sort key its
// live items follow, and its waiters, in sort key order.
type tail struct {
	epoch int64
	after string
	dels  int64
	ws    []slot.Waiter
}

func tailPK(queue, key string) string { return "W#" + queue + "#" + key }

func epochPrefix(epoch int64) string { return fmt.Sprintf("W#%016x#", epoch) }

// waiterSK is w's sort key in the tail of epoch. Only a waiter with a
// positive ticket and an id that can be stored has one (tailable).
func waiterSK(epoch int64, w slot.Waiter) string {
	return epochPrefix(epoch) + fmt.Sprintf("%016x#", w.Ticket) + w.JobID
}

func tailable(w slot.Waiter) bool {
	return w.Ticket > 0 && w.JobID != "" && !strings.ContainsRune(w.JobID, ',')
}

// tailHead is what a lane item says of its tail.
type tailHead struct {
	epoch int64
	after string
	// dels counts the writes that deleted some of its items.
	dels int64
}

// tailRef reads the tail's epoch, front and deletions from a lane item.
func tailRef(m map[string]types.AttributeValue) (tailHead, error) {
	it := item{m: m}
	h := tailHead{epoch: it.int(attrTailEpoch), after: it.str(attrTailAfter), dels: it.int(attrTailDels)}
	if it.err != nil {
		return tailHead{}, fmt.Errorf("decode lane: %w", it.err)
	}
	return h, nil
}

// waiterFromSK reads a waiter back from its sort key.
func waiterFromSK(sk string) (slot.Waiter, error) {
	f := strings.SplitN(sk, "#", 4)
	if len(f) != 4 || f[0] != "W" {
		return slot.Waiter{}, fmt.Errorf("bad waiter item %q", sk)
	}
	t, err := strconv.ParseInt(f[2], 16, 64)
	if err != nil || f[3] == "" {
		return slot.Waiter{}, fmt.Errorf("bad waiter item %q", sk)
	}
	return slot.Waiter{Ticket: t, JobID: f[3]}, nil
}

// putWaiter is a tail item as read: its waiter, and the version of the
// lane write that put it.
type putWaiter struct {
	w slot.Waiter
	v int64
}

// queryTail reads the items of the tail of queue's lane of key after
// after: strongly consistent, page by page, in ticket order.
func (s *Store) queryTail(ctx context.Context, queue, key string, epoch int64, after string) ([]putWaiter, error) {
	prefix := epochPrefix(epoch)
	lo := prefix
	if after != "" {
		lo = after
	}
	hi := strings.TrimSuffix(prefix, "#") + "$" // '$' follows '#': past every sort key of the epoch
	kc := part(tailPK(queue, key)).And(expression.Key(attrSK).Between(expression.Value(str(lo)), expression.Value(str(hi))))
	var out []putWaiter
	err := s.queryAll(ctx, kc, func(m map[string]types.AttributeValue) error {
		it := item{m: m}
		sk, v := it.str(attrSK), it.int(attrVersion)
		if it.err != nil {
			return fmt.Errorf("decode lane waiter: %w", it.err)
		}
		if sk == after {
			return nil // BETWEEN includes it; it left
		}
		w, err := waiterFromSK(sk)
		if err != nil {
			return err
		}
		out = append(out, putWaiter{w: w, v: v})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// tailTries bounds the reads of a lane whose tail keeps changing while it
// is read.
const tailTries = 8

// laneWithTail completes m, a lane item just read, with its tail: as
// known for its version (tailCache), or read with a Query, after which
// the lane item is read again. Tail items are put and deleted only by
// writes that also write the lane item, but the Query is no snapshot: it
// sees each item as it stands when it gets to it. If, between the two
// reads of the lane item, the tail kept its epoch and lost no item
// (tail_dels counts the writes that delete some; items that left from
// the front only fall behind tail_after, where they stay), every item of
// the tail at m's version was there all along, and the Query saw it;
// what else it saw was put since, by writes of later versions, which
// each item records. So the items of m's version or earlier are m's
// tail, and m with them is the answer, a lane as it stood. A deletion
// meanwhile (rare: a job taken from the middle of the tail) makes the
// read start over from the second read.
func (s *Store) laneWithTail(ctx context.Context, queue, key string, m map[string]types.AttributeValue) (slot.Lane, tail, error) {
	for range tailTries {
		l, err := decodeLane(m)
		if err != nil {
			return slot.Lane{}, tail{}, err
		}
		ref, err := tailRef(m)
		if err != nil {
			return slot.Lane{}, tail{}, err
		}
		if ref.epoch == 0 {
			t := tail{}
			s.tails.put(queue, key, l.Version, t)
			return l, t, nil
		}
		if t, ok := s.tails.get(queue, key, l.Version); ok {
			l.Waiting = append(l.Waiting, t.ws...)
			return l, t, nil
		}
		read, err := s.queryTail(ctx, queue, key, ref.epoch, ref.after)
		if err != nil {
			return slot.Lane{}, tail{}, err
		}
		again, err := s.getItem(ctx, laneKey(queue, key))
		if err != nil {
			return slot.Lane{}, tail{}, err
		}
		if again == nil {
			return slot.Lane{Queue: queue, Key: key}, tail{}, nil
		}
		now, err := tailRef(again)
		if err != nil {
			return slot.Lane{}, tail{}, err
		}
		if now.epoch == ref.epoch && now.dels == ref.dels {
			var ws []slot.Waiter
			for _, p := range read {
				if p.v <= l.Version {
					ws = append(ws, p.w)
				}
			}
			t := tail{epoch: ref.epoch, after: ref.after, dels: ref.dels, ws: ws}
			s.tails.put(queue, key, l.Version, t)
			l.Waiting = append(l.Waiting, ws...)
			return l, t, nil
		}
		m = again
	}
	return slot.Lane{}, tail{}, fmt.Errorf("its waiters kept changing while read")
}

// storedTail is the tail of queue's lane of key at version from: as
// known (tailCache), or read. ErrConflict-worthy (ok false) when the lane
// is no longer at from.
func (s *Store) storedTail(ctx context.Context, queue, key string, from int64) (_ tail, ok bool, _ error) {
	if from == 0 {
		return tail{}, true, nil
	}
	if t, ok := s.tails.get(queue, key, from); ok {
		return t, true, nil
	}
	m, err := s.getItem(ctx, laneKey(queue, key))
	if err != nil || m == nil {
		return tail{}, false, err
	}
	l, t, err := s.laneWithTail(ctx, queue, key, m)
	if err != nil || l.Version != from {
		return tail{}, false, err
	}
	return t, true, nil
}

// tailPlan is how a write lays a lane's waiters out: the first inline
// inline, the rest in next, and the tail items it adds and deletes.
type tailPlan struct {
	inline     []slot.Waiter
	next       tail
	puts, dels []slot.Waiter
}

// planTail lays the waiters ws of a lane out for its write at version v,
// given its stored tail old. The tail must be the end of ws in sort key
// order (so that the read gives ws back), after old's front (so that no
// dead item comes back), and change by at most maxTailOps items. Of those
// layouts, it takes one whose inline part fits inlineBudget at the
// fewest tail writes (then the most inline: the tail empties sooner),
// or, if none fits, the one with the least inline. Keeping all inline
// and dropping the tail always qualifies: it writes no tail item.
func planTail(ws []slot.Waiter, old tail, v int64) tailPlan {
	n := len(ws)
	epoch := old.epoch
	if epoch == 0 {
		epoch = v
	}
	sks := make([]string, n)
	for i, w := range ws {
		if tailable(w) {
			sks[i] = waiterSK(epoch, w)
		}
	}
	oldSKs := make([]string, len(old.ws))
	for i, w := range old.ws {
		oldSKs[i] = waiterSK(epoch, w)
	}
	inOld := make(map[slot.Waiter]bool, len(old.ws))
	for _, w := range old.ws {
		inOld[w] = true
	}
	// bytes[i]: the inline string of ws[:i].
	bytes := make([]int, n+1)
	for i, w := range ws {
		bytes[i+1] = bytes[i] + len(strconv.FormatInt(w.Ticket, 10)) + 1 + len(w.JobID)
		if i > 0 {
			bytes[i+1]++
		}
	}
	best, bestCost, fits := n, 0, bytes[n] <= inlineBudget
	puts, kept := 0, 0 // of ws[i:]: not in old, in old
	for i := n - 1; i >= 0; i-- {
		if sks[i] == "" || i < n-1 && sks[i] >= sks[i+1] || old.epoch != 0 && sks[i] <= old.after {
			break // the tail cannot start at i, nor before it
		}
		if inOld[ws[i]] {
			kept++
		} else {
			puts++
		}
		// old items from ws[i]'s on that ws[i:] no longer has: deleted.
		from, _ := slices.BinarySearch(oldSKs, sks[i])
		cost := puts + (len(oldSKs) - from - kept)
		if cost > maxTailOps {
			continue
		}
		switch ok := bytes[i] <= inlineBudget; {
		case ok && (!fits || cost < bestCost):
			best, bestCost, fits = i, cost, true
		case !ok && !fits:
			best, bestCost = i, cost
		}
	}
	p := tailPlan{inline: ws[:best]}
	if best == n {
		return p // no tail: the epoch, and every item of it, is dropped
	}
	p.next = tail{epoch: epoch, after: old.after, dels: old.dels, ws: ws[best:]}
	if old.epoch == 0 {
		p.next.after, p.next.dels = "", 0
	}
	inNew := make(map[slot.Waiter]bool, n-best)
	for _, w := range ws[best:] {
		inNew[w] = true
		if !inOld[w] {
			p.puts = append(p.puts, w)
		}
	}
	for i, w := range old.ws {
		switch {
		case inNew[w]:
		case oldSKs[i] < sks[best]:
			p.next.after = max(p.next.after, oldSKs[i]) // left from the front
		default:
			p.dels = append(p.dels, w)
		}
	}
	if len(p.dels) > 0 {
		p.next.dels++
	}
	return p
}

// tailWrites are the transaction's actions on the tail items of plan p.
// Each item put records v, the version of the lane write that puts it.
func (s *Store) tailWrites(queue, laneKey string, p tailPlan, v int64, ttl types.AttributeValue) []types.TransactWriteItem {
	pk := tailPK(queue, laneKey)
	var out []types.TransactWriteItem
	for _, w := range p.puts {
		out = append(out, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: map[string]types.AttributeValue{
			attrPK: str(pk), attrSK: str(waiterSK(p.next.epoch, w)), attrVersion: num(v), attrTTL: ttl}}})
	}
	for _, w := range p.dels {
		out = append(out, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.table, Key: key(pk, waiterSK(p.next.epoch, w))}})
	}
	return out
}

// tailCache keeps, by lane, the tail of the last version of it this
// Store read or wrote. A lane's versions never repeat (laneSeed), so a
// tail known at a version is that version's for good: PutLane, whose
// caller read the lane at from, knows the tail it changes without reading
// it again, and a lane read again at a version this Store wrote costs no
// Query.
type tailCache struct {
	mu sync.Mutex
	m  map[string]tailAt
}

type tailAt struct {
	version int64
	t       tail
}

// maxCachedTails bounds the lanes the cache keeps; when full, it starts
// over.
const maxCachedTails = 4096

func (c *tailCache) get(queue, key string, version int64) (tail, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.m[queue+"#"+key]
	if !ok || at.version != version {
		return tail{}, false
	}
	return at.t, true
}

func (c *tailCache) put(queue, key string, version int64, t tail) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedTails {
		c.m = make(map[string]tailAt)
	}
	t.ws = slices.Clip(t.ws)
	c.m[queue+"#"+key] = tailAt{version: version, t: t}
}
