package memstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

var _ engine.State = (*Store)(nil)

// defaultListLimit is ListJobs' cap when the request gives none.
const defaultListLimit = 100

// Options configures a Store.
type Options struct {
	// Now is the clock the store uses to hide expired jobs (job.Expired)
	// from GetJob, ListJobs and CountJobs. Default time.Now. Every other
	// time comes from the request.
	Now func() time.Time
}

// Store is an engine.State held in memory. It is safe for use by many
// goroutines: one mutex makes every method atomic. Records go in and come
// out as copies, so callers may change what they passed or got.
type Store struct {
	now func() time.Time

	mu     sync.Mutex
	queues map[string]engine.Queue
	jobs   map[string]map[string]job.Job // queue → id → job
	leases map[string]lease              // queue → its resume lease
	lanes  map[laneID]slot.Lane
	// laneTop is the highest version any lane has had, deleted lanes'
	// included: a lane created starts above it, so a lane's versions never
	// repeat after a delete (engine.State.GetLane), and the store keeps
	// one number, not one per deleted lane.
	laneTop int64
	// meters are the keys' meters (slot.Meter), and meterTop the highest
	// version any has had.
	meters   map[laneID]meterRec
	meterTop int64
	// horizons are the queues' booking horizons (slot.Horizon), and
	// horizonTop the highest version any has had.
	horizons   map[string]slot.Horizon
	horizonTop int64
	// due is the due index over the records above (engine.DueEntry),
	// kept in the same step as each write, and room the waiting rooms'
	// index over the jobs.
	due  *dueIndex
	room roomIndex
	// schema is the schema mark (engine.Schema).
	schema engine.Schema
	// schedules are the queues' schedules (schedules.go), made on first use.
	schedules map[scheduleID]engine.Schedule
	// debounces are the debounce keys' items (debounce.go), made on
	// first use.
	debounces map[debounceID]engine.Debounce
}

// Schema returns the schema mark.
func (s *Store) Schema(context.Context) (engine.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.schema, nil
}

// PutSchema writes the schema mark if it is still from. ErrConflict.
func (s *Store) PutSchema(_ context.Context, sc, from engine.Schema) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.schema != from {
		return fmt.Errorf("put schema: %w", engine.ErrConflict)
	}
	s.schema = sc
	return nil
}

// lease is a queue's resume lease and the cursor left with it.
type lease struct {
	holder string
	until  time.Time
	cursor engine.Cursor
}

// New returns an empty Store.
func New(opts Options) *Store {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{
		now:    opts.Now,
		queues: make(map[string]engine.Queue),
		jobs:   make(map[string]map[string]job.Job),
		leases: make(map[string]lease),
		lanes:  make(map[laneID]slot.Lane),
		meters: make(map[laneID]meterRec),
		due:    newDueIndex(),
		room:   roomIndex{},
		// An embedded store is new: its records are of the current
		// layout from the start.
		schema: engine.Schema{Version: engine.SchemaVersion},
	}
}

// Lease takes queue's resume lease for holder until until if nobody else
// holds it at now, and returns the cursor left with it. ErrLeaseHeld.
func (s *Store) Lease(_ context.Context, queue, holder string, until, now time.Time) (engine.Cursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.leases[queue]
	if l.holder != "" && l.holder != holder && now.Before(l.until) {
		return engine.Cursor{}, fmt.Errorf("lease %s: %w", queue, engine.ErrLeaseHeld)
	}
	l.holder, l.until = holder, until
	s.leases[queue] = l
	return l.cursor, nil
}

// ReleaseLease frees holder's lease of queue, leaving c. ErrLeaseHeld if
// holder does not hold it.
func (s *Store) ReleaseLease(_ context.Context, queue, holder string, c engine.Cursor) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[queue]
	if !ok || l.holder != holder {
		return fmt.Errorf("release lease %s: %w", queue, engine.ErrLeaseHeld)
	}
	s.leases[queue] = lease{cursor: c}
	s.due.set(dueID{engine.DueRound, queue, ""}, c.Round)
	return nil
}

