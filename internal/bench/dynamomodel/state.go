package dynamomodel

import (
	"context"
	"strconv"
	"time"

	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Each method is the embedded store's, made as the DynamoDB calls
// internal/dynamostore makes for it: on the partition and item it
// writes there (Q# a queue's config, state and lease; J# a job; L# a
// queue's lanes; M# a key's meter; W# the waiting room's horizon; S# a
// queue's schedules), and the indexes it queries (eventually
// consistent).

// Partitions and items, named as internal/dynamostore names them.
func queuePart(q string) string         { return "Q#" + q }
func jobPart(q, id string) string       { return "J#" + q + "#" + id }
func lanePart(q string) string          { return "L#" + q }
func meterPart(q, key string) string    { return "M#" + q + "#" + key }
func horizonPart(q string) string       { return "W#" + q }
func schedulePart(q string) string      { return "S#" + q }
func heldPart(q string, g int64) string { return "H#" + q + "#" + strconv.FormatInt(g, 10) }

const (
	itemState = "state"
	// itemQueue is the query of a queue's config and state items
	// together (GetQueue).
	itemQueue = "queue"
	itemLease = "lease"
)

// stateWrite is one conditional write of a queue's state item.
func stateWrite(q string) call { return call{part: queuePart(q), item: itemState, write: true} }

// read makes a read call whose answer f returns; its size bills the next.
func read[T any](m *Model, ctx context.Context, c call, f func() (T, error)) (T, error) {
	var v T
	err := m.do(ctx, c, func() (int, error) {
		var err error
		v, err = f()
		return 0, err
	}, func() int { return sizeOf(v) })
	return v, err
}

// write makes a write call whose answer f returns, the record as stored.
func write[T any](m *Model, ctx context.Context, c call, f func() (T, error)) (T, error) {
	c.write = true
	return read(m, ctx, c, f)
}

// check makes a conditional write that answers whether it landed: false
// is a refused condition.
func check(m *Model, ctx context.Context, c call, f func() (bool, error)) (bool, error) {
	var ok bool
	err := m.do(ctx, c, func() (int, error) {
		var err error
		ok, err = f()
		if err == nil && !ok {
			return 1, nil
		}
		return 0, err
	}, nil)
	return ok, err
}

// plain makes a write call with no answer but its error.
func plain(m *Model, ctx context.Context, c call, f func() error) error {
	c.write = true
	return m.do(ctx, c, func() (int, error) { return 0, f() }, nil)
}

// staleOn is a call's stale check (call.stale) on queue's state: stale
// says whether a write picked from *seen is refused on the state it
// meets; when it is, the refusal's answer is the state the write is sent
// again from.
func (m *Model) staleOn(ctx context.Context, queue string, seen *slot.State, stale func(slot.State) bool) func() bool {
	return func() bool {
		q, err := m.store.GetQueue(ctx, queue)
		if err != nil || !stale(q.State) {
			return false
		}
		*seen = q.State
		return true
	}
}

// CreateQueue is a transaction of the queue's config and state items:
// twice their write units.
func (m *Model) CreateQueue(ctx context.Context, q engine.Queue) error {
	return plain(m, ctx, call{part: queuePart(q.Name), item: "create", items: 4}, func() error { return m.store.CreateQueue(ctx, q) })
}

// GetQueue is one strongly consistent query of the config and state items.
func (m *Model) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	return read(m, ctx, call{part: queuePart(name), item: itemQueue}, func() (engine.Queue, error) { return m.store.GetQueue(ctx, name) })
}

// Admit is GetQueue's read: the gate of a booked start writes nothing.
func (m *Model) Admit(ctx context.Context, r engine.AdmitRequest) (engine.Queue, error) {
	return read(m, ctx, call{part: queuePart(r.Queue), item: itemQueue}, func() (engine.Queue, error) { return m.store.Admit(ctx, r) })
}

func (m *Model) ListQueues(ctx context.Context) ([]engine.Queue, error) {
	return read(m, ctx, call{part: "queues", item: "list", eventual: true}, func() ([]engine.Queue, error) { return m.store.ListQueues(ctx) })
}

// SetConfig is a transaction of the config and state items.
func (m *Model) SetConfig(ctx context.Context, name string, cfg slot.Config) error {
	return plain(m, ctx, call{part: queuePart(name), item: "create", items: 4}, func() error { return m.store.SetConfig(ctx, name, cfg) })
}

func (m *Model) Reconfigure(ctx context.Context, r engine.ReconfigureRequest) (slot.State, error) {
	return write(m, ctx, call{part: queuePart(r.Queue), item: "create", items: 2}, func() (slot.State, error) { return m.store.Reconfigure(ctx, r) })
}

func (m *Model) Pause(ctx context.Context, name string, until time.Time) (slot.State, error) {
	return write(m, ctx, stateWrite(name), func() (slot.State, error) { return m.store.Pause(ctx, name, until) })
}

func (m *Model) Unpause(ctx context.Context, name string, ifUntil time.Time) (bool, error) {
	return check(m, ctx, stateWrite(name), func() (bool, error) { return m.store.Unpause(ctx, name, ifUntil) })
}

