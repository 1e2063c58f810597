package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// diffLane describes how got differs from want, or returns "" (a nil and
// an empty Waiting are alike).
func diffLane(got, want slot.Lane) string {
	var d differ
	d.fields(got, want, "Queue", "Key", "Gen", "Version", "Holder", "Until", "Last")
	d.check("Waiting", slices.Equal(got.Waiting, want.Waiting), got.Waiting, want.Waiting)
	d.check("More", slices.EqualFunc(got.More, want.More, func(a, b slot.Hold) bool { return a.Waiter == b.Waiter && a.Until.Equal(b.Until) }), got.More, want.More)
	d.fields(got, want, "Pending")
	return d.String()
}

// queueOfGen makes a queue of its own, of generation gen, and returns
// its name.
func queueOfGen(t *testing.T, st engine.State, gen int64) string {
	t.Helper()
	name := queueName(t)
	generation(t, st, name, gen)
	return name
}

// generation makes name a queue of generation gen: it deletes the queue
// of that name, if any, and creates it again.
func generation(t *testing.T, st engine.State, name string, gen int64) {
	t.Helper()
	if err := st.DeleteQueue(t.Context(), name); err != nil && !errors.Is(err, engine.ErrQueueNotFound) {
		t.Fatalf("DeleteQueue(%s): %v", name, err)
	}
	if err := st.CreateQueue(t.Context(), engine.Queue{Name: name, Gen: gen, Config: testConfig(interval), CreatedAt: base}); err != nil {
		t.Fatalf("CreateQueue(%s, gen %d): %v", name, gen, err)
	}
}

func wantLane(t *testing.T, what string, got, want slot.Lane) {
	t.Helper()
	if d := diffLane(got, want); d != "" {
		t.Errorf("%s: %s", what, d)
	}
}

func getLane(t *testing.T, st engine.State, queue, key string) slot.Lane {
	t.Helper()
	l, err := st.GetLane(t.Context(), queue, key)
	if err != nil {
		t.Fatalf("GetLane(%s, %q): %v", queue, key, err)
	}
	return l
}

func putLane(t *testing.T, st engine.State, l slot.Lane, from, pendingDelta int64) slot.Lane {
	t.Helper()
	got, err := st.PutLane(t.Context(), l, from, pendingDelta)
	if err != nil {
		t.Fatalf("PutLane(%s, %q) from %d, pending %+d: %v", l.Queue, l.Key, from, pendingDelta, err)
	}
	return got
}

func addPending(t *testing.T, st engine.State, queue string, gen int64, key string, n int64) slot.Lane {
	t.Helper()
	l, err := st.AddPending(t.Context(), queue, gen, key, n)
	if err != nil {
		t.Fatalf("AddPending(%s, %d, %q, %d): %v", queue, gen, key, n, err)
	}
	return l
}

// atVersion returns l at version v.
func atVersion(l slot.Lane, v int64) slot.Lane {
	l.Version = v
	return l
}