// CreateQueue stores q with a zero state. ErrQueueExists if q.Name is taken.
func (s *Store) CreateQueue(_ context.Context, q engine.Queue) error {
	if err := slot.ValidateName(q.Name); err != nil {
		return fmt.Errorf("create queue: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[q.Name]; ok {
		return fmt.Errorf("create queue %s: %w", q.Name, engine.ErrQueueExists)
	}
	q.State = slot.State{}
	s.queues[q.Name] = copyQueue(q)
	return nil
}

// GetQueue returns a queue. ErrQueueNotFound.
func (s *Store) GetQueue(_ context.Context, name string) (engine.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return engine.Queue{}, notFound("get queue", name)
	}
	return copyQueue(q), nil
}

// ListQueues returns every queue, in name order.
func (s *Store) ListQueues(context.Context) ([]engine.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]engine.Queue, 0, len(s.queues))
	for _, q := range s.queues {
		out = append(out, copyQueue(q))
	}
	slices.SortFunc(out, func(a, b engine.Queue) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// SetConfig replaces a queue's configuration. ErrQueueNotFound.
func (s *Store) SetConfig(_ context.Context, name string, cfg slot.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return notFound("set config", name)
	}
	q.Config = cfg
	s.queues[name] = copyQueue(q)
	return nil
}

// Pause sets the pause flag and PausedUntil (zero: until resumed).
// ErrQueueNotFound.
func (s *Store) Pause(_ context.Context, name string, until time.Time) (slot.State, error) {
	return s.updateQueue("pause", name, 0, func(q *engine.Queue) error {
		if !q.State.Paused {
			q.State.PausedAt = s.now()
		}
		q.State.Paused = true
		q.State.PausedUntil = until
		s.due.set(dueID{engine.DueLift, name, ""}, engine.QueueDue(q.State))
		return nil
	})
}

// Unpause clears the pause flag. With a non-zero ifUntil it does so only if
// the queue is paused with exactly that PausedUntil. It reports whether it
// lifted a pause. ErrQueueNotFound.
func (s *Store) Unpause(_ context.Context, name string, ifUntil time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return false, notFound("unpause", name)
	}
	if !q.State.Paused {
		return false, nil
	}
	if !ifUntil.IsZero() && !q.State.PausedUntil.Equal(ifUntil) {
		return false, nil
	}
	q.State.Paused = false
	q.State.PausedUntil, q.State.PausedAt = time.Time{}, time.Time{}
	s.queues[name] = q
	s.due.set(dueID{engine.DueLift, name, ""}, time.Time{})
	return true, nil
}

// Purge sets Purged to Ticket. ErrQueueNotFound.
func (s *Store) Purge(_ context.Context, name string) (slot.State, error) {
	return s.updateQueue("purge", name, 0, func(q *engine.Queue) error {
		q.State.Purged = q.State.Ticket
		return nil
	})
}

// DeleteQueue removes a queue's record and its resume lease; its jobs
// stay, in a generation no queue has. ErrQueueNotFound.
func (s *Store) DeleteQueue(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[name]; !ok {
		return notFound("delete queue", name)
	}
	delete(s.queues, name)
	delete(s.leases, name)
	s.due.set(dueID{engine.DueLift, name, ""}, time.Time{})
	s.due.set(dueID{engine.DueRound, name, ""}, time.Time{})
	s.due.set(roomDueID(name), time.Time{})
	return nil
}

// Take hands out r.N tickets by slot.Take. ErrQueueNotFound (also for
// a queue of another generation than r.Gen), or
// ErrLimitChanged if r's limits are not the queue's.
func (s *Store) Take(_ context.Context, r engine.TakeRequest) (engine.Taken, error) {
	if err := r.Check(); err != nil {
		return engine.Taken{}, err
	}
	tk := engine.Taken{}
	st, err := s.updateQueue("take ticket", r.Queue, r.Gen, func(q *engine.Queue) error {
		if q.Config.LimitList().Signature() != r.LimitList().Signature() {
			return fmt.Errorf("take ticket %s: %w", r.Queue, engine.ErrLimitChanged)
		}
		q.State, tk = r.Apply(q.State)
		return nil
	})
	if err != nil {
		return engine.Taken{}, err
	}
	tk.State = st
	return tk, nil
}