func (m *Model) Purge(ctx context.Context, name string) (slot.State, error) {
	return write(m, ctx, stateWrite(name), func() (slot.State, error) { return m.store.Purge(ctx, name) })
}

func (m *Model) Skip(ctx context.Context, queue string, ticket int64) (bool, error) {
	return check(m, ctx, stateWrite(queue), func() (bool, error) { return m.store.Skip(ctx, queue, ticket) })
}

// DeleteQueue is a transaction of the config, state and lease items.
func (m *Model) DeleteQueue(ctx context.Context, name string) error {
	return plain(m, ctx, call{part: queuePart(name), item: "create", items: 6}, func() error { return m.store.DeleteQueue(ctx, name) })
}

func (m *Model) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	var t engine.Taken
	c := stateWrite(r.Queue)
	seen := r // a refused write is sent again in the form its answer shows
	c.stale = m.staleOn(ctx, r.Queue, &seen.Seen, func(st slot.State) bool {
		return r.Check() == nil && dynamostore.StaleTake(seen, st)
	})
	err := m.do(ctx, c, func() (int, error) {
		var err error
		t, err = m.store.Take(ctx, r)
		return 0, err
	}, func() int { return sizeOf(t.State) })
	return t, err
}

func (m *Model) Gate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	c := stateWrite(r.Queue)
	seen := r // a refused write is sent again in the form its answer shows
	c.stale = m.staleOn(ctx, r.Queue, &seen.Seen, func(st slot.State) bool {
		// A gate the limits refuse on the state is decided by its
		// first refusal: one write, whatever the form.
		v, _ := r.Decide(st)
		return v == slot.Start && dynamostore.StaleGate(seen, st)
	})
	return write(m, ctx, c, func() (slot.State, error) { return m.store.Gate(ctx, r) })
}

func (m *Model) SlowDown(ctx context.Context, r engine.SlowDownRequest) (slot.State, error) {
	return write(m, ctx, stateWrite(r.Queue), func() (slot.State, error) { return m.store.SlowDown(ctx, r) })
}

func (m *Model) EndRun(ctx context.Context, queue string, gen, ticket int64, until time.Time) error {
	return plain(m, ctx, stateWrite(queue), func() error { return m.store.EndRun(ctx, queue, gen, ticket, until) })
}

// CreateJobs is one conditional put a job, each in a partition of its
// own, sent together; a job that existed is a refused condition.
func (m *Model) CreateJobs(ctx context.Context, jobs []job.Job) ([]bool, error) {
	if len(jobs) == 0 {
		return m.store.CreateJobs(ctx, jobs)
	}
	var created []bool
	c := call{part: jobPart(jobs[0].Queue, "*"), item: "job", write: true, items: len(jobs), spread: true}
	err := m.do(ctx, c, func() (int, error) {
		var err error
		created, err = m.store.CreateJobs(ctx, jobs)
		n := 0
		for _, ok := range created {
			if !ok {
				n++
			}
		}
		return n, err
	}, func() int { return sizeOf(jobs[0]) })
	return created, err
}

func (m *Model) GetJob(ctx context.Context, k job.Ref) (job.Job, error) {
	return read(m, ctx, call{part: jobPart(k.Queue, k.ID), item: "job"}, func() (job.Job, error) { return m.store.GetJob(ctx, k) })
}

func (m *Model) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	c := call{part: jobPart(j.Queue, j.ID), item: "job", write: true}
	return m.do(ctx, c, func() (int, error) { return 0, m.store.UpdateJob(ctx, j, from) }, func() int { return sizeOf(j) })
}

func (m *Model) ListJobs(ctx context.Context, r engine.ListRequest) ([]job.Job, error) {
	return read(m, ctx, call{part: "status#" + r.Queue, item: "list", eventual: true}, func() ([]job.Job, error) { return m.store.ListJobs(ctx, r) })
}

func (m *Model) ListRoom(ctx context.Context, r engine.RoomRequest) ([]job.Job, error) {
	return read(m, ctx, call{part: "room#" + r.Queue, item: "list", eventual: true}, func() ([]job.Job, error) { return m.store.ListRoom(ctx, r) })
}

func (m *Model) CountJobs(ctx context.Context, queue string, gen int64, status job.Status) (int, error) {
	return read(m, ctx, call{part: "status#" + queue, item: "count", eventual: true}, func() (int, error) {
		return m.store.CountJobs(ctx, queue, gen, status)
	})
}

func (m *Model) ListDue(ctx context.Context, before time.Time, limit int) ([]engine.DueEntry, error) {
	return read(m, ctx, call{part: "due", item: "list", eventual: true}, func() ([]engine.DueEntry, error) {
		return m.store.ListDue(ctx, before, limit)
	})
}

func (m *Model) ListHeld(ctx context.Context, queue string, gen int64, limit int) ([]job.Job, error) {
	return read(m, ctx, call{part: heldPart(queue, gen), item: "list", eventual: true}, func() ([]job.Job, error) {
		return m.store.ListHeld(ctx, queue, gen, limit)
	})
}

