package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// Debounce: a job enqueued with a debounce key (api.Spec.DebounceKey)
// while another job of its queue and key waits for its debounce to end
// joins that job instead of making one. The key's shared state is one
// item per queue and debounce key (Debounce), and each step is one
// conditional write on it:
//
//   - join (enqueue): if the item is open and its Until is after now, it
//     takes the joiner's payload and Until moves to now + debounce;
//   - open (enqueue, when no join was possible): the new job's record is
//     written first (held until its debounce ends, as a not_before holds
//     a job), then the item is opened for it, so that no join is ever
//     answered for a job that does not exist;
//   - close (the job's worker, when its message comes and Until has
//     passed): the item closes and hands over its last payload, which the
//     job's record takes as the job takes a new ticket at the end of the
//     line (worker.reticket); then the item is deleted.
//
// A join and a close are each one conditional write on the same item, so
// they cannot both win: a join that comes after the close fails and
// makes a debounce of its own.
//
// A job whose open lost (another job's item was there, and not
// joinable), or whose enqueue crashed before the open, owns no item: it
// runs alone, with its own payload, when its debounce ends. An item is
// replaced only when its job no longer needs it (replaceable).

// Debounce is a debounce key's item: the job that waits for its
// debounce to end, when it ends, and the last payload enqueued for it.
type Debounce struct {
	Queue string
	Gen   int64
	Key   string
	// JobID is the job that will start; empty for no item.
	JobID string
	// Until is when the debounce ends: the last join's time plus its
	// debounce.
	Until   time.Time
	Payload json.RawMessage
	// Closed: the job's worker took the payload; no join lands any more.
	Closed bool
}

// Same reports whether d and o are one state of an item: the same job,
// end and closing (what an open's condition compares).
func (d Debounce) Same(o Debounce) bool {
	return d.JobID == o.JobID && d.Gen == o.Gen && d.Until.Equal(o.Until) && d.Closed == o.Closed
}

// DebounceStore keeps the debounce items, one per queue and debounce
// key, apart from the queue's state. internal/memstore and
// internal/dynamostore implement it; the engine finds it on its State
// (a State that lacks it refuses debounced jobs: ErrNoDebounce). Each
// write is one conditional write on one item.
type DebounceStore interface {
	// GetDebounce reads queue's item of debounce key, strongly; one that
	// does not exist is returned with an empty JobID.
	GetDebounce(ctx context.Context, queue, key string) (Debounce, error)
	// OpenDebounce stores d if the stored item is still prev (Same; an
	// empty prev.JobID: none is stored). ErrConflict otherwise.
	OpenDebounce(ctx context.Context, d, prev Debounce) error
	// JoinDebounce sets the item of d.Queue and d.Key to d.Until and
	// d.Payload if it is of generation d.Gen, not closed, and its Until
	// is after now, and returns it as stored (JobID the job joined).
	// ErrConflict otherwise.
	JoinDebounce(ctx context.Context, d Debounce, now time.Time) (Debounce, error)
	// CloseDebounce closes the item of queue and key if it is jobID's,
	// not closed, and its Until is not after now, and returns it as
	// stored: its last payload. An item closed by jobID already is
	// returned as it is (a close sent again). ErrConflict otherwise.
	CloseDebounce(ctx context.Context, queue, key, jobID string, now time.Time) (Debounce, error)
	// DeleteDebounce deletes the item of queue and key if it is jobID's
	// and closed; otherwise nothing changes.
	DeleteDebounce(ctx context.Context, queue, key, jobID string) error
}

// ErrNoDebounce is the error of a debounced job enqueued on an engine
// whose State keeps no debounce items (DebounceStore).
var ErrNoDebounce = errors.New("this state store keeps no debounces")

// debounceTries bounds a worker's closes that lose to joins in a row
// before it lets its message come again.
const debounceTries = 10

// debounceLook is the shortest time between two looks for the item of a
// job that has none yet (awaitDebounce).
const debounceLook = 100 * time.Millisecond

// debounceNap is the longest wait for a debounce's end a worker sleeps
// in its invocation; a longer one sends the message back to come then.
const debounceNap = 2 * time.Second

func (c *core) debounces() (DebounceStore, bool) {
	ds, ok := c.state.(DebounceStore)
	return ds, ok
}

// checkDebounce refuses a debounced spec the engine cannot keep: on a
// store without debounce items, or on a bounded queue (its waiting room
// books jobs that hold a ticket, which a debounced job takes only when
// its debounce ends).
func (e *enqueuer) checkDebounce(cfg slot.Config, req job.EnqueueRequest, specs []job.Spec) error {
	for i, s := range specs {
		if s.DebounceKey == "" {
			continue
		}
		field := req.SpecField(i, "debounce_key")
		if _, ok := e.debounces(); !ok {
			return fmt.Errorf("%s: %w", field, ErrNoDebounce)
		}
		if cfg.Bounded() {
			return input.Invalid("debounce_not_allowed", field, fmt.Sprintf("queue %s has a waiting room (book_ahead or key_book_ahead), which does not take debounced jobs: enqueue them to a queue without one", req.Queue))
		}
	}
	return nil
}

