package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// countingState counts the calls of each queue's records, and the queues
// ListDue answered for.
type countingState struct {
	engine.State
	mu    sync.Mutex
	calls map[string]int
	due   map[string]bool
	other int // calls of no queue: ListDue, ListQueues
}

func (c *countingState) count(queue string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[queue]++
}

// reset starts a run: it returns the calls and due queues of the last.
func (c *countingState) reset() (calls map[string]int, due map[string]bool, other int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, due, other = c.calls, c.due, c.other
	c.calls, c.due, c.other = map[string]int{}, map[string]bool{}, 0
	return calls, due, other
}

func (c *countingState) ListDue(ctx context.Context, before time.Time, limit int) ([]engine.DueEntry, error) {
	ds, err := c.State.ListDue(ctx, before, limit)
	c.mu.Lock()
	c.other++
	for _, d := range ds {
		c.due[d.Queue] = true
	}
	c.mu.Unlock()
	return ds, err
}

func (c *countingState) ListQueues(ctx context.Context) ([]engine.Queue, error) {
	c.mu.Lock()
	c.other++
	c.mu.Unlock()
	return c.State.ListQueues(ctx)
}

func (c *countingState) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	c.count(name)
	return c.State.GetQueue(ctx, name)
}

func (c *countingState) Unpause(ctx context.Context, name string, ifUntil time.Time) (bool, error) {
	c.count(name)
	return c.State.Unpause(ctx, name, ifUntil)
}

func (c *countingState) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	c.count(r.Queue)
	return c.State.Take(ctx, r)
}

func (c *countingState) GetJob(ctx context.Context, k job.Ref) (job.Job, error) {
	c.count(k.Queue)
	return c.State.GetJob(ctx, k)
}

func (c *countingState) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	c.count(j.Queue)
	return c.State.UpdateJob(ctx, j, from)
}

func (c *countingState) ListJobs(ctx context.Context, r engine.ListRequest) ([]job.Job, error) {
	c.count(r.Queue)
	return c.State.ListJobs(ctx, r)
}

func (c *countingState) CountJobs(ctx context.Context, queue string, gen int64, s job.Status) (int, error) {
	c.count(queue)
	return c.State.CountJobs(ctx, queue, gen, s)
}

func (c *countingState) ListHeld(ctx context.Context, queue string, gen int64, limit int) ([]job.Job, error) {
	c.count(queue)
	return c.State.ListHeld(ctx, queue, gen, limit)
}

func (c *countingState) Lease(ctx context.Context, queue, holder string, until, now time.Time) (engine.Cursor, error) {
	c.count(queue)
	return c.State.Lease(ctx, queue, holder, until, now)
}

func (c *countingState) ReleaseLease(ctx context.Context, queue, holder string, cur engine.Cursor) error {
	c.count(queue)
	return c.State.ReleaseLease(ctx, queue, holder, cur)
}

func (c *countingState) GetLane(ctx context.Context, queue, key string) (slot.Lane, error) {
	c.count(queue)
	return c.State.GetLane(ctx, queue, key)
}

func (c *countingState) PutLane(ctx context.Context, l slot.Lane, from, d int64) (slot.Lane, error) {
	c.count(l.Queue)
	return c.State.PutLane(ctx, l, from, d)
}

func (c *countingState) AddPending(ctx context.Context, queue string, gen int64, key string, n int64) (slot.Lane, error) {
	c.count(queue)
	return c.State.AddPending(ctx, queue, gen, key, n)
}

func (c *countingState) ListLanes(ctx context.Context, queue string) ([]slot.Lane, error) {
	c.count(queue)
	return c.State.ListLanes(ctx, queue)
}

