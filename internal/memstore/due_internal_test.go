package memstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
)

// The embedded due index against a plain map, over random sets, moves and
// removals: list answers what a full scan and sort of the map would, for
// any bound and limit, and no empty bucket is kept.
func TestDueIndexModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 16))
	x := newDueIndex()
	model := map[dueID]time.Time{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for step := range 20000 {
		id := dueID{engine.DueJob, fmt.Sprintf("q%d", r.IntN(5)), fmt.Sprintf("j%d", r.IntN(200))}
		at := time.Time{}
		if r.IntN(3) > 0 {
			at = t0.Add(time.Duration(r.Int64N(int64(3 * time.Hour))))
		}
		x.set(id, at)
		if at.IsZero() {
			delete(model, id)
		} else {
			model[id] = at
		}
		if step%500 != 0 {
			continue
		}
		before := t0.Add(time.Duration(r.Int64N(int64(4 * time.Hour))))
		limit := 1 + r.IntN(300)
		var want []engine.DueEntry
		for id, at := range model {
			if !at.After(before) {
				want = append(want, engine.DueEntry{At: at, Kind: id.kind, Queue: id.queue, ID: id.id})
			}
		}
		slices.SortFunc(want, func(a, b engine.DueEntry) int {
			if c := a.At.Compare(b.At); c != 0 {
				return c
			}
			if a.Queue != b.Queue {
				return cmpString(a.Queue, b.Queue)
			}
			return cmpString(a.ID, b.ID)
		})
		want = want[:min(len(want), limit)]
		if got := x.list(before, limit); !slices.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Fatalf("step %d: list(%v, %d): %d entries, want %d; they differ from entry %d on", step, before, limit, len(got), len(want), i)
		}
		if len(x.at) != len(model) {
			t.Fatalf("step %d: %d entries indexed, want %d", step, len(x.at), len(model))
		}
		for _, b := range x.keys {
			if len(x.buckets[b]) == 0 {
				t.Fatalf("step %d: bucket %d kept empty", step, b)
			}
		}
		if len(x.keys) != len(x.buckets) || !slices.IsSorted(x.keys) {
			t.Fatalf("step %d: %d bucket keys for %d buckets, sorted %v", step, len(x.keys), len(x.buckets), slices.IsSorted(x.keys))
		}
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