// joinDebounce joins s, a debounced spec, to the job of its debounce key
// that waits, if one does: made's (a job this call makes) or the
// store's. joined, a is the answer, and no job is made of s.
func (e *enqueuer) joinDebounce(ctx context.Context, q Queue, s job.Spec, now time.Time, made map[string]*job.Job) (a Accepted, joined bool, err error) {
	a = Accepted{JobID: s.ID, Status: api.StatusDebounced}
	if a.JobID == "" {
		a.JobID = job.NewID()
	}
	until := now.Add(s.DebounceFor())
	if j := made[s.DebounceKey]; j != nil {
		j.Payload, j.NotBefore = s.Payload, until
		a.DebouncedInto = j.ID
		return a, true, nil
	}
	ds, _ := e.debounces()
	now = e.now() // the call's reads came first: the debounce runs from its join
	d, err := ds.JoinDebounce(ctx, Debounce{Queue: q.Name, Gen: q.Gen, Key: s.DebounceKey, Until: now.Add(s.DebounceFor()), Payload: s.Payload}, now)
	if errors.Is(err, ErrConflict) {
		return a, false, nil
	}
	if err != nil {
		return a, false, fmt.Errorf("join debounce %s: %w", s.DebounceKey, err)
	}
	a.DebouncedInto = d.JobID
	return a, true, nil
}

// holdForDebounce holds j, made of the debounced spec s, until its
// debounce ends, as a not_before would: its worker then closes the
// debounce (worker.endDebounce).
func holdForDebounce(j *job.Job, s job.Spec, now time.Time, made map[string]*job.Job) {
	j.DebounceKey, j.NotBefore = s.DebounceKey, now.Add(s.DebounceFor())
	made[s.DebounceKey] = j
}

// openDebounces opens the debounce items of the debounced jobs among
// jobs whose records were created: each the item of its key, unless
// another job's stands there that is not replaceable. Such a job runs
// alone (runAlone).
func (e *enqueuer) openDebounces(ctx context.Context, q Queue, jobs []*job.Job, created []bool) error {
	for k, j := range jobs {
		if j.DebounceKey == "" || !created[k] {
			continue
		}
		opened, err := e.openDebounce(ctx, q, j)
		if err != nil {
			return fmt.Errorf("enqueue %s: open debounce %s: %w", q.Name, j.DebounceKey, err)
		}
		if !opened {
			e.runAlone(ctx, j)
		}
	}
	return nil
}

// openDebounce opens the item of j's debounce key for j, and reports
// whether it did. The item's debounce runs from the open, a full period
// after the call's writes (on a slow store they may take much of it):
// j's worker, come at its not_before, waits for the item's end.
func (e *enqueuer) openDebounce(ctx context.Context, q Queue, j *job.Job) (bool, error) {
	ds, _ := e.debounces()
	prev, err := ds.GetDebounce(ctx, q.Name, j.DebounceKey)
	if err != nil {
		return false, err
	}
	if prev.JobID != "" && !e.replaceable(ctx, prev) {
		return false, nil
	}
	until := e.now().Add(j.NotBefore.Sub(j.EnqueuedAt)) // its debounce, from now
	d := Debounce{Queue: q.Name, Gen: q.Gen, Key: j.DebounceKey, JobID: j.ID, Until: until, Payload: j.Payload}
	err = ds.OpenDebounce(ctx, d, prev)
	if errors.Is(err, ErrConflict) {
		return false, nil // another enqueue's came first
	}
	return err == nil, err
}

// runAlone clears the debounce key of j, whose open lost: no job joins
// it, and it starts at its not_before, as a job held by one, with its
// own payload (the last of those its call folded into it). A failed
// write leaves it to its worker, which ends its debounce alone once its
// enqueue is surely over (awaitDebounce).
func (e *enqueuer) runAlone(ctx context.Context, j *job.Job) {
	alone := *j
	alone.DebounceKey = ""
	if err := e.state.UpdateJob(ctx, alone, j.Version()); err != nil {
		e.log.DebugContext(ctx, "debounce left to the worker", "queue", j.Queue, "job_id", j.ID, "error", err.Error())
		return
	}
	j.DebounceKey = ""
}

// replaceable reports whether the item d is no longer its job's: of
// another generation, or its job is gone, finished, or past its
// debounce (its record took the payload). An open item whose Until
// passed is still its job's, whose worker will close it: replacing it
// would lose the payload its last join left.
func (e *enqueuer) replaceable(ctx context.Context, d Debounce) bool {
	j, err := e.state.GetJob(ctx, job.Ref{Queue: d.Queue, ID: d.JobID})
	switch {
	case errors.Is(err, ErrJobNotFound):
		return true
	case err != nil:
		return false
	}
	return j.Gen != d.Gen || j.Status.Final() || j.DebounceKey == ""
}