// Gate applies r.Decide and, when it says Start, r.Started to the queue's
// state. ErrQueueNotFound; ErrLimitChanged if r's limits are
// not the queue's; a *engine.GateError when the gate says no.
func (s *Store) Gate(_ context.Context, r engine.GateRequest) (slot.State, error) {
	return s.updateQueue("gate", r.Queue, r.Gen, func(q *engine.Queue) error {
		if q.Config.LimitList().Signature() != r.LimitList().Signature() {
			return fmt.Errorf("gate %s ticket %d: %w", r.Queue, r.Ticket, engine.ErrLimitChanged)
		}
		if v, openAt := r.Decide(q.State); v != slot.Start {
			return &engine.GateError{Verdict: v, OpenAt: openAt, State: copyState(q.State)}
		}
		q.State = r.Started(q.State)
		return nil
	})
}

// Admit is the gate of a booked start (engine.AdmitRequest): a read of
// the queue, no write.
func (s *Store) Admit(ctx context.Context, r engine.AdmitRequest) (engine.Queue, error) {
	return r.Admitted(s.GetQueue(ctx, r.Queue))
}

// CreateJobs stores new jobs; created[i] is false where the key existed in
// the job's generation, and that record is left alone. A record of another
// generation is replaced.
func (s *Store) CreateJobs(_ context.Context, jobs []job.Job) ([]bool, error) {
	for i := range jobs {
		if jobs[i].Queue == "" || jobs[i].ID == "" {
			return nil, fmt.Errorf("create jobs: jobs[%d] has no queue or id", i)
		}
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	created := make([]bool, len(jobs))
	for i, j := range jobs {
		byID := s.jobs[j.Queue]
		if byID == nil {
			byID = make(map[string]job.Job)
			s.jobs[j.Queue] = byID
		}
		if old, ok := byID[j.ID]; ok && !old.Expired(now) && (j.Gen == 0 || old.Gen != 0 && !engine.GenBefore(old.Gen, j.Gen)) {
			// Its own generation's, or a newer one's: an enqueue of a
			// deleted generation never replaces the job of the queue
			// created again (generations are ordered). An expired job
			// is absent, as GetJob says.
			continue
		}
		var was *job.Job
		if old, ok := byID[j.ID]; ok {
			was = &old
		}
		byID[j.ID] = copyJob(j)
		s.due.set(jobDueID(j), engine.JobDue(j))
		s.room.set(was, j)
		created[i] = true
	}
	return created, nil
}

// GetJob returns a job. ErrJobNotFound, also for an expired one.
func (s *Store) GetJob(_ context.Context, k job.Ref) (job.Job, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[k.Queue][k.ID]
	if !ok || j.Expired(now) {
		return job.Job{}, fmt.Errorf("get job %s: %w", k, engine.ErrJobNotFound)
	}
	return copyJob(j), nil
}

// UpdateJob replaces a job if it is still at version from. ErrConflict, or
// ErrJobNotFound if there is no such job; job.ErrIllegalMove, and nothing
// written, for a status change job.CanMove does not allow.
func (s *Store) UpdateJob(_ context.Context, j job.Job, from job.Version) error {
	if err := job.CheckMove(from.Status, j.Status); err != nil {
		return fmt.Errorf("update job %s/%s: %w", j.Queue, j.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.jobs[j.Queue][j.ID]
	if !ok {
		return fmt.Errorf("update job %s/%s: %w", j.Queue, j.ID, engine.ErrJobNotFound)
	}
	if old.Version() != from {
		return fmt.Errorf("update job %s/%s: %w", j.Queue, j.ID, engine.ErrConflict)
	}
	s.jobs[j.Queue][j.ID] = copyJob(j)
	s.due.set(jobDueID(j), engine.JobDue(j))
	s.room.set(&old, j)
	return nil
}

// ListJobs returns up to r.Limit (default 100) unexpired jobs of one queue,
// generation and status with tickets above r.After, by ticket ascending
// (then id).
func (s *Store) ListJobs(_ context.Context, r engine.ListRequest) ([]job.Job, error) {
	if !r.Status.Listed() {
		return nil, fmt.Errorf("list jobs %s/%s: %w", r.Queue, r.Status, engine.ErrNotListed)
	}
	limit := r.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	now := s.now()
	s.mu.Lock()
	var out []job.Job
	for _, j := range s.jobs[r.Queue] {
		if j.Gen == r.Gen && j.Status == r.Status && j.Ticket > r.After && !j.Expired(now) {
			out = append(out, j)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b job.Job) int {
		return cmp.Or(cmp.Compare(a.Ticket, b.Ticket), cmp.Compare(a.ID, b.ID))
	})
	out = out[:min(len(out), limit)]
	for i := range out {
		out[i] = copyJob(out[i])
	}
	return out, nil
}

// Jobs returns every job of a queue, whatever its status, in ticket
// order. It is the embedded store's own view for demos and tests: the
// engine.State contract lists only job.Status.Listed statuses.
func (s *Store) Jobs(queue string) []job.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]job.Job, 0, len(s.jobs[queue]))
	for _, j := range s.jobs[queue] {
		out = append(out, copyJob(j))
	}
	slices.SortFunc(out, func(a, b job.Job) int { return cmp.Compare(a.Ticket, b.Ticket) })
	return out
}

