package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// ErrNotRetryable: retry named a job that is not failed or cancelled: it
// waits or runs (it will end on its own), or it succeeded (a succeeded
// job is never run again; enqueue the work under a new id).
var ErrNotRetryable = errors.New("job is not failed or cancelled")

// NotRetryableError is Retry's refusal of one job: it names the job, the
// request field that named it and the status it is in. errors.Is matches
// ErrNotRetryable.
type NotRetryableError struct {
	Job    job.Ref
	Field  string
	Status job.Status
}

func (e *NotRetryableError) Error() string {
	return fmt.Sprintf("retry %s: job is %s; only failed or cancelled jobs are run again", e.Job, e.Status)
}

// Is reports whether target is ErrNotRetryable.
func (e *NotRetryableError) Is(target error) bool { return target == ErrNotRetryable }

// FieldError is an error about the value of one request field, named by
// its full path (job_ids[3]); the functions answer it with that field.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Retry bounds.
const (
	// MaxRetryIDs is the most jobs one Retry names.
	MaxRetryIDs = 100
	// DefaultRetryPage and MaxRetryPage bound one page of Retry with
	// Failed: the dead letters it lists and runs again.
	DefaultRetryPage = 100
	MaxRetryPage     = 500
)

// RetryRequest asks to run failed or cancelled jobs of a queue again:
// those named by IDs, or, with Failed, a page of the queue's dead letters
// (failed jobs) in ticket order.
type RetryRequest struct {
	Queue string
	// IDs names the jobs (at most MaxRetryIDs). Each must be failed or
	// cancelled, or the call is refused and runs none of them.
	IDs []string
	// Failed, instead of IDs, runs again the queue's failed jobs whose
	// tickets lie in (After, UpTo], at most Limit (default
	// DefaultRetryPage, at most MaxRetryPage) per call. UpTo 0 takes the
	// queue's ticket counter when the call begins, and the answer says
	// it: the next page passes it on with NextAfter, so a job that fails
	// again during a mass retry (its new ticket is above UpTo) is not
	// run again by the same retry.
	Failed bool
	After  int64
	UpTo   int64
	Limit  int
	// By says who asked, for the jobs' histories: up to 64 of
	// [A-Za-z0-9_.:/@+-]. Default "admin".
	By string
}

// RetryResult answers Retry (api.RetryResult, the type users decode):
// Skipped and NextAfter are for Failed.
type RetryResult = api.RetryResult

var byRE = regexp.MustCompile(`^[A-Za-z0-9_.:/@+-]{1,64}$`)