func (m *Model) Lease(ctx context.Context, queue, holder string, until, now time.Time) (engine.Cursor, error) {
	return write(m, ctx, call{part: queuePart(queue), item: itemLease}, func() (engine.Cursor, error) {
		return m.store.Lease(ctx, queue, holder, until, now)
	})
}

func (m *Model) ReleaseLease(ctx context.Context, queue, holder string, c engine.Cursor) error {
	return plain(m, ctx, call{part: queuePart(queue), item: itemLease}, func() error { return m.store.ReleaseLease(ctx, queue, holder, c) })
}

func (m *Model) Schema(ctx context.Context) (engine.Schema, error) {
	return read(m, ctx, call{part: "schema", item: "schema"}, func() (engine.Schema, error) { return m.store.Schema(ctx) })
}

func (m *Model) PutSchema(ctx context.Context, s, from engine.Schema) error {
	return plain(m, ctx, call{part: "schema", item: "schema"}, func() error { return m.store.PutSchema(ctx, s, from) })
}

func (m *Model) GetLane(ctx context.Context, queue, key string) (slot.Lane, error) {
	return read(m, ctx, call{part: lanePart(queue), item: key}, func() (slot.Lane, error) { return m.store.GetLane(ctx, queue, key) })
}

func (m *Model) PutLane(ctx context.Context, l slot.Lane, from, pendingDelta int64) (slot.Lane, error) {
	return write(m, ctx, call{part: lanePart(l.Queue), item: l.Key}, func() (slot.Lane, error) {
		return m.store.PutLane(ctx, l, from, pendingDelta)
	})
}

func (m *Model) AddPending(ctx context.Context, queue string, gen int64, key string, n int64) (slot.Lane, error) {
	return write(m, ctx, call{part: lanePart(queue), item: key}, func() (slot.Lane, error) {
		return m.store.AddPending(ctx, queue, gen, key, n)
	})
}

func (m *Model) ListLanes(ctx context.Context, queue string) ([]slot.Lane, error) {
	return read(m, ctx, call{part: lanePart(queue), item: "list"}, func() ([]slot.Lane, error) { return m.store.ListLanes(ctx, queue) })
}

func (m *Model) GetMeter(ctx context.Context, queue, key string) (slot.Meter, error) {
	return read(m, ctx, call{part: meterPart(queue, key), item: "meter"}, func() (slot.Meter, error) {
		return m.store.GetMeter(ctx, queue, key)
	})
}

func (m *Model) PutMeter(ctx context.Context, mt slot.Meter, from int64, keep time.Time) (slot.Meter, error) {
	return write(m, ctx, call{part: meterPart(mt.Queue, mt.Key), item: "meter"}, func() (slot.Meter, error) {
		return m.store.PutMeter(ctx, mt, from, keep)
	})
}

func (m *Model) GetHorizon(ctx context.Context, queue string) (slot.Horizon, error) {
	return read(m, ctx, call{part: horizonPart(queue), item: "horizon"}, func() (slot.Horizon, error) {
		return m.store.GetHorizon(ctx, queue)
	})
}

func (m *Model) PutHorizon(ctx context.Context, h slot.Horizon, from int64) (slot.Horizon, error) {
	return write(m, ctx, call{part: horizonPart(h.Queue), item: "horizon"}, func() (slot.Horizon, error) {
		return m.store.PutHorizon(ctx, h, from)
	})
}

func (m *Model) CreateSchedule(ctx context.Context, s engine.Schedule) error {
	return plain(m, ctx, call{part: schedulePart(s.Queue), item: s.Name}, func() error { return m.store.CreateSchedule(ctx, s) })
}

func (m *Model) GetSchedule(ctx context.Context, queue, name string) (engine.Schedule, error) {
	return read(m, ctx, call{part: schedulePart(queue), item: name}, func() (engine.Schedule, error) {
		return m.store.GetSchedule(ctx, queue, name)
	})
}

func (m *Model) ListSchedules(ctx context.Context, queue string) ([]engine.Schedule, error) {
	return read(m, ctx, call{part: schedulePart(queue), item: "list"}, func() ([]engine.Schedule, error) {
		return m.store.ListSchedules(ctx, queue)
	})
}

func (m *Model) PutSchedule(ctx context.Context, s engine.Schedule, from int64) (engine.Schedule, error) {
	return write(m, ctx, call{part: schedulePart(s.Queue), item: s.Name}, func() (engine.Schedule, error) {
		return m.store.PutSchedule(ctx, s, from)
	})
}

func (m *Model) DeleteSchedule(ctx context.Context, queue, name string) error {
	return plain(m, ctx, call{part: schedulePart(queue), item: name}, func() error { return m.store.DeleteSchedule(ctx, queue, name) })
}

func (m *Model) ListBatch(ctx context.Context, b engine.BatchRef, limit int) ([]job.Job, error) {
	return read(m, ctx, call{part: "status#" + b.Queue, item: "list", eventual: true}, func() ([]job.Job, error) { return m.store.ListBatch(ctx, b, limit) })
}
