package storetest

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// dueEpoch returns a time of the subtest's own, years before any time the
// other subtests use, so that the first entries ListDue answers are the
// subtest's even in a table other subtests share (the index spans every
// queue). Entries a subtest leaves are removed by its cleanup.
func dueEpoch(t *testing.T) time.Time {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	days := binary.BigEndian.Uint64(b[:]) % (20 * 365)
	return time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(days) * 24 * time.Hour)
}

// dueOf lists st's due entries at or before before of the queues in qs, in
// the order ListDue gives them.
func dueOf(t *testing.T, st engine.State, before time.Time, limit int, qs ...string) []engine.DueEntry {
	t.Helper()
	all, err := st.ListDue(t.Context(), before, limit)
	if err != nil {
		t.Fatalf("ListDue(%v, %d): %v", before, limit, err)
	}
	var out []engine.DueEntry
	for i, d := range all {
		if d.At.After(before) {
			t.Fatalf("ListDue(%v) answered %+v, due after it", before, d)
		}
		if i > 0 && d.At.Before(all[i-1].At) {
			t.Fatalf("ListDue answered %+v after %+v: not in due order", d, all[i-1])
		}
		if slices.Contains(qs, d.Queue) {
			out = append(out, d)
		}
	}
	return out
}

func entry(at time.Time, kind engine.DueKind, queue, id string) engine.DueEntry {
	return engine.DueEntry{At: at, Kind: kind, Queue: queue, ID: id}
}

// wantDue compares entries as sets ordered by sortDue: ListDue answers
// ties in any order (dueOf checks its order).
func wantDue(t *testing.T, what string, got []engine.DueEntry, want ...engine.DueEntry) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	sortDue(got)
	sortDue(want)
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Kind == want[i].Kind && got[i].Queue == want[i].Queue && got[i].ID == want[i].ID && got[i].At.Equal(want[i].At)
	}
	if !ok {
		show := func(ds []engine.DueEntry) string {
			if len(ds) > 8 {
				return fmt.Sprintf("%d entries, first %+v", len(ds), ds[:8])
			}
			return fmt.Sprintf("%+v", ds)
		}
		t.Fatalf("%s: due entries\n got  %s\n want %s", what, show(got), show(want))
	}
}

func parkedAt(queue, id string, ticket int64, reason job.ParkReason, due time.Time) job.Job {
	j := newJob(queue, id, ticket, job.Parked)
	j.ParkReason, j.DueAt = reason, due
	return j
}