// 10,000 queues, most of them idle; some paused until a time, some with
// jobs booked hours ahead, some whose key's holder crashed with a job
// waiting for the key. The resume function, once a minute for three hours,
// does every due thing within one run of its due time — lifts the pause,
// releases the job before its slot, hands the key on — and makes no call
// at all on the records of a queue with nothing due in that run: an idle
// queue costs nothing, whatever the number of queues.
func TestResumeManyQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memstore.New(memstore.Options{})
		st := &countingState{State: mem}
		st.reset()
		tr := memstore.NewTransport(memstore.TransportOptions{})
		eng := engine.New(engine.Options{State: st, Transport: tr})
		const queues, paused, far, lanes = 10000, 40, 40, 40
		r := rand.New(rand.NewPCG(10000, 1))
		t0 := time.Now()
		inHours := func(h int) time.Time {
			return t0.Add(time.Minute + time.Duration(r.Int64N(int64(time.Duration(h)*time.Hour)))).Truncate(time.Millisecond)
		}
		name := func(i int) string { return fmt.Sprintf("q%05d", i) }
		pausedUntil := map[string]time.Time{}
		farJobs := map[job.Ref]time.Time{} // → slot
		held := map[string]time.Time{}     // lane queue → the holder's lease end
		for i := range queues {
			q, err := eng.CreateQueue(ctx, name(i), slot.Config{Interval: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case i < paused:
				until := inHours(2)
				if _, err := eng.Pause(ctx, q.Name, until); err != nil {
					t.Fatal(err)
				}
				pausedUntil[q.Name] = until
			case i < paused+far:
				for k := range 3 {
					nb := inHours(2).Add(15 * time.Minute)
					res, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: q.Name, Job: &job.Spec{ID: fmt.Sprintf("far%d", k), Kind: "k", NotBefore: &nb}})
					if err != nil || res.Jobs[0].Status != job.Parked {
						t.Fatalf("far job: %+v, %v", res, err)
					}
					farJobs[job.Ref{Queue: q.Name, ID: res.Jobs[0].JobID}] = nb
				}
			case i < paused+far+lanes:
				// The holder of key k crashed: its lease ends within two
				// hours; w waits for the key, parked.
				until := inHours(2)
				h := job.Job{Queue: q.Name, Gen: q.Gen, ID: "h", Kind: "k", Key: "k", Status: job.Running, Ticket: 1, Attempt: 1, EnqueuedAt: t0, StartedAt: t0}
				w := job.Job{Queue: q.Name, Gen: q.Gen, ID: "w", Kind: "k", Key: "k", Status: job.Parked, ParkReason: job.WaitKey,
					Detached: true, Ticket: 2, Attempt: 1, EnqueuedAt: t0, SlotAt: t0.Add(time.Second), DueAt: t0.Add(20 * time.Second)}
				if _, err := mem.CreateJobs(ctx, []job.Job{h, w}); err != nil {
					t.Fatal(err)
				}
				l := slot.Lane{Queue: q.Name, Key: "k", Gen: q.Gen, Holder: slot.Waiter{Ticket: 1, JobID: "h"}, Until: until, Last: 2,
					Waiting: []slot.Waiter{{Ticket: 2, JobID: "w"}}}
				if _, err := mem.PutLane(ctx, l, 0, 2); err != nil {
					t.Fatal(err)
				}
				held[q.Name] = until
			}
		}
		st.reset()

		touched := map[string]int{}
		runs := 0
		for now := time.Now(); now.Before(t0.Add(3 * time.Hour)); now = time.Now() {
			time.Sleep(time.Minute - now.Sub(t0)%time.Minute)
			if _, err := eng.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			runs++
			now = time.Now()
			calls, due, _ := st.reset()
			for q, n := range calls {
				touched[q] += n
				if !due[q] {
					t.Errorf("run at %v: %d calls on queue %s, which had nothing due", now.Sub(t0), n, q)
				}
			}
			// Everything due a run ago is done.
			for q, until := range pausedUntil {
				if now.Sub(until) >= time.Minute {
					if got, _ := mem.GetQueue(ctx, q); got.State.Paused {
						t.Fatalf("%v: queue %s still paused, due to lift at %v", now.Sub(t0), q, until.Sub(t0))
					}
				}
			}
			for k, slotAt := range farJobs {
				j, _ := mem.GetJob(ctx, k)
				if due := slotAt.Add(-tr.MaxDelay()); now.Sub(due) >= time.Minute && j.Status != job.Queued {
					t.Fatalf("%v: job %s is %s; due for release at %v", now.Sub(t0), k, j.Status, due.Sub(t0))
				}
			}
			for q, until := range held {
				w, _ := mem.GetJob(ctx, job.Ref{Queue: q, ID: "w"})
				if now.Sub(until) >= time.Minute && w.Status != job.Queued {
					t.Fatalf("%v: queue %s: w is %s; the holder's lease ended at %v", now.Sub(t0), q, w.Status, until.Sub(t0))
				}
			}
		}
		idle := 0
		for i := range queues {
			if touched[name(i)] == 0 {
				idle++
			}
		}
		if want := queues - paused - far - lanes; idle != want {
			t.Errorf("%d queues untouched by %d runs, want the %d with nothing due", idle, runs, want)
		}
		for k, slotAt := range farJobs {
			j, _ := mem.GetJob(ctx, k)
			if j.Retickets != 0 || j.Status != job.Queued || !j.SlotAt.Equal(slotAt) {
				t.Errorf("far job %s: %s, slot %v (booked %v), retickets %d; want released on its slot", k, j.Status, j.SlotAt, slotAt, j.Retickets)
			}
		}
		t.Logf("%d runs over %d queues: %d store calls on the %d queues with something due, none on the other %d", runs, queues, sum(touched), queues-idle, idle)
	})
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
