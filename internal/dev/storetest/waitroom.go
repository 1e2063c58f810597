package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// testHorizons states the contract of a queue's booking horizon: a
// compare-and-set record that comes back as put, whose due entry follows
// its CheckAt, and of whose concurrent writers from one version one wins.
func testHorizons(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("CompareAndSet", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		h, err := st.GetHorizon(t.Context(), name)
		if err != nil || h.Version != 0 || h.Queue != name || len(h.Booked) != 0 {
			t.Fatalf("GetHorizon of an unwritten horizon = %+v, %v", h, err)
		}
		h.Gen = 5
		a := h.Book("k1", "job-a", at(0))
		h.Book("", "job-b", at(time.Second))
		h.Waiting, h.LastIn = 3, at(2*time.Second)
		h.Turns[2] = slot.Turn{Key: "k1", Used: 1}
		put, err := st.PutHorizon(t.Context(), h, 0)
		if err != nil || put.Version <= 0 {
			t.Fatalf("PutHorizon from 0 = %+v, %v", put, err)
		}
		if _, err := st.PutHorizon(t.Context(), h, 0); !errors.Is(err, engine.ErrConflict) {
			t.Fatalf("second PutHorizon from 0: %v, want ErrConflict", err)
		}
		got, err := st.GetHorizon(t.Context(), name)
		if err != nil || got.Version != put.Version || got.Gen != 5 || got.Seq != 2 || len(got.Booked) != 2 ||
			got.Booked[a] != (slot.Booking{Key: "k1", ID: "job-a", At: at(0)}) || got.Waiting != 3 ||
			!got.LastIn.Equal(at(2*time.Second)) || got.Turns[2] != (slot.Turn{Key: "k1", Used: 1}) {
			t.Fatalf("GetHorizon = %+v, %v\nput %+v", got, err, h)
		}
		if !got.Free(a) || got.Free(a) {
			t.Fatal("Free of a held booking, twice: want true, then false")
		}
		next, err := st.PutHorizon(t.Context(), got, got.Version)
		if err != nil || next.Version != got.Version+1 || len(next.Booked) != 1 {
			t.Fatalf("PutHorizon from %d = %+v, %v", got.Version, next, err)
		}
		if _, err := st.PutHorizon(t.Context(), got, got.Version); !errors.Is(err, engine.ErrConflict) {
			t.Fatalf("PutHorizon from a stale version: %v, want ErrConflict", err)
		}
		// A write of an older generation over a newer one's horizon is
		// a deleted queue's.
		old := next
		old.Gen = 4
		if _, err := st.PutHorizon(t.Context(), old, next.Version); !errors.Is(err, engine.ErrQueueNotFound) {
			t.Fatalf("PutHorizon of generation 4 over 5: %v, want ErrQueueNotFound", err)
		}
	})

	// The horizon is in the due index at its CheckAt, and leaves it when
	// CheckAt is zero.
	t.Run("Due", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		t.Cleanup(func() {
			h, err := st.GetHorizon(t.Context(), name)
			if err == nil {
				h.CheckAt = time.Time{}
				_, _ = st.PutHorizon(t.Context(), h, h.Version)
			}
		})
		epoch := dueEpoch(t)
		h := slot.Horizon{Queue: name, Gen: 1, Waiting: 1, CheckAt: epoch.Add(time.Minute)}
		put, err := st.PutHorizon(t.Context(), h, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := entry(epoch.Add(time.Minute), engine.DueRoom, name, "")
		wantRoomDue(t, st, epoch.Add(time.Hour), name, []engine.DueEntry{want})
		if got := dueOf(t, st, epoch, 10, name); len(got) != 0 {
			t.Fatalf("due before its time: %+v", got)
		}
		put.CheckAt, put.Waiting = time.Time{}, 0
		if _, err := st.PutHorizon(t.Context(), put, put.Version); err != nil {
			t.Fatal(err)
		}
		wantRoomDue(t, st, epoch.Add(time.Hour), name, nil)
	})

	// The waiting room's jobs are listed by queue, generation, priority
	// and key, in ticket order, from a ticket on; a job leaves the list
	// as it leaves the room, and no job of another part, generation or
	// status is in it.
	t.Run("ListRoom", func(t *testing.T) {
		st := newState(t)
		q := newQueue(t, st, interval)
		gen := getQueue(t, st, q).Gen
		room := func(id, key string, ticket int64, priority int) job.Job {
			j := parkedAt(q, id, ticket, job.Room, time.Time{})
			j.Gen, j.Key, j.Priority = gen, key, priority
			return j
		}
		a3, a1, a2 := room("a3", "A", 30, 0), room("a1", "A", 10, 3), room("a2", "A", 20, 0)
		urgent := room("u", "A", 5, 1)
		b := room("b", "B", 15, 0)
		none := room("n", "", 16, 0)
		old := room("old", "A", 1, 0)
		old.Gen = gen + 1
		lane := parkedAt(q, "lane", 2, job.WaitKey, time.Time{})
		lane.Gen, lane.Key = gen, "A"
		createJobs(t, st, a3, a1, a2, urgent, b, none, old, lane)
		list := func(p int, key string, after int64, limit int) []string {
			t.Helper()
			got, err := st.ListRoom(t.Context(), engine.RoomRequest{Queue: q, Gen: gen, Priority: p, Key: key, After: after, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, j := range got {
				out = append(out, j.ID)
			}
			return out
		}
		for _, c := range []struct {
			name  string
			p     int
			key   string
			after int64
			limit int
			want  []string
		}{
			{"priority 3, key A", 3, "A", 0, 10, []string{"a1", "a2", "a3"}},
			{"limit", 3, "A", 0, 2, []string{"a1", "a2"}},
			{"after", 3, "A", 10, 10, []string{"a2", "a3"}},
			{"priority 1", 1, "A", 0, 10, []string{"u"}},
			{"key B", 3, "B", 0, 10, []string{"b"}},
			{"no key", 3, "", 0, 10, []string{"n"}},
			{"empty part", 2, "A", 0, 10, nil},
		} {
			if got := list(c.p, c.key, c.after, c.limit); !slices.Equal(got, c.want) {
				t.Errorf("%s: ListRoom = %v, want %v", c.name, got, c.want)
			}
		}
		// Booked: a1 leaves the room (queued with a new ticket).
		booked := a1
		booked.Status, booked.ParkReason, booked.Ticket = job.Queued, "", 100
		if err := st.UpdateJob(t.Context(), booked, a1.Version()); err != nil {
			t.Fatal(err)
		}
		// Cancelled: a3 leaves it too.
		cancelled := a3
		cancelled.Status, cancelled.ParkReason = job.Cancelled, ""
		if err := st.UpdateJob(t.Context(), cancelled, a3.Version()); err != nil {
			t.Fatal(err)
		}
		if got := list(3, "A", 0, 10); !slices.Equal(got, []string{"a2"}) {
			t.Errorf("after a1 was booked and a3 cancelled: ListRoom = %v, want [a2]", got)
		}
		if _, err := st.ListRoom(t.Context(), engine.RoomRequest{Queue: q, Gen: gen, Priority: 3, Key: "A"}); err == nil {
			t.Error("ListRoom with no limit: no error")
		}
	})

	// Of concurrent bookers from one version, one wins: every booking
	// that is stored was won, and no two writers won one version.
	t.Run("Concurrent", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		if _, err := st.PutHorizon(t.Context(), slot.Horizon{Queue: name, Gen: 1}, 0); err != nil {
			t.Fatal(err)
		}
		const writers, each = 8, 5
		var mu sync.Mutex
		won := map[string]bool{}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := 0; i < each; {
					h, err := st.GetHorizon(t.Context(), name)
					if err != nil {
						t.Error(err)
						return
					}
					id := string(rune('a'+w)) + string(rune('0'+i))
					h = h.Clone()
					h.Book("", id, at(0))
					if _, err := st.PutHorizon(t.Context(), h, h.Version); errors.Is(err, engine.ErrConflict) {
						continue
					} else if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					won[id] = true
					mu.Unlock()
					i++
				}
			})
		}
		wg.Wait()
		h, err := st.GetHorizon(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Booked) != writers*each || h.Seq != writers*each {
			t.Fatalf("%d bookings stored (seq %d), want %d: a write from a stale version landed", len(h.Booked), h.Seq, writers*each)
		}
		for _, b := range h.Booked {
			if !won[b.ID] {
				t.Fatalf("booking %s stored, its writer lost", b.ID)
			}
		}
	})
}

// wantRoomDue checks queue's due entries by before are want.
func wantRoomDue(t *testing.T, st engine.State, before time.Time, queue string, want []engine.DueEntry) {
	t.Helper()
	got := dueOf(t, st, before, 100, queue)
	ok := len(got) == len(want)
	for i := range got {
		ok = ok && got[i].Kind == want[i].Kind && got[i].Queue == want[i].Queue && got[i].At.Equal(want[i].At)
	}
	if !ok {
		t.Fatalf("due entries of %s = %+v, want %+v", queue, got, want)
	}
}
