package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/schedule"
)

// The resume function's side of the schedules: each pass over a schedule
// due makes its occurrences ahead, as jobs of its queue.

// runSchedules is a Resume run's work on the schedules due: a pass over
// each (runSchedule). They need no queue lease: the occurrence ids and
// each schedule's compare-and-set keep them once.
func (e *resumer) runSchedules(ctx context.Context, due []DueEntry, rep *ResumeReport) []error {
	if len(due) == 0 {
		return nil
	}
	st, err := e.admin.schedules()
	if err != nil {
		return []error{fmt.Errorf("resume: %w", err)}
	}
	var errs []error
	for _, d := range due {
		if !e.fits(ctx, e.opts.RecordTimeout) {
			rep.Deferred++
			rep.Backlog++
			continue
		}
		n, err := e.runSchedule(ctx, st, d.Queue, d.ID)
		rep.Occurrences += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// runSchedule is one pass over a schedule: it makes the occurrences from
// its Next up to a lead ahead of now into jobs (the missed ones, whose
// time passed, by its policy), MaxOccurrencesPerPass at most, and
// advances it past them, a batch at a time: enqueue, then one
// compare-and-set of the schedule from the version read. It returns how
// many occurrences it made. A schedule that moved meanwhile (another
// pass advanced it, a pause) is left to that writer.
func (e *resumer) runSchedule(ctx context.Context, st ScheduleState, queue, name string) (int, error) {
	s, err := st.GetSchedule(ctx, queue, name)
	if errors.Is(err, ErrScheduleNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("resume schedule %s/%s: %w", queue, name, err)
	}
	now := e.now()
	due := ScheduleDue(s)
	if due.IsZero() || due.After(now) {
		return 0, nil // moved on since its entry was read
	}
	q, err := e.state.GetQueue(ctx, queue)
	if errors.Is(err, ErrQueueNotFound) || err == nil && q.Gen != s.Gen {
		// Its queue was deleted: the schedule goes with it.
		return 0, st.DeleteSchedule(ctx, queue, name)
	}
	if err != nil {
		return 0, fmt.Errorf("resume schedule %s/%s: %w", queue, name, err)
	}
	spec := schedule.SpecOf(s.Spec)
	rule, err := spec.Compile()
	if err != nil {
		return 0, fmt.Errorf("resume schedule %s/%s: %w", queue, name, err)
	}
	times, next, skipped := e.occurrences(s, rule, now)
	made := 0
	for len(times) > 0 {
		n := min(len(times), job.MaxBatch)
		batch := times[:n]
		times = times[n:]
		after := next
		if len(times) > 0 {
			after = times[0]
		}
		msg, err := e.makeOccurrences(ctx, s, batch)
		if err != nil {
			return made, fmt.Errorf("resume schedule %s/%s: %w", queue, name, err)
		}
		from := s.Version
		s.Next, s.DueAt, s.Last, s.Error = after, e.admin.dueAt(after), batch[n-1], msg
		s.Made += int64(n)
		s.Skipped += skipped
		skipped = 0
		if msg != "" {
			s.Made -= int64(n)
			s.Skipped += int64(n)
		}
		if s, err = st.PutSchedule(ctx, s, from); err != nil {
			if errors.Is(err, ErrConflict) || errors.Is(err, ErrScheduleNotFound) {
				// Another pass advanced it, or it was paused or
				// deleted meanwhile: then the pause's own cancel may
				// have run before this batch was made.
				e.admin.cancelIfStopped(ctx, st, queue, name, batch)
				return made, nil
			}
			return made, fmt.Errorf("resume schedule %s/%s: %w", queue, name, err)
		}
		if msg == "" {
			made += n
		}
	}
	if !s.Next.Equal(next) || skipped > 0 {
		// Nothing to make (all missed ones skipped, or the schedule
		// ended): advance it alone.
		from := s.Version
		s.Next, s.DueAt = next, e.admin.dueAt(next)
		s.Skipped += skipped
		if _, err := st.PutSchedule(ctx, s, from); err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrScheduleNotFound) {
			return made, fmt.Errorf("resume schedule %s/%s: %w", queue, name, err)
		}
	}
	if made > 0 {
		e.log.InfoContext(ctx, "occurrences made", "queue", queue, "schedule", name, "occurrences", made, "next", next)
	}
	return made, nil
}

// occurrences are the times a pass over s makes at now, in order: the
// missed ones (at or before now) its policy keeps, then those up to a
// lead ahead, MaxOccurrencesPerPass at most; next, the first occurrence
// the pass leaves; skipped, the missed ones the policy drops.
func (e *resumer) occurrences(s Schedule, rule schedule.Rule, now time.Time) (times []time.Time, next time.Time, skipped int64) {
	next = s.Next
	if !next.IsZero() && !next.After(now) {
		keep := 0
		spec := schedule.SpecOf(s.Spec)
		switch spec.MissedPolicy() {
		case schedule.MissedLatest:
			keep = 1
		case schedule.MissedAll:
			keep = schedule.MaxMissed
		}
		var count int64
		times, count, next = rule.Missed(next, now, keep)
		skipped = count - int64(len(times))
		// A job's not_before lies within a year of now.
		for len(times) > 0 && times[0].Before(now.Add(-job.MaxNotBefore)) {
			times, skipped = times[1:], skipped+1
		}
	}
	horizon := now.Add(e.admin.scheduleLead())
	for !next.IsZero() && !next.After(horizon) && len(times) < MaxOccurrencesPerPass {
		times = append(times, next)
		next = rule.Next(next)
	}
	return times, next, skipped
}

// makeOccurrences enqueues the jobs of s's occurrences at times. An
// occurrence made before (by a pass that crashed before advancing the
// schedule, or a concurrent one) answers with its job, and nothing new is
// written. A refusal of the job itself (its kind no longer known, its
// target no longer allowed) is returned as msg, for the schedule's
// record: those occurrences are skipped, not tried again every run.
func (e *resumer) makeOccurrences(ctx context.Context, s Schedule, times []time.Time) (msg string, err error) {
	specs := make([]job.Spec, len(times))
	for i, t := range times {
		nb := t
		specs[i] = job.Spec{
			ID: schedule.OccurrenceID(s.Name, t), Kind: s.Spec.Job.Kind, Target: s.Spec.Job.Target,
			Payload: s.Spec.Job.Payload, Key: s.Spec.Job.Key, NotBefore: &nb,
		}
	}
	res, err := e.enqueuer.Enqueue(ctx, job.EnqueueRequest{Queue: s.Queue, Jobs: specs, Occurrences: true})
	var ie *input.Error
	if errors.As(err, &ie) {
		e.log.WarnContext(ctx, "schedule's occurrences refused; skipped", "queue", s.Queue, "schedule", s.Name, "error", ie.Error())
		return ie.Error(), nil
	}
	if err != nil {
		return "", err
	}
	return "", e.makeAgain(ctx, s, res)
}

// makeAgain puts back to waiting the occurrences of an enqueue (res)
// that were made before and cancelled by the schedule's pause: the pause
// went back to before them, and this pass makes them.
func (e *resumer) makeAgain(ctx context.Context, s Schedule, res EnqueueResult) error {
	var again []job.Job
	var q Queue
	for _, a := range res.Jobs {
		if !a.Existing || a.Status != job.Cancelled {
			continue
		}
		if q.Name == "" {
			var err error
			if q, err = e.admin.Queue(ctx, s.Queue); err != nil {
				return err
			}
		}
		j, err := e.admin.getJob(ctx, q, job.Ref{Queue: s.Queue, ID: a.JobID})
		if err != nil {
			return fmt.Errorf("occurrence %s: %w", a.JobID, err)
		}
		if n := len(j.History); j.Status == job.Cancelled && n > 0 && j.History[n-1].Kind == job.CancelledEvent && j.History[n-1].Reason == reasonPaused {
			again = append(again, j)
		}
	}
	if len(again) == 0 {
		return nil
	}
	_, _, err := e.admin.runAgain(ctx, q, again, "schedule:"+s.Name, false)
	return err
}