// AllFinal reports whether every job of one queue has reached a final
// status. It copies nothing, so a caller may poll it while workers run:
// the store's lock is held for a scan of the statuses alone.
func (s *Store) AllFinal(queue string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs[queue] {
		if !j.Status.Final() {
			return false
		}
	}
	return true
}

// CountJobs counts the unexpired jobs of one queue, generation and status.
func (s *Store) CountJobs(_ context.Context, queue string, gen int64, status job.Status) (int, error) {
	if !status.Listed() {
		return 0, fmt.Errorf("count jobs %s/%s: %w", queue, status, engine.ErrNotListed)
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, j := range s.jobs[queue] {
		if j.Gen == gen && j.Status == status && !j.Expired(now) {
			n++
		}
	}
	return n, nil
}

func notFound(op, name string) error {
	return fmt.Errorf("%s %s: %w", op, name, engine.ErrQueueNotFound)
}

// updateQueue runs change on the queue called name under the store's
// lock and keeps what it leaves there, unless it fails: the queue's
// read, change and write of Take, Gate, Reconfigure, SlowDown, Pause
// and Purge.
// ErrQueueNotFound when there is no such queue, or it is of another
// generation than gen (0, or a queue of generation 0, matches any).
func (s *Store) updateQueue(op, name string, gen int64, change func(q *engine.Queue) error) (slot.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok || gen != 0 && q.Gen != 0 && q.Gen != gen {
		return slot.State{}, notFound(op, name)
	}
	if err := change(&q); err != nil {
		return slot.State{}, err
	}
	s.queues[name] = q
	return copyState(q.State), nil
}

func copyQueue(q engine.Queue) engine.Queue {
	q.Config.Targets = slices.Clone(q.Config.Targets)
	q.State = copyState(q.State)
	if q.Rebooked != nil {
		r := *q.Rebooked
		r.Base, r.LineBase = copyState(r.Base), copyState(r.LineBase)
		q.Rebooked = &r
	}
	return q
}

// copyState copies the one part of a state that is shared by reference:
// its running places.
func copyState(s slot.State) slot.State {
	if s.Running != nil {
		s.Running = maps.Clone(s.Running)
	}
	if s.Marks != nil {
		s.Marks = slices.Clone(s.Marks)
		for i, m := range s.Marks {
			s.Marks[i].Starts, s.Marks[i].Booked = slices.Clone(m.Starts), slices.Clone(m.Booked)
		}
	}
	return s
}

func copyJob(j job.Job) job.Job {
	j.Payload = slices.Clone(j.Payload)
	j.Result = slices.Clone(j.Result)
	return j
}