// awaitDebounce is a debounced job's step before the gate, as its
// message comes: it sends the message back while the debounce runs, and
// once it has ended closes it, the job taking the last payload and a
// new ticket at the end of the line (endDebounce). The message is then
// done with: the new ticket's brings the job to the gate.
func (d *delivery) awaitDebounce(ctx context.Context) (next, error) {
	e, j := d.e, &d.j
	ds, ok := e.debounces()
	if !ok {
		return stop, e.endDebounce(ctx, j, j.Payload, nil)
	}
	for lost := 0; lost < debounceTries; {
		it, err := ds.GetDebounce(ctx, j.Queue, j.DebounceKey)
		if err != nil {
			return stop, fmt.Errorf("work %s: read debounce: %w", j.Ref(), err)
		}
		now := e.now()
		var wake time.Time
		switch {
		case it.JobID != j.ID || it.Gen != j.Gen:
			// No item of its own: its enqueue crashed before the open,
			// or is still on its way to it (a slow store). It runs
			// alone once its enqueue is surely over: ended before the
			// open, the joins the item then takes would go to a job
			// that no longer waits for them.
			over := j.EnqueuedAt.Add(e.opts.RecordGrace)
			if !now.Before(over) {
				return stop, e.endDebounce(ctx, j, j.Payload, nil)
			}
			wake = earlierOf(over, now.Add(max(j.NotBefore.Sub(j.EnqueuedAt), debounceLook)))
		case it.Closed:
			return stop, e.endDebounce(ctx, j, it.Payload, ds) // closed before a crash
		case it.Until.After(now):
			wake = it.Until
		}
		if !wake.IsZero() {
			wait := wake.Sub(now)
			if wait > debounceNap || !e.fits(ctx, wait) {
				return stop, e.comeBackAt(ctx, j, wake)
			}
			if err := clock.Sleep(ctx, wait); err != nil {
				return stop, fmt.Errorf("work %s: wait for debounce: %w", j.Ref(), err)
			}
			continue
		}
		it, err = ds.CloseDebounce(ctx, j.Queue, j.DebounceKey, j.ID, now)
		if errors.Is(err, ErrConflict) {
			lost++ // a join moved it on meanwhile
			continue
		}
		if err != nil {
			return stop, fmt.Errorf("work %s: close debounce: %w", j.Ref(), err)
		}
		return stop, e.endDebounce(ctx, j, it.Payload, ds)
	}
	return stop, fmt.Errorf("work %s: debounce %s: joined %d times while closing", j.Ref(), j.DebounceKey, debounceTries)
}

// comeBackAt sends j's message again to come at until (or at the
// transport's longest delay): a debounce's wait, which is no send-back
// toward failure (job.Job.SentBack does not count it).
func (e *worker) comeBackAt(ctx context.Context, j *job.Job, until time.Time) error {
	env := j.Envelope()
	env.SentAt = e.now()
	wait := min(until.Sub(env.SentAt), e.transport.MaxDelay())
	if err := e.transport.Send(ctx, []Message{{Envelope: env, Delay: wait}}); err != nil {
		return fmt.Errorf("work %s: debounce: %w", j.Ref(), err)
	}
	e.log.DebugContext(ctx, "debounce goes on", "queue", j.Queue, "job_id", j.ID, "debounce_key", j.DebounceKey, "until", until)
	return nil
}

// endDebounce ends j's debounce: its record takes payload, its debounce
// key is cleared, and it takes a new ticket at the end of the line
// (worker.reticket, one write of the record), then its item (of ds, if
// it had one) is deleted. A crash before the record's write leaves the
// item closed, and the message, coming again, ends the debounce again
// with the item's payload.
func (e *worker) endDebounce(ctx context.Context, j *job.Job, payload json.RawMessage, ds DebounceStore) error {
	q, err := e.state.GetQueue(ctx, j.Queue)
	if err != nil && !errors.Is(err, ErrQueueNotFound) {
		return fmt.Errorf("work %s: %w", j.Ref(), err)
	}
	if err != nil || q.Gen != j.Gen {
		return e.expireOfDeletedQueue(ctx, *j)
	}
	key := j.DebounceKey
	j.Payload, j.DebounceKey = payload, ""
	if err := e.reticket(ctx, &q, j, passedByLater); err != nil {
		return err
	}
	if ds == nil {
		return nil
	}
	if err := ds.DeleteDebounce(ctx, j.Queue, key, j.ID); err != nil {
		e.log.WarnContext(ctx, "debounce item left closed", "queue", j.Queue, "debounce_key", key, "job_id", j.ID, "error", err.Error())
	}
	return nil
}
