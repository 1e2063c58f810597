package dynamostore

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// The due index (engine.DueEntry) is IndexDue, a sparse global secondary
// index of keys only: an item that is due carries due_pk and due_sk, and
// every other item carries neither, so only what is due costs index
// writes, and a write that leaves them as they are costs none.
//
// An entry's due_pk is one of DueShards partitions, D#00 … D#15, chosen
// by a hash of the item's key, and due_sk its due time (ms): a partition
// of an index takes about 1,000 writes a second, so one hash value for
// every entry would be the stack's ceiling; sixteen make it about 16,000.
// ListDue queries the sixteen with due_sk <= before and merges them.
//
// A job a pause holds (engine.JobHeld) is in the same index under
// due_pk H#<queue>#<gen>, with due_sk its line order: ListHeld queries that
// one partition, so a release round reads its queue's held jobs in order
// and nothing else.
const (
	// IndexDue is the due index.
	IndexDue = "due"
	// DueShards is how many partitions the due index spreads its timed
	// entries over. Changing it strands the entries of the partitions
	// it drops: it is fixed for a table's life.
	DueShards = 16

	attrDuePK = "due_pk"
	attrDueSK = "due_sk"
	// attrRoundUntil keeps a release round due (engine.Cursor.Until) on
	// the resume lease item; the round's own time is its due_sk.
	attrRoundUntil = "round_until"
)

// dueShard is the timed partition of the item of key pk, sk.
func dueShard(pk, sk string) string {
	h := fnv.New32a()
	h.Write([]byte(pk))
	h.Write([]byte{0})
	h.Write([]byte(sk))
	return fmt.Sprintf("D#%02d", h.Sum32()%DueShards)
}

// heldPK is the partition of queue's jobs of generation gen a pause holds.
func heldPK(queue string, gen int64) string { return "H#" + queue + "#" + strconv.FormatInt(gen, 10) }

// roomPK is the partition of the jobs of queue's waiting room, of
// generation gen, priority p and key k (engine.JobInRoom), in ticket
// order: a booking from the room reads one key's head.
func roomPK(queue string, gen int64, p int, k string) string {
	return "R#" + queue + "#" + strconv.FormatInt(gen, 10) + "#" + strconv.Itoa(p) + "#" + k
}

// setDue sets m's due attributes for an entry due at at (none for zero).
func setDue(m map[string]types.AttributeValue, pk, sk string, at time.Time) {
	if at.IsZero() {
		return
	}
	m[attrDuePK] = str(dueShard(pk, sk))
	m[attrDueSK] = timeNum(at)
}

// dueUpdate adds to u what makes the item of key pk, sk due at at (zero:
// not due).
func dueUpdate(u expression.UpdateBuilder, pk, sk string, at time.Time) expression.UpdateBuilder {
	pkName, skName := expression.Name(attrDuePK), expression.Name(attrDueSK)
	if at.IsZero() {
		return u.Remove(pkName).Remove(skName)
	}
	return u.Set(pkName, expression.Value(str(dueShard(pk, sk)))).Set(skName, expression.Value(timeNum(at)))
}

// entryOf reads a due entry from an index item's keys: what it is follows
// from the item's own key.
func entryOf(m map[string]types.AttributeValue) (engine.DueEntry, bool, error) {
	it := &item{m: m}
	pk, sk, at := it.str(attrPK), it.str(attrSK), it.time(attrDueSK)
	if it.err != nil {
		return engine.DueEntry{}, false, it.err
	}
	d := engine.DueEntry{At: at}
	switch {
	case strings.HasPrefix(pk, "J#") && sk == skJob:
		q, id, ok := strings.Cut(strings.TrimPrefix(pk, "J#"), "#")
		if !ok {
			return d, false, nil
		}
		d.Kind, d.Queue, d.ID = engine.DueJob, q, id
	case strings.HasPrefix(pk, "Q#") && sk == skState:
		d.Kind, d.Queue = engine.DueLift, strings.TrimPrefix(pk, "Q#")
	case strings.HasPrefix(pk, "Q#") && sk == skResume:
		d.Kind, d.Queue = engine.DueRound, strings.TrimPrefix(pk, "Q#")
	case strings.HasPrefix(pk, "W#") && sk == skRoom:
		d.Kind, d.Queue = engine.DueRoom, strings.TrimPrefix(pk, "W#")
	case strings.HasPrefix(pk, "L#") && strings.HasPrefix(sk, "K#"):
		d.Kind, d.Queue, d.ID = engine.DueLane, strings.TrimPrefix(pk, "L#"), strings.TrimPrefix(sk, "K#")
	default:
		q, name, ok := scheduleEntry(pk, sk)
		if !ok {
			return d, false, nil
		}
		d.Kind, d.Queue, d.ID = engine.DueSchedule, q, name
	}
	return d, true, nil
}