// testDue checks the due index (engine.DueEntry): every record that is due
// has its entry, written in the same step as the record, and nothing else
// has one; ListDue answers by due time, bounded; ListHeld answers a
// queue's held jobs in line order.
func testDue(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("Entries", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		t0 := dueEpoch(t)
		q := newQueue(t, st, interval)
		gen := getQueue(t, st, q).Gen
		far := parkedAt(q, "far", 1, job.Far, t0.Add(4*time.Minute))
		unsent := parkedAt(q, "unsent", 2, job.Unsent, t0.Add(time.Minute))
		held := parkedAt(q, "held", 3, job.PausedQueue, time.Time{})
		queued := newJob(q, "queued", 4, job.Queued)
		failed := newJob(q, "failed", 5, job.Failed)
		for _, j := range []*job.Job{&far, &unsent, &held, &queued, &failed} {
			j.Gen = gen
		}
		createJobs(t, st, far, unsent, held, queued, failed)
		if _, err := st.Pause(ctx, q, t0.Add(3*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Lease(ctx, q, "h", t0.Add(time.Hour), t0); err != nil {
			t.Fatal(err)
		}
		if err := st.ReleaseLease(ctx, q, "h", engine.Cursor{Round: t0.Add(2 * time.Minute), Until: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		// A key's lane with a holder and a job waiting is due at the
		// holder's lease's end; the queue's own lane while jobs wait on
		// it, at its Until; a lane held with nobody waiting, or with
		// only a pending count, never.
		key := putLane(t, st, slot.Lane{Queue: q, Key: "k", Gen: gen, Holder: slot.Waiter{Ticket: 7, JobID: "x"}, Until: t0.Add(5 * time.Minute), Last: 8,
			Waiting: []slot.Waiter{{Ticket: 8, JobID: "z"}}}, 0, 2)
		putLane(t, st, slot.Lane{Queue: q, Key: "alone", Gen: gen, Holder: slot.Waiter{Ticket: 9, JobID: "a"}, Until: t0.Add(time.Minute), Last: 9}, 0, 1)
		own := putLane(t, st, slot.Lane{Queue: q, Gen: gen, Waiting: []slot.Waiter{{Ticket: 8, JobID: "y"}}, Until: t0.Add(6 * time.Minute)}, 0, 0)
		putLane(t, st, slot.Lane{Queue: q, Key: "idle", Gen: gen}, 0, 2)

		all := []engine.DueEntry{
			entry(t0.Add(time.Minute), engine.DueJob, q, "unsent"),
			entry(t0.Add(2*time.Minute), engine.DueRound, q, ""),
			entry(t0.Add(3*time.Minute), engine.DueLift, q, ""),
			entry(t0.Add(4*time.Minute), engine.DueJob, q, "far"),
			entry(t0.Add(5*time.Minute), engine.DueLane, q, "k"),
			entry(t0.Add(6*time.Minute), engine.DueLane, q, ""),
		}
		wantDue(t, "all", dueOf(t, st, t0.Add(time.Hour), 100, q), all...)
		wantDue(t, "due by t0+3m", dueOf(t, st, t0.Add(3*time.Minute), 100, q), all[:3]...)
		wantDue(t, "nothing due before t0+1m", dueOf(t, st, t0.Add(time.Minute-time.Millisecond), 100, q))
		// A limit cuts the answer to its earliest entries. The index spans
		// every queue of the store: the earliest may be another
		// subtest's.
		every, err := st.ListDue(ctx, t0.Add(time.Hour), 10000)
		if err != nil {
			t.Fatal(err)
		}
		first, err := st.ListDue(ctx, t0.Add(time.Hour), 2)
		if err != nil || len(first) != 2 || !first[0].At.Equal(every[0].At) || !first[1].At.Equal(every[1].At) ||
			!slices.Contains(every, first[0]) || !slices.Contains(every, first[1]) {
			t.Fatalf("ListDue limit 2 = %+v, %v; want the first two of %d", first, err, len(every))
		}

		// Each record leaves the index with the write that makes it not
		// due, and moves in it with the write that moves its time.
		moved := far
		moved.DueAt = t0.Add(30 * time.Minute)
		if err := st.UpdateJob(ctx, moved, far.Version()); err != nil {
			t.Fatal(err)
		}
		sent := unsent
		sent.Status, sent.ParkReason, sent.DueAt = job.Queued, "", time.Time{}
		if err := st.UpdateJob(ctx, sent, unsent.Version()); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Unpause(ctx, q, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Lease(ctx, q, "h", t0.Add(time.Hour), t0); err != nil {
			t.Fatal(err)
		}
		if err := st.ReleaseLease(ctx, q, "h", engine.Cursor{}); err != nil {
			t.Fatal(err)
		}
		gone := key
		gone.Waiting = nil
		putLane(t, st, gone, key.Version, 0)
		empty := own
		empty.Waiting = nil
		putLane(t, st, empty, own.Version, 0)
		wantDue(t, "after the writes", dueOf(t, st, t0.Add(time.Hour), 100, q), entry(t0.Add(30*time.Minute), engine.DueJob, q, "far"))
		cancelled := moved
		cancelled.Status, cancelled.ParkReason, cancelled.DueAt = job.Cancelled, "", time.Time{}
		if err := st.UpdateJob(ctx, cancelled, moved.Version()); err != nil {
			t.Fatal(err)
		}
		wantDue(t, "after the last", dueOf(t, st, t0.Add(time.Hour), 100, q))
	})

	t.Run("DeleteQueue", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		t0 := dueEpoch(t)
		q := newQueue(t, st, interval)
		if _, err := st.Pause(ctx, q, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Lease(ctx, q, "h", t0.Add(time.Hour), t0); err != nil {
			t.Fatal(err)
		}
		if err := st.ReleaseLease(ctx, q, "h", engine.Cursor{Round: t0}); err != nil {
			t.Fatal(err)
		}
		wantDue(t, "paused, a round due", dueOf(t, st, t0, 100, q), entry(t0, engine.DueLift, q, ""), entry(t0, engine.DueRound, q, ""))
		if err := st.DeleteQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		wantDue(t, "deleted", dueOf(t, st, t0, 100, q))
	})

	t.Run("Held", func(t *testing.T) {
		st := newState(t)
		q := newQueue(t, st, interval)
		gen := getQueue(t, st, q).Gen
		// Tickets rewritten by release rounds, line order kept: c, a,
		// b were accepted as 3, 1, 2.
		var jobs []job.Job
		for _, x := range []struct {
			id            string
			ticket, order int64
		}{{"c", 40, 3}, {"a", 90, 1}, {"b", 60, 2}, {"old", 5, 0}} {
			j := parkedAt(q, x.id, x.ticket, job.PausedQueue, time.Time{})
			j.Gen, j.Order = gen, x.order
			jobs = append(jobs, j)
		}
		other := parkedAt(q, "othergen", 1, job.PausedQueue, time.Time{})
		other.Gen = gen + 1
		farJob := parkedAt(q, "far", 1, job.Far, dueEpoch(t))
		farJob.Gen = gen
		createJobs(t, st, append(jobs, other, farJob)...)
		ids := func(js []job.Job) []string {
			var out []string
			for _, j := range js {
				out = append(out, j.ID)
			}
			return out
		}
		got, err := st.ListHeld(t.Context(), q, gen, 10)
		if err != nil {
			t.Fatal(err)
		}
		// "old" has no order: its ticket, 5, stands for it.
		if want := []string{"a", "b", "c", "old"}; !slices.Equal(ids(got), want) {
			t.Fatalf("ListHeld = %v, want %v", ids(got), want)
		}
		if diff := diffJob(got[0], jobs[1]); diff != "" {
			t.Fatalf("ListHeld's first job: %s", diff)
		}
		if got, err = st.ListHeld(t.Context(), q, gen, 2); err != nil || !slices.Equal(ids(got), []string{"a", "b"}) {
			t.Fatalf("ListHeld limit 2 = %v, %v; want [a b]", ids(got), err)
		}
		// Re-ticketed and sent, a leaves the held jobs.
		a := jobs[1]
		sent := a
		sent.Status, sent.ParkReason, sent.Ticket = job.Queued, "", 100
		if err := st.UpdateJob(t.Context(), sent, a.Version()); err != nil {
			t.Fatal(err)
		}
		if got, err = st.ListHeld(t.Context(), q, gen, 10); err != nil || !slices.Equal(ids(got), []string{"b", "c", "old"}) {
			t.Fatalf("ListHeld after a left = %v, %v; want [b c old]", ids(got), err)
		}
		done := farJob
		done.Status, done.ParkReason, done.DueAt = job.Cancelled, "", time.Time{}
		if err := st.UpdateJob(t.Context(), done, farJob.Version()); err != nil {
			t.Fatal(err)
		}
	})

	// Writers park and release jobs of several queues, and pause and
	// unpause them, all at once, while readers list what is due: every
	// answer is in due order and within its bound, and once the writers
	// are done the index holds exactly the records that are due.
	t.Run("Concurrent", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		t0 := dueEpoch(t)
		const queues, writers, perWriter = 3, 8, 25
		var qs []string
		for range queues {
			qs = append(qs, newQueue(t, st, interval))
		}
		var mu sync.Mutex
		want := map[engine.DueEntry]bool{}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var readers sync.WaitGroup
		for range 2 {
			readers.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					dueOf(t, st, t0.Add(time.Hour), 50, qs...)
				}
			})
		}
		for w := range writers {
			wg.Go(func() {
				r := mrand.New(mrand.NewPCG(uint64(w), 7))
				q := qs[w%queues]
				for i := range perWriter {
					id := fmt.Sprintf("w%d-%d", w, i)
					due := t0.Add(time.Duration(r.IntN(3600)) * time.Second)
					j := parkedAt(q, id, int64(w*perWriter+i+1), job.Far, due)
					if _, err := st.CreateJobs(ctx, []job.Job{j}); err != nil {
						t.Error(err)
						return
					}
					keep := r.IntN(2) == 0
					if !keep {
						sent := j
						sent.Status, sent.ParkReason, sent.DueAt = job.Queued, "", time.Time{}
						if err := st.UpdateJob(ctx, sent, j.Version()); err != nil {
							t.Error(err)
							return
						}
					}
					if w < queues {
						// One writer per queue pauses and unpauses it.
						until := t0.Add(time.Duration(i+1) * time.Second)
						if _, err := st.Pause(ctx, q, until); err != nil {
							t.Error(err)
						}
						if i%2 == 1 {
							if _, err := st.Unpause(ctx, q, time.Time{}); err != nil {
								t.Error(err)
							}
						}
					}
					if keep {
						mu.Lock()
						want[entry(due, engine.DueJob, q, id)] = true
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		close(stop)
		readers.Wait()
		for _, q := range qs {
			if at := engine.QueueDue(getQueue(t, st, q).State); !at.IsZero() {
				want[entry(at, engine.DueLift, q, "")] = true
			}
		}
		var wantList []engine.DueEntry
		for d := range want {
			wantList = append(wantList, d)
		}
		sortDue(wantList)
		got := dueOf(t, st, t0.Add(time.Hour), len(wantList)+10, qs...)
		sortDue(got)
		wantDue(t, fmt.Sprintf("after %d writers", writers), got, wantList...)
		// Leave nothing due for the subtests that share the store.
		for d := range want {
			if d.Kind == engine.DueJob {
				j := getJob(t, st, d.Queue, d.ID)
				done := j
				done.Status, done.ParkReason, done.DueAt = job.Cancelled, "", time.Time{}
				if err := st.UpdateJob(ctx, done, j.Version()); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, q := range qs {
			if _, err := st.Unpause(ctx, q, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
		wantDue(t, "after the cleanup", dueOf(t, st, t0.Add(time.Hour), 100, qs...))
	})
}

// sortDue sorts entries by time, then queue, kind and id: ListDue leaves
// the order of ties to the store.
func sortDue(ds []engine.DueEntry) {
	slices.SortFunc(ds, func(a, b engine.DueEntry) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		if a.Queue != b.Queue {
			if a.Queue < b.Queue {
				return -1
			}
			return 1
		}
		if a.Kind != b.Kind {
			if a.Kind < b.Kind {
				return -1
			}
			return 1
		}
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
}
