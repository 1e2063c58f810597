package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// dueID names the record a due entry stands for.
type dueID struct {
	kind  engine.DueKind
	queue string
	id    string
}

// dueBucket is how coarsely the index groups its entries: ListDue walks
// buckets in time order and sorts one bucket at a time, so a read costs
// what it returns, not the size of the index.
const dueBucket = time.Minute

// dueIndex is the embedded due index: entries by time bucket, and each
// record's entry by its id. The caller holds the store's lock.
type dueIndex struct {
	at      map[dueID]time.Time
	buckets map[int64]map[dueID]bool
	keys    []int64 // buckets' keys, ascending
}

func newDueIndex() *dueIndex {
	return &dueIndex{at: map[dueID]time.Time{}, buckets: map[int64]map[dueID]bool{}}
}

func bucketOf(t time.Time) int64 { return t.UnixNano() / int64(dueBucket) }

// set makes id's entry due at at, or removes it for a zero at.
func (x *dueIndex) set(id dueID, at time.Time) {
	if old, ok := x.at[id]; ok {
		if old.Equal(at) {
			return
		}
		b := bucketOf(old)
		delete(x.buckets[b], id)
		if len(x.buckets[b]) == 0 {
			delete(x.buckets, b)
			i, _ := slices.BinarySearch(x.keys, b)
			x.keys = slices.Delete(x.keys, i, i+1)
		}
		delete(x.at, id)
	}
	if at.IsZero() {
		return
	}
	x.at[id] = at
	b := bucketOf(at)
	if x.buckets[b] == nil {
		x.buckets[b] = map[dueID]bool{}
		i, _ := slices.BinarySearch(x.keys, b)
		x.keys = slices.Insert(x.keys, i, b)
	}
	x.buckets[b][id] = true
}

// list returns up to limit entries due at or before before, earliest
// first.
func (x *dueIndex) list(before time.Time, limit int) []engine.DueEntry {
	var out []engine.DueEntry
	last := bucketOf(before)
	for _, b := range x.keys {
		if b > last || len(out) >= limit {
			break
		}
		var part []engine.DueEntry
		for id := range x.buckets[b] {
			if at := x.at[id]; !at.After(before) {
				part = append(part, engine.DueEntry{At: at, Kind: id.kind, Queue: id.queue, ID: id.id})
			}
		}
		slices.SortFunc(part, func(a, b engine.DueEntry) int {
			return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
		})
		out = append(out, part...)
	}
	return out[:min(len(out), limit)]
}

func jobDueID(j job.Job) dueID          { return dueID{engine.DueJob, j.Queue, j.ID} }
func laneDueID(queue, key string) dueID { return dueID{engine.DueLane, queue, key} }

// ListDue returns up to limit due entries at or before before, earliest
// first.
func (s *Store) ListDue(_ context.Context, before time.Time, limit int) ([]engine.DueEntry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("list due: limit %d", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.due.list(before, limit), nil
}

// ListHeld returns up to limit unexpired jobs of queue and gen held by a
// pause, in line order (then id).
func (s *Store) ListHeld(_ context.Context, queue string, gen int64, limit int) ([]job.Job, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("list held %s: limit %d", queue, limit)
	}
	now := s.now()
	s.mu.Lock()
	var out []job.Job
	for _, j := range s.jobs[queue] {
		if j.Gen == gen && engine.JobHeld(j) && !j.Expired(now) {
			out = append(out, j)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b job.Job) int {
		return cmp.Or(cmp.Compare(a.LineOrder(), b.LineOrder()), cmp.Compare(a.ID, b.ID))
	})
	out = out[:min(len(out), limit)]
	for i := range out {
		out[i] = copyJob(out[i])
	}
	return out, nil
}