// ListDue queries the DueShards partitions of IndexDue, each for its
// first limit entries due at or before before, at once, and merges them:
// the first limit of all, earliest first. The index is eventually
// consistent.
func (s *Store) ListDue(ctx context.Context, before time.Time, limit int) ([]engine.DueEntry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("list due: limit %d", limit)
	}
	parts := make([][]engine.DueEntry, DueShards)
	errs := make([]error, DueShards)
	var wg sync.WaitGroup
	for i := range DueShards {
		wg.Go(func() { parts[i], errs[i] = s.listShard(ctx, fmt.Sprintf("D#%02d", i), before, limit) })
	}
	wg.Wait()
	var all []engine.DueEntry
	for i := range DueShards {
		if errs[i] != nil {
			return nil, fmt.Errorf("list due: %w", errs[i])
		}
		all = append(all, parts[i]...)
	}
	slices.SortStableFunc(all, func(a, b engine.DueEntry) int { return a.At.Compare(b.At) })
	return all[:min(len(all), limit)], nil
}

// listShard reads up to limit entries of one partition of IndexDue due at
// or before before, in due order.
func (s *Store) listShard(ctx context.Context, shard string, before time.Time, limit int) ([]engine.DueEntry, error) {
	kc := duePart(shard).And(expression.Key(attrDueSK).LessThanEqual(expression.Value(timeNum(before))))
	var out []engine.DueEntry
	err := s.queryDue(ctx, kc, limit, func(m map[string]types.AttributeValue) (bool, error) {
		d, ok, err := entryOf(m)
		if ok {
			out = append(out, d)
		}
		return ok, err
	})
	return out, err
}

// duePart is the key condition of IndexDue's partition pk.
func duePart(pk string) expression.KeyConditionBuilder {
	return expression.Key(attrDuePK).Equal(expression.Value(str(pk)))
}

// queryDue queries IndexDue on key condition kc, page by page in due
// order, and hands each item to take until take has taken limit of them
// (it reports whether it took one): each page asks for those still
// missing.
func (s *Store) queryDue(ctx context.Context, kc expression.KeyConditionBuilder, limit int, take func(map[string]types.AttributeValue) (bool, error)) error {
	if limit <= 0 {
		return nil
	}
	in, err := queryOf(expression.NewBuilder().WithKeyCondition(kc))
	if err != nil {
		return err
	}
	in.IndexName = aws.String(IndexDue)
	taken := 0
	err = s.queryPages(ctx, in, func() int32 { return int32(limit - taken) }, func(page *dynamodb.QueryOutput) (bool, error) {
		for _, m := range page.Items {
			ok, err := take(m)
			if err != nil {
				return false, err
			}
			if ok {
				taken++
			}
		}
		return taken < limit, nil
	})
	if backfilling(err) {
		return fmt.Errorf("%s: %w: %w", IndexDue, engine.ErrIndexNotReady, err)
	}
	return err
}