// Retry does Engine.Retry's work.
func (e *admin) Retry(ctx context.Context, r RetryRequest) (RetryResult, error) {
	if err := e.checkRetry(&r); err != nil {
		return RetryResult{}, err
	}
	q, err := e.Queue(ctx, r.Queue)
	if err != nil {
		return RetryResult{}, err
	}
	res := RetryResult{Queue: q.Name, Jobs: []Accepted{}}
	var jobs []job.Job
	if r.Failed {
		if r.UpTo == 0 {
			r.UpTo = q.State.Ticket
		}
		res.UpTo = r.UpTo
		page, err := e.state.ListJobs(ctx, ListRequest{Queue: q.Name, Gen: q.Gen, Status: job.Failed, After: r.After, Limit: r.Limit})
		if err != nil {
			return res, failure("retry", job.Ref{Queue: q.Name}, err)
		}
		if len(page) == r.Limit {
			res.NextAfter = page[len(page)-1].Ticket
		}
		for _, j := range page {
			if j.Ticket > r.UpTo {
				res.NextAfter = 0 // tickets come in order: the rest is above too
				break
			}
			// The index may lag: read the record itself.
			fresh, err := e.getJob(ctx, q, j.Ref())
			if errors.Is(err, ErrJobNotFound) || err == nil && fresh.Status != job.Failed {
				res.Skipped++
				continue
			}
			if err != nil {
				return res, failure("retry", j.Ref(), err)
			}
			jobs = append(jobs, fresh)
		}
	} else {
		for i, id := range r.IDs {
			k := job.Ref{Queue: q.Name, ID: id}
			j, err := e.getJob(ctx, q, k)
			if err != nil {
				return res, &FieldError{Field: fmt.Sprintf("job_ids[%d]", i), Err: failure("retry", k, err)}
			}
			if j.Status != job.Failed && j.Status != job.Cancelled {
				return res, &NotRetryableError{Job: k, Field: fmt.Sprintf("job_ids[%d]", i), Status: j.Status}
			}
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return res, nil
	}
	done, skipped, err := e.rerun(ctx, q, jobs, r.By)
	res.Skipped += skipped
	var room []job.Job
	for i, j := range done {
		a := answer(j, q.Settled(e.now()))
		if inRoom(j) {
			// A job run again goes through the waiting room as a new
			// one does, and is told so: its place and estimate. The
			// room is listed once for the call.
			if room == nil {
				var lerr error
				if room, lerr = e.room.listRoom(ctx, q); lerr != nil {
					return res, errors.Join(err, failure("retry", j.Ref(), lerr))
				}
			}
			answerInRoom(&a, e.room.placeIn(q, room, *done[i]))
		}
		res.Jobs = append(res.Jobs, a)
	}
	return res, err
}

// checkRetry validates r and fills its defaults.
func (e *admin) checkRetry(r *RetryRequest) error {
	if err := slot.ValidateName(r.Queue); err != nil {
		return err
	}
	if r.By == "" {
		r.By = "admin"
	}
	if !byRE.MatchString(r.By) {
		return input.Invalid("invalid_by", "by", "by names who asked: 1 to 64 of A-Z a-z 0-9 _ . : / @ + -")
	}
	switch {
	case r.Failed && len(r.IDs) > 0:
		return input.Invalid("invalid_retry", "job_ids", "give job ids or failed, not both")
	case !r.Failed && len(r.IDs) == 0:
		return input.Invalid("invalid_retry", "job_ids", "name the jobs to run again (job_ids), or give failed: true for the queue's failed jobs")
	case len(r.IDs) > MaxRetryIDs:
		return input.Invalid("too_many_jobs", "job_ids", fmt.Sprintf("at most %d job ids per call", MaxRetryIDs))
	}
	seen := map[string]bool{}
	for i, id := range r.IDs {
		field := fmt.Sprintf("job_ids[%d]", i)
		if err := job.ValidateID(id); err != nil {
			return input.Invalid(err.Code, field, err.Message)
		}
		if seen[id] {
			return input.Invalid("duplicate_id", field, fmt.Sprintf("job id %q is named twice", id))
		}
		seen[id] = true
	}
	if !r.Failed && (r.After != 0 || r.UpTo != 0 || r.Limit != 0) {
		field := "after"
		if r.UpTo != 0 {
			field = "up_to"
		} else if r.Limit != 0 {
			field = "limit"
		}
		return input.Invalid("invalid_retry", field, field+" pages the failed jobs: give it with failed: true")
	}
	switch {
	case r.After < 0:
		return input.Invalid("invalid_after", "after", "after must not be negative")
	case r.UpTo < 0:
		return input.Invalid("invalid_up_to", "up_to", "up_to must not be negative")
	case r.Limit < 0 || r.Limit > MaxRetryPage:
		return input.Invalid("invalid_limit", "limit", fmt.Sprintf("limit must be between 0 (the default, %d) and %d", DefaultRetryPage, MaxRetryPage))
	}
	if r.Failed && r.Limit == 0 {
		r.Limit = DefaultRetryPage
	}
	return nil
}

// rerun gives jobs (failed or cancelled records of q) new tickets at the
// end of the line, one take for all, and writes each back as queued or
// parked, as an enqueue does: keys counted pending, messages first,
// records after, each by compare-and-set from the version read. A job
// whose record moved meanwhile is skipped (its ticket stays unused, its
// message is dropped as stale, its key's count is given back).
func (e *admin) rerun(ctx context.Context, q Queue, read []job.Job, by string) (done []*job.Job, skipped int, err error) {
	return e.runAgain(ctx, q, read, by, true)
}

// runAgain is rerun; without again, the jobs are put back to waiting as
// they were before a cancel (a schedule's resume making again what its
// pause cancelled): an attempt they never began is not counted, nor a
// rerun.
func (e *admin) runAgain(ctx context.Context, q Queue, read []job.Job, by string, again bool) (done []*job.Job, skipped int, err error) {
	jobs := make([]*job.Job, len(read))
	from := make([]job.Version, len(read))
	for i := range read {
		j := read[i]
		from[i] = j.Version()
		if again {
			j.Reruns++
			j.RerunFrom = j.Attempt
			j.Attempt++
		}
		j.StartedAt, j.FinishedAt, j.ExpiresAt = time.Time{}, time.Time{}, time.Time{}
		j.Result, j.ResultDropped = nil, 0
		j.RetryAt = time.Time{} // run again on request: now, not after a backoff
		jobs[i] = &j
	}
	// On a bounded queue they go through the waiting room like new jobs
	// (waitroom.go).
	var keyAhead []int64
	spare := false
	if q.Config.Bounded() {
		if keyAhead, _, spare, err = e.room.admit(ctx, q, jobs); err != nil {
			return nil, 0, failure("retry", job.Ref{Queue: q.Name}, err)
		}
		if spare {
			defer e.room.bookNext(ctx, q)
		}
	}
	if _, err := e.enqueuer.assignSlots(ctx, &q, jobs, false, keyAhead, time.Time{}); err != nil {
		return nil, 0, failure("retry", job.Ref{Queue: q.Name}, err)
	}
	now := e.now()
	for _, j := range jobs {
		j.Order = j.Ticket // a new acceptance: at the end of the line, also for a pause
		j.Record(job.Event{At: now, Kind: job.Rerun, Ticket: j.Ticket, Attempt: j.Attempt, Reason: by})
		e.enqueuer.sendOrPark(j, q.State)
	}
	if _, err := e.enqueuer.countPending(ctx, q, jobs); err != nil {
		return nil, 0, fmt.Errorf("retry %s: %w", q.Name, err)
	}
	e.enqueuer.sendQueued(ctx, jobs)
	// landed[i] is false for a job another call moved first (a retry of
	// it racing this one, a cancel): what this call took for it (its
	// pending count, its booking, its place in the room) is given back.
	landed := make([]bool, len(jobs))
	for i, j := range jobs {
		err := e.state.UpdateJob(ctx, *j, from[i])
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
			skipped++
			continue
		}
		if err != nil {
			return done, skipped, fmt.Errorf("retry %s: %w", j.Ref(), err)
		}
		landed[i] = true
		done = append(done, j)
	}
	e.enqueuer.uncountLost(ctx, q, jobs, landed)
	if len(done) > 0 {
		if e.worker.expireIfDead(ctx, q.Name, q.Gen, done) > 0 {
			// Deleted since the tickets were taken: the parked ones
			// went with it, the queued ones go when their messages come.
			return nil, skipped, &NotFoundError{Queue: q.Name}
		}
		e.cancelPurgedMeanwhile(ctx, q, done)
	}
	for _, j := range done {
		e.log.InfoContext(ctx, "run again on request", "queue", q.Name, "job_id", j.ID, "ticket", j.Ticket,
			"attempt", j.Attempt, "slot_at", j.SlotAt, "by", by)
	}
	return done, skipped, nil
}

// cancelPurgedMeanwhile cancels the jobs among done that a purge covered after
// their tickets were taken and that rerun wrote parked: the purge lists
// the parked jobs it cancels, and may have listed before they were
// written. A queued one is cancelled at the gate (slot.Purged).
func (e *admin) cancelPurgedMeanwhile(ctx context.Context, q Queue, done []*job.Job) {
	parked := false
	for _, j := range done {
		parked = parked || j.Status == job.Parked
	}
	if !parked {
		return
	}
	fresh, err := e.state.GetQueue(ctx, q.Name)
	if err != nil || fresh.Gen != q.Gen {
		return
	}
	for _, j := range done {
		if j.Status != job.Parked || j.Ticket > fresh.State.Purged {
			continue
		}
		if err := e.cancel(ctx, q.Config, *j); err == nil {
			e.lanes.takeOffLanes(ctx, q, *j)
			j.Status = job.Cancelled
		}
	}
}