// testLanes: the lanes of a queue's keys (GetLane, PutLane, AddPending,
// ListLanes). Lanes need no queue record.
func testLanes(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("Unwritten", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		for _, key := range []string{"", "k"} {
			wantLane(t, fmt.Sprintf("lane %q never written", key), getLane(t, st, name, key), slot.Lane{Queue: name, Key: key})
		}
		if ls, err := st.ListLanes(t.Context(), name); err != nil || len(ls) != 0 {
			t.Errorf("ListLanes of a queue with no lanes = %v, %v", ls, err)
		}
	})

	// Every field comes back as it was put, but Pending, which moves by
	// the put's delta alone; the version moves by one a write from the one
	// the lane was created at, and a put from any other version is refused
	// and changes nothing.
	t.Run("PutRoundTrip", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		key := "Acct_9.x:y/z@w-1"
		l := slot.Lane{
			Queue: name, Key: key, Gen: 7,
			Holder: slot.Waiter{Ticket: 40, JobID: "job:40.a-b_c"}, Until: at(time.Minute),
			More: []slot.Hold{
				{Waiter: slot.Waiter{Ticket: 38, JobID: "m:38"}, Until: at(50 * time.Second)},
				{Waiter: slot.Waiter{Ticket: 39, JobID: "m.39"}, Until: at(90 * time.Second)},
			},
			Last:    45,
			Waiting: []slot.Waiter{{Ticket: 41, JobID: "a"}, {Ticket: 44, JobID: "x:y"}, {Ticket: 45, JobID: "Z.9"}},
			Pending: 6,
		}
		got := putLane(t, st, l, 0, 6)
		v := got.Version // where the store starts a created lane
		if v < 1 {
			t.Fatalf("PutLane from 0 answered version %d, want 1 or more", v)
		}
		wantLane(t, "PutLane's answer", got, atVersion(l, v))
		wantLane(t, "GetLane after PutLane", getLane(t, st, name, key), atVersion(l, v))

		// The holder gone, the first waiter handed the key; then nobody
		// holding and nobody waiting, with jobs still pending: the lane
		// stays, its cleared fields cleared.
		next, handed := slot.Leave(got, l.Holder, at(30*time.Second), 3, time.Minute)
		if !slices.Equal(handed, l.Waiting[:1]) {
			t.Fatalf("Leave handed %v", handed)
		}
		next.Pending = 99 // not stored: the count moves by the delta alone
		got = putLane(t, st, next, v, -1)
		next.Pending = 5
		wantLane(t, "after a hand-off", got, atVersion(next, v+1))
		wantLane(t, "GetLane after it", getLane(t, st, name, key), atVersion(next, v+1))
		empty := slot.Lane{Queue: name, Key: key, Gen: 7, Pending: 2}
		got = putLane(t, st, empty, got.Version, -3)
		wantLane(t, "PutLane of a lane that only counts pending jobs", got, atVersion(empty, v+2))
		wantLane(t, "GetLane of it", getLane(t, st, name, key), atVersion(empty, v+2))

		for _, from := range []int64{0, v, v + 1, v + 3} {
			_, err := st.PutLane(t.Context(), l, from, 1)
			wantErr(t, fmt.Sprintf("PutLane from version %d of a lane at %d", from, v+2), err, engine.ErrConflict)
			_, err = st.PutLane(t.Context(), slot.Lane{Queue: name, Key: key}, from, -2)
			wantErr(t, fmt.Sprintf("deleting, from version %d, a lane at %d", from, v+2), err, engine.ErrConflict)
		}
		wantLane(t, "after refused puts", getLane(t, st, name, key), atVersion(empty, v+2))
		_, err := st.PutLane(t.Context(), slot.Lane{Queue: name, Key: "other"}, 5, 1)
		wantErr(t, "PutLane from version 5 of a lane never written", err, engine.ErrConflict)
		wantLane(t, "a lane a refused put would have made", getLane(t, st, name, "other"), slot.Lane{Queue: name, Key: "other"})
	})

	// Workers that read one version of a lane and each claim the key: one
	// wins, the others are told, and the stored holder is the winner; only
	// the winner's delta counts.
	t.Run("ConcurrentPut", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		const writers = 30
		var from int64 // none stored, then the version the first round stored
		for round := range int64(2) {
			lane := getLane(t, st, name, "k")
			if lane.Version != from {
				t.Fatalf("lane at version %d, want %d", lane.Version, from)
			}
			errs := make([]error, writers)
			atOnce(writers, func(i int) {
				l := lane
				l.Holder = slot.Waiter{Ticket: 100*round + int64(i) + 1, JobID: fmt.Sprintf("w%d", i)}
				l.Until, l.Last = at(time.Minute), l.Holder.Ticket
				_, errs[i] = st.PutLane(t.Context(), l, from, 1)
			})
			winner := -1
			for i, err := range errs {
				switch {
				case err == nil && winner >= 0:
					t.Errorf("from version %d: writers %d and %d both won", from, winner, i)
				case err == nil:
					winner = i
				case !errors.Is(err, engine.ErrConflict):
					t.Errorf("from version %d: writer %d: got %v, want ErrConflict", from, i, err)
				}
			}
			if winner < 0 {
				t.Fatalf("from version %d: no writer won", from)
			}
			got := getLane(t, st, name, "k")
			// From 0 the lane is created, at whatever version the store
			// starts lanes; from a stored version it moves by one.
			if (from == 0 && got.Version < 1) || (from > 0 && got.Version != from+1) || got.Holder.JobID != fmt.Sprintf("w%d", winner) {
				t.Errorf("from version %d: stored version %d holder %v, want the next version and writer %d", from, got.Version, got.Holder, winner)
			}
			if got.Pending != round+1 {
				t.Errorf("from version %d: pending %d after %d rounds of one winner's +1", from, got.Pending, round+1)
			}
			from = got.Version
		}
	})

	// Enqueues that count their jobs at once: every add counts, each
	// answer is the lane right after it, none moves the version, and a put
	// from the version read before the adds lands and keeps them all.
	t.Run("ConcurrentAddPending", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		const adders = 50
		before := putLane(t, st, slot.Lane{Queue: name, Key: "k", Gen: 3, Holder: slot.Waiter{Ticket: 1, JobID: "a"}, Until: at(time.Minute), Last: 1}, 0, 0)
		answers := make([]slot.Lane, adders)
		errs := make([]error, adders)
		atOnce(adders, func(i int) { answers[i], errs[i] = st.AddPending(t.Context(), name, 3, "k", 1) })
		var pendings []int64
		for i, err := range errs {
			if err != nil {
				t.Fatalf("adder %d: %v", i, err)
			}
			pendings = append(pendings, answers[i].Pending)
			if answers[i].Version != before.Version || answers[i].Holder != before.Holder {
				t.Errorf("adder %d answered %+v, want the lane at version %d, holder kept", i, answers[i], before.Version)
			}
		}
		slices.Sort(pendings)
		for i := range adders {
			if pendings[i] != int64(i+1) {
				t.Fatalf("the adds answered pending %v, want each of 1 to %d once", pendings, adders)
			}
		}
		after := before
		after.Pending = adders
		wantLane(t, "after the adds", getLane(t, st, name, "k"), after)

		next := before // as read before the adds: Pending 0
		next.Holder, next.Until = slot.Waiter{}, time.Time{}
		next.Waiting = []slot.Waiter{{Ticket: 2, JobID: "b"}}
		got := putLane(t, st, next, before.Version, 0)
		next.Pending = adders
		wantLane(t, "PutLane from the version read before the adds", got, atVersion(next, before.Version+1))
		wantLane(t, "GetLane after it", getLane(t, st, name, "k"), atVersion(next, before.Version+1))

		// Adds go down as well as up, and leave a lane that is not idle
		// in place.
		next.Pending = 0
		wantLane(t, "after subtracting them all", addPending(t, st, name, 3, "k", -adders), atVersion(next, before.Version+1))
	})

	// Enqueues count a key's jobs while a worker changes its lane by
	// read, change, put: the adds never make a put fail, whether one lands
	// between the put's read and its write or races it, and every add
	// counts.
	t.Run("PutDuringAdds", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		const n = 20
		lane := putLane(t, st, slot.Lane{Queue: name, Key: "k", Gen: 1, Holder: slot.Waiter{Ticket: 1, JobID: "h0"}, Until: at(time.Minute), Last: 1}, 0, 0)
		read := make([]chan struct{}, n) // closed once put i has read the lane
		added := make([]chan struct{}, n)
		addErrs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			read[i], added[i] = make(chan struct{}), make(chan struct{})
			wg.Go(func() {
				defer close(added[i])
				<-read[i]
				_, addErrs[i] = st.AddPending(t.Context(), name, 1, "k", 1)
			})
		}
		for i := range n {
			l := getLane(t, st, name, "k")
			close(read[i])
			if i%2 == 0 {
				<-added[i] // the add lands between the read and the put
			}
			l.Holder = slot.Waiter{Ticket: int64(i + 2), JobID: fmt.Sprintf("h%d", i+1)}
			l.Last = l.Holder.Ticket
			got, err := st.PutLane(t.Context(), l, l.Version, 0)
			if err != nil {
				t.Fatalf("put %d, from the version it read, %d: %v (an add moved the version?)", i+1, l.Version, err)
			}
			if got.Version != l.Version+1 || got.Holder != l.Holder || got.Pending < int64(i/2+1) {
				t.Errorf("put %d answered %+v, want version %d, holder %v, at least %d pending", i+1, got, l.Version+1, l.Holder, i/2+1)
			}
		}
		wg.Wait()
		for i, err := range addErrs {
			if err != nil {
				t.Fatalf("add %d: %v", i, err)
			}
		}
		got := getLane(t, st, name, "k")
		if got.Pending != n || got.Version != lane.Version+n || got.Holder.JobID != fmt.Sprintf("h%d", n) {
			t.Errorf("after %d puts and %d adds: %+v, want pending %d at version %d, holder h%d", n, n, got, n, lane.Version+n, n)
		}
	})

	// A worker ends the last job it knows of, leaving the lane idle, as an
	// enqueue counts a new job: the lane is deleted only if the count,
	// the add included, comes to 0. The count as the worker read it does
	// not decide.
	t.Run("DeleteRaceAdd", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		created := addPending(t, st, name, 1, "k", 1)
		held := created
		held.Holder, held.Until, held.Last = slot.Waiter{Ticket: 1, JobID: "a"}, at(time.Minute), 1
		read := putLane(t, st, held, created.Version, 0) // pending 1: a's own
		addPending(t, st, name, 1, "k", 1)               // b is enqueued
		idle := read
		idle.Holder, idle.Until = slot.Waiter{}, time.Time{}
		got := putLane(t, st, idle, read.Version, -1) // a ends
		idle.Pending = 1
		wantLane(t, "a's end, b counted meanwhile", got, atVersion(idle, read.Version+1))
		wantLane(t, "GetLane of it", getLane(t, st, name, "k"), atVersion(idle, read.Version+1))

		// The other way: the read counts b, whose enqueue then takes it
		// back (it lost a race on its id), and the lane goes.
		read = getLane(t, st, name, "k")
		addPending(t, st, name, 1, "k", -1)
		gone := putLane(t, st, read, read.Version, 0)
		wantLane(t, "PutLane of the idle lane, its count 0 since the read", gone, slot.Lane{Queue: name, Key: "k"})
		wantLane(t, "GetLane after it", getLane(t, st, name, "k"), slot.Lane{Queue: name, Key: "k"})
	})

	// A lane with nobody holding, nobody waiting and no pending jobs is
	// deleted: it reads as never written, and can be written again from
	// version 0, at a version above the deleted lane's. One with pending
	// jobs is kept.
	t.Run("IdleDeleted", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		held := putLane(t, st, slot.Lane{Queue: name, Key: "k", Gen: 1, Holder: slot.Waiter{Ticket: 1, JobID: "a"}, Until: at(time.Minute), Last: 1}, 0, 1)
		_, err := st.PutLane(t.Context(), slot.Lane{Queue: name, Key: "k", Gen: 1, Last: 1}, held.Version+1, -1)
		wantErr(t, "deleting from a version not stored", err, engine.ErrConflict)
		wantLane(t, "after a refused delete", getLane(t, st, name, "k"), held)

		idle := slot.Lane{Queue: name, Key: "k", Gen: 1, Last: 1, Pending: 1}
		kept := putLane(t, st, idle, held.Version, 0)
		wantLane(t, "an idle lane with a pending job", kept, atVersion(idle, held.Version+1))
		wantLane(t, "GetLane of it", getLane(t, st, name, "k"), atVersion(idle, held.Version+1))

		gone := putLane(t, st, idle, kept.Version, -1)
		wantLane(t, "PutLane of an idle lane with no pending jobs", gone, slot.Lane{Queue: name, Key: "k"})
		wantLane(t, "GetLane after the delete", getLane(t, st, name, "k"), slot.Lane{Queue: name, Key: "k"})
		if ls, err := st.ListLanes(t.Context(), name); err != nil || len(ls) != 0 {
			t.Errorf("ListLanes after the delete = %+v, %v", ls, err)
		}
		// Deleting what is not there, from version 0, is no conflict.
		wantLane(t, "PutLane of an idle lane never stored", putLane(t, st, idle, 0, 0), slot.Lane{Queue: name, Key: "k"})

		again := slot.Lane{Queue: name, Key: "k", Gen: 1, Holder: slot.Waiter{Ticket: 9, JobID: "b"}, Until: at(time.Hour), Last: 9}
		got := putLane(t, st, again, 0, 0)
		wantLane(t, "PutLane from 0 after the delete", got, atVersion(again, got.Version))
		if got.Version <= kept.Version {
			t.Errorf("lane created again at version %d, not above the deleted lane's %d", got.Version, kept.Version)
		}
	})

	// A lane of another generation belongs to a deleted queue of the same
	// name: an add of the queue's generation starts it afresh, its
	// waiters and count gone and its holder kept as a foreign one
	// (slot.Fresh) until that holder's lease ends. Gen 0 (queues from
	// before generations) is a generation like any other.
	t.Run("AddPendingOtherGen", func(t *testing.T) {
		st := newState(t)
		name := queueOfGen(t, st, 0)
		old := putLane(t, st, slot.Lane{Queue: name, Key: "k", Gen: 5, Holder: slot.Waiter{Ticket: 3, JobID: "a"}, Until: at(time.Minute),
			Last: 4, Waiting: []slot.Waiter{{Ticket: 4, JobID: "b"}}}, 0, 2)
		got := addPending(t, st, name, 0, "k", 1)
		foreign := slot.Waiter{Ticket: slot.DeletedQueueTicket, JobID: "a"}
		want := slot.Lane{Queue: name, Key: "k", Gen: 0, Version: got.Version, Pending: 1, Holder: foreign, Until: at(time.Minute)}
		wantLane(t, "AddPending of generation 0 on a lane of 5", got, want)
		if got.Version <= old.Version {
			t.Errorf("version %d after the fresh start, was %d", got.Version, old.Version)
		}
		wantLane(t, "GetLane of it", getLane(t, st, name, "k"), want)

		got = addPending(t, st, name, 0, "k", 2)
		wantLane(t, "a second add of generation 0", got, slot.Lane{Queue: name, Key: "k", Gen: 0, Version: want.Version, Pending: 3, Holder: foreign, Until: at(time.Minute)})
		generation(t, st, name, 8)
		got = addPending(t, st, name, 8, "k", 1)
		wantLane(t, "an add of generation 8 on a lane of 0", got, slot.Lane{Queue: name, Key: "k", Gen: 8, Version: got.Version, Pending: 1, Holder: foreign, Until: at(time.Minute)})
		if got.Version <= want.Version {
			t.Errorf("version %d after the second fresh start, was %d", got.Version, want.Version)
		}
		// An add of nothing starts a lane afresh too: the engine's way
		// to clear a deleted queue's lane before it writes it.
		generation(t, st, name, 9)
		got = addPending(t, st, name, 9, "k", 0)
		wantLane(t, "an add of 0 of generation 9 on a lane of 8", got, slot.Lane{Queue: name, Key: "k", Gen: 9, Version: got.Version, Holder: foreign, Until: at(time.Minute)})

		// An add creates a lane that is not there, and the next add
		// leaves its version.
		got = addPending(t, st, name, 8, "", 4)
		if got.Version < 1 {
			t.Errorf("AddPending created a lane at version %d, want 1 or more", got.Version)
		}
		wantLane(t, "AddPending of a new lane", got, slot.Lane{Queue: name, Key: "", Gen: 8, Version: got.Version, Pending: 4})
		wantLane(t, "a second add on it", addPending(t, st, name, 8, "", -1), slot.Lane{Queue: name, Key: "", Gen: 8, Version: got.Version, Pending: 3})
	})

	// An add of a deleted generation never starts afresh the lane of the
	// queue created again under the name: that lane is the new queue's,
	// held by one of its jobs. The add fails with ErrQueueNotFound and
	// the lane stays as it was; so does an add on a queue that is gone.
	t.Run("AddPendingDeadGen", func(t *testing.T) {
		st := newState(t)
		name := queueOfGen(t, st, 7)
		held := putLane(t, st, slot.Lane{Queue: name, Key: "k", Gen: 7, Holder: slot.Waiter{Ticket: 1, JobID: "b"}, Until: at(time.Minute),
			Last: 2, Waiting: []slot.Waiter{{Ticket: 2, JobID: "c"}}}, 0, 2)
		if _, err := st.AddPending(t.Context(), name, 3, "k", 0); !errors.Is(err, engine.ErrQueueNotFound) {
			t.Fatalf("AddPending of generation 3 on the lane of queue generation 7: %v, want ErrQueueNotFound", err)
		}
		wantLane(t, "the new queue's lane after the refused add", getLane(t, st, name, "k"), held)
		if err := st.DeleteQueue(t.Context(), name); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddPending(t.Context(), name, 3, "k", 1); !errors.Is(err, engine.ErrQueueNotFound) {
			t.Fatalf("AddPending of generation 3 with the queue gone: %v, want ErrQueueNotFound", err)
		}
		wantLane(t, "the lane after the refused add", getLane(t, st, name, "k"), held)
	})

	// A lane deleted and created again never comes back at a version the
	// deleted one had: a worker that read the old lane, and writes from
	// that read after the delete (installing as holder a job cancelled
	// meanwhile, say), is refused, however the new lane was created.
	t.Run("StaleAfterDelete", func(t *testing.T) {
		recreate := map[string]func(t *testing.T, st engine.State, name string) slot.Lane{
			"AddPending": func(t *testing.T, st engine.State, name string) slot.Lane {
				return addPending(t, st, name, 1, "k", 1)
			},
			"PutLane": func(t *testing.T, st engine.State, name string) slot.Lane {
				return putLane(t, st, slot.Lane{Queue: name, Key: "k", Gen: 1, Holder: slot.Waiter{Ticket: 20, JobID: "new"}, Until: at(time.Minute), Last: 20}, 0, 0)
			},
		}
		for _, how := range []string{"AddPending", "PutLane"} {
			t.Run(how, func(t *testing.T) {
				st := newState(t)
				name := queueName(t)
				// Reads of every version the lane has: created by an
				// add, then held, then idle with its job still pending.
				created := addPending(t, st, name, 1, "k", 1)
				held := created
				held.Holder, held.Until, held.Last = slot.Waiter{Ticket: 1, JobID: "a"}, at(time.Minute), 1
				held = putLane(t, st, held, created.Version, 0)
				idle := slot.Lane{Queue: name, Key: "k", Gen: 1, Last: 1}
				idle = putLane(t, st, idle, held.Version, 0)
				stale := []slot.Lane{created, held, idle}
				// The job ends: idle and empty, the lane is deleted.
				if got := putLane(t, st, idle, idle.Version, -1); got.Version != 0 {
					t.Fatalf("the idle, empty lane was kept: %+v", got)
				}

				fresh := recreate[how](t, st, name)
				for _, old := range stale {
					if fresh.Version <= old.Version {
						t.Errorf("lane created again at version %d, not above the deleted lane's %d", fresh.Version, old.Version)
					}
					l := old
					l.Holder, l.Until, l.Last = slot.Waiter{Ticket: 2, JobID: "cancelled"}, at(time.Minute), 2
					_, err := st.PutLane(t.Context(), l, old.Version, 0)
					wantErr(t, fmt.Sprintf("PutLane from version %d, read before the delete", old.Version), err, engine.ErrConflict)
				}
				wantLane(t, "the new lane after the stale puts", getLane(t, st, name, "k"), fresh)
			})
		}
	})

	t.Run("ListLanes", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		// A queue whose name begins with this one's: none of its lanes.
		other := name + "-2"
		addPending(t, st, other, 0, "a", 1)
		addPending(t, st, other, 0, "", 1)

		putLane(t, st, slot.Lane{Queue: name, Key: "b", Gen: 1, Holder: slot.Waiter{Ticket: 1, JobID: "x"}, Until: at(time.Minute)}, 0, 0)
		addPending(t, st, name, 1, "a/1", 1)
		addPending(t, st, name, 2, "a", 1) // of another generation: listed too
		putLane(t, st, slot.Lane{Queue: name, Waiting: []slot.Waiter{{Ticket: 3, JobID: "y"}}}, 0, 0)
		addPending(t, st, name, 1, "Z", 1)
		putLane(t, st, slot.Lane{Queue: name, Key: "gone"}, 0, 0) // idle and empty: not stored

		ls, err := st.ListLanes(t.Context(), name)
		if err != nil {
			t.Fatalf("ListLanes: %v", err)
		}
		var keys []string
		for _, l := range ls {
			keys = append(keys, l.Key)
			if d := diffLane(l, getLane(t, st, name, l.Key)); d != "" {
				t.Errorf("ListLanes' lane %q differs from GetLane's: %s", l.Key, d)
			}
		}
		if want := []string{"", "Z", "a", "a/1", "b"}; !slices.Equal(keys, want) {
			t.Errorf("ListLanes keys %q, want %q", keys, want)
		}
		// The queue's own record reads as before, lanes beside it.
		if q := getQueue(t, st, name); q.Name != name || q.Config.Interval != interval {
			t.Errorf("GetQueue beside lanes: %+v", q)
		}
	})
}