// ListHeld queries queue's held partition of IndexDue for its first limit
// jobs in line order, then reads them (BatchGetItem, strongly): a job
// that is no longer held by then is left out.
func (s *Store) ListHeld(ctx context.Context, queue string, gen int64, limit int) ([]job.Job, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("list held %s: limit %d", queue, limit)
	}
	jobs, err := s.readPart(ctx, duePart(heldPK(queue, gen)), limit, func(j job.Job) bool { return engine.JobHeld(j) && j.Gen == gen })
	if err != nil {
		return nil, fmt.Errorf("list held %s: %w", queue, err)
	}
	slices.SortStableFunc(jobs, func(a, b job.Job) int {
		return cmp.Or(cmp.Compare(a.LineOrder(), b.LineOrder()), cmp.Compare(a.ID, b.ID))
	})
	return jobs, nil
}

// ListRoom queries the partition of IndexDue of one priority and key of
// r's queue's waiting room (roomPK) from ticket r.After on for its first
// r.Limit jobs, then reads them (BatchGetItem, strongly): a job that has
// left the room by then is left out.
func (s *Store) ListRoom(ctx context.Context, r engine.RoomRequest) ([]job.Job, error) {
	if r.Limit <= 0 {
		return nil, fmt.Errorf("list room %s: limit %d", r.Queue, r.Limit)
	}
	// The index may still list a job that left the room a moment ago:
	// its entry is read and dropped, and the query goes on past it, so
	// that fewer than r.Limit jobs answered means the part ended.
	var jobs []job.Job
	for after := r.After; len(jobs) < r.Limit; {
		kc := duePart(roomPK(r.Queue, r.Gen, slot.PriorityOf(r.Priority), r.Key)).
			And(expression.Key(attrDueSK).GreaterThan(expression.Value(num(after))))
		want := r.Limit - len(jobs)
		entries := 0
		got, err := s.readPart(ctx, kc, want, func(j job.Job) bool { return engine.JobInRoom(j) && j.Gen == r.Gen },
			func(m map[string]types.AttributeValue) {
				entries++
				after = max(after, (&item{m: m}).int(attrDueSK))
			})
		if err != nil {
			return nil, fmt.Errorf("list room %s: %w", r.Queue, err)
		}
		jobs = append(jobs, got...)
		if entries < want {
			break
		}
	}
	slices.SortStableFunc(jobs, func(a, b job.Job) int {
		return cmp.Or(cmp.Compare(a.Ticket, b.Ticket), cmp.Compare(a.ID, b.ID))
	})
	return jobs, nil
}

// readPart queries IndexDue by key condition kc for up to limit
// entries of jobs, reads the jobs strongly (BatchGetItem, 100 a call),
// and returns the unexpired ones that keep says are still what the
// index entry stood for; seen, if given, sees each entry the query read.
func (s *Store) readPart(ctx context.Context, kc expression.KeyConditionBuilder, limit int, keep func(job.Job) bool, seen ...func(map[string]types.AttributeValue)) ([]job.Job, error) {
	var keys []map[string]types.AttributeValue
	err := s.queryDue(ctx, kc, limit, func(m map[string]types.AttributeValue) (bool, error) {
		keys = append(keys, map[string]types.AttributeValue{attrPK: m[attrPK], attrSK: m[attrSK]})
		for _, f := range seen {
			f(m)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	byPK := map[string]map[string]types.AttributeValue{}
	for rest := keys; len(rest) > 0; {
		n := min(len(rest), 100)
		batch := rest[:n]
		rest = rest[n:]
		for len(batch) > 0 {
			out, err := s.batchGet(ctx, &dynamodb.BatchGetItemInput{
				RequestItems: map[string]types.KeysAndAttributes{s.table: {Keys: batch, ConsistentRead: aws.Bool(true)}},
			})
			if err != nil {
				return nil, err
			}
			for _, m := range out.Responses[s.table] {
				byPK[(&item{m: m}).str(attrPK)] = m
			}
			batch = out.UnprocessedKeys[s.table].Keys
			if len(batch) > 0 {
				if err := backoff(ctx, 2); err != nil {
					return nil, err
				}
			}
		}
	}
	now := s.now()
	var jobs []job.Job
	for _, k := range keys {
		m, ok := byPK[(&item{m: k}).str(attrPK)]
		if !ok {
			continue
		}
		j, err := decodeJob(m)
		if err != nil {
			return nil, err
		}
		if keep(j) && !j.Expired(now) {
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}
