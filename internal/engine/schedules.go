package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/schedule"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// Schedules: recurring rules on a queue whose occurrences become jobs
// (docs/schedules.md). A schedule is one record in the store, in the due
// index at DueAt, a lead (Options.ScheduleLead) before its next
// occurrence. The resume run that finds it due makes every occurrence up
// to a lead ahead of now into a job, by an ordinary enqueue with the
// occurrence's id (schedule.OccurrenceID) and not_before its time, so
// the job is sent with the delay that lands it on its millisecond and
// passes the gate like any job; then one conditional write advances the
// schedule from the occurrence it read to the one after those it made,
// which moves its entry in the due index. A crash between the two leaves
// the schedule where it was: the next run enqueues the same ids, which
// answer with the jobs already made (nothing new is written), and
// advances it. Of concurrent runs, the ids make one job per occurrence
// and the condition lets one advance.

// DueSchedule: a schedule's next occurrence comes within its lead
// (ScheduleDue). ID is the schedule's name.
const DueSchedule DueKind = "schedule"

// Errors of schedules.
var (
	// ErrScheduleNotFound: no schedule of that queue and name.
	ErrScheduleNotFound = errors.New("schedule not found")
	// ErrScheduleExists: CreateSchedule found one of that name.
	ErrScheduleExists = errors.New("schedule already exists")
	// ErrNoSchedules: the state store keeps no schedules
	// (ScheduleState).
	ErrNoSchedules = errors.New("this store keeps no schedules")
)

// Defaults of schedules.
const (
	// DefaultScheduleLead is Options.ScheduleLead's default: two runs of
	// the resume function's one-minute schedule, so an occurrence is
	// made by the run a minute or two before it, and one run may be late
	// or fail without making it late.
	DefaultScheduleLead = 2 * time.Minute
	// MaxOccurrencesPerPass bounds the occurrences one pass over a
	// schedule makes; what is left stays due for the next run.
	MaxOccurrencesPerPass = 500
)

// Schedule is a schedule as stored, api.Schedule, the admin function's
// answer. Gen is the generation of the queue it was created on: a queue
// deleted and created again under the name has none of its schedules.
// Spec is the spec CreateSchedule validated; schedule.SpecOf gives its
// rule. Paused: no occurrence is made until it is resumed; those whose
// time passes meanwhile follow the spec's missed policy. Next is the
// first occurrence not made yet, zero once the schedule has ended (its
// end passed); DueAt when the resume function makes Next, a lead before
// it, zero while paused or ended (ScheduleDue). Last is the latest
// occurrence made; Made counts them and Skipped the missed ones the
// policy skipped. Error says why the last occurrence could not become a
// job (its kind unknown, its target no longer allowed): it was skipped.
// Version moves by one at each write (PutSchedule's condition).
type Schedule = api.Schedule

// ScheduleDue is when the resume function must look at s: DueAt, unless
// s is paused or ended. Zero: never (not in the due index).
func ScheduleDue(s Schedule) time.Time {
	if s.Paused || s.Next.IsZero() {
		return time.Time{}
	}
	return s.DueAt
}

// ScheduleState is what schedules need from a state store, beside State.
// internal/memstore and internal/dynamostore implement it; the
// conformance suite (internal/dev/storetest) states the contract. A
// store indexes each schedule at ScheduleDue in the same write
// (DueSchedule entries of ListDue).
type ScheduleState interface {
	// CreateSchedule stores s at version 1. ErrScheduleExists if one of
	// its queue and name is stored.
	CreateSchedule(ctx context.Context, s Schedule) error
	// GetSchedule reads a schedule strongly. ErrScheduleNotFound.
	GetSchedule(ctx context.Context, queue, name string) (Schedule, error)
	// ListSchedules returns a queue's schedules (of every generation), in
	// name order.
	ListSchedules(ctx context.Context, queue string) ([]Schedule, error)
	// PutSchedule replaces a schedule if it is still at version from,
	// storing it at from+1, and returns it as stored. ErrConflict if the
	// version moved, ErrScheduleNotFound if it is gone. Of concurrent
	// writers from one version, one wins.
	PutSchedule(ctx context.Context, s Schedule, from int64) (Schedule, error)
	// DeleteSchedule removes a schedule; none stored is no error.
	DeleteSchedule(ctx context.Context, queue, name string) error
}

// schedules is the store's ScheduleState, or ErrNoSchedules.
func (e *admin) schedules() (ScheduleState, error) {
	if e.opts.Schedules != nil {
		return e.opts.Schedules, nil
	}
	if s, ok := e.state.(ScheduleState); ok {
		return s, nil
	}
	return nil, ErrNoSchedules
}

// scheduleLead is how far ahead occurrences are made.
func (e *admin) scheduleLead() time.Duration {
	if e.opts.ScheduleLead > 0 {
		return e.opts.ScheduleLead
	}
	return DefaultScheduleLead
}

// dueAt is the time of s's entry in the due index for its Next.
func (e *admin) dueAt(next time.Time) time.Time {
	if next.IsZero() {
		return time.Time{}
	}
	return next.Add(-e.scheduleLead())
}

// ScheduleNotFoundError is the admin error for a schedule that does not
// exist.
type ScheduleNotFoundError struct{ Queue, Name string }

func (e *ScheduleNotFoundError) Error() string {
	return fmt.Sprintf("schedule %s not found on queue %s", e.Name, e.Queue)
}

// Is makes it ErrScheduleNotFound.
func (e *ScheduleNotFoundError) Is(target error) bool { return target == ErrScheduleNotFound }

// CreateSchedule does Engine.CreateSchedule's work.
func (e *admin) CreateSchedule(ctx context.Context, queue, name string, spec schedule.Spec) (Schedule, error) {
	st, err := e.schedules()
	if err != nil {
		return Schedule{}, err
	}
	if err := schedule.ValidateName(name); err != nil {
		return Schedule{}, err
	}
	now := e.now()
	rule, err := spec.Validate(now)
	if err != nil {
		var ie *input.Error
		if errors.As(err, &ie) {
			return Schedule{}, ie.At("schedule.")
		}
		return Schedule{}, err
	}
	q, err := e.Queue(ctx, queue)
	if err != nil {
		return Schedule{}, err
	}
	if err := checkPace(q, spec, rule, now); err != nil {
		return Schedule{}, err
	}
	js := job.Spec{Kind: spec.Job.Kind, Target: spec.Job.Target, Payload: spec.Job.Payload, Key: spec.Job.Key}
	if err := e.enqueuer.checkTargets(q.Config, job.EnqueueRequest{Queue: queue, Job: &js}, []job.Spec{js}); err != nil {
		var ie *input.Error
		if errors.As(err, &ie) {
			c := *ie
			c.Field = "schedule." + ie.Field // "job.kind" → "schedule.job.kind"
			return Schedule{}, &c
		}
		return Schedule{}, err
	}
	// A start in the past: the schedule begins now, not with what it
	// would have made since.
	next := rule.Next(now)
	s := Schedule{Queue: queue, Name: name, Gen: q.Gen, Spec: spec.API(), Next: next, DueAt: e.dueAt(next), Version: 1, CreatedAt: now}
	err = st.CreateSchedule(ctx, s)
	if errors.Is(err, ErrScheduleExists) {
		// One left by a deleted queue of the name gives way.
		if old, gerr := st.GetSchedule(ctx, queue, name); gerr == nil && old.Gen != q.Gen {
			if err = st.DeleteSchedule(ctx, queue, name); err == nil {
				err = st.CreateSchedule(ctx, s)
			}
		}
	}
	if err != nil {
		if errors.Is(err, ErrScheduleExists) {
			return Schedule{}, input.Invalid("schedule_exists", "name", fmt.Sprintf("queue %s has a schedule %s already", queue, name))
		}
		return Schedule{}, fmt.Errorf("create schedule %s/%s: %w", queue, name, err)
	}
	if _, err := e.resumer.runSchedule(ctx, st, queue, name); err != nil {
		e.log.WarnContext(ctx, "schedule created; its first occurrences are left to the resume function", "queue", queue, "schedule", name, "error", err.Error())
	}
	return e.Schedule(ctx, queue, name)
}

// checkPace refuses a schedule that makes jobs faster than its queue's
// limits let them start (and its key's, for a job with a key): its
// backlog would grow without end, each job waiting longer than the one
// before. A schedule exactly as fast as a limit is kept. The error
// names the rule's field and both paces.
func checkPace(q Queue, spec schedule.Spec, rule schedule.Rule, now time.Time) *input.Error {
	n, span := rule.Pace(now)
	if n == 0 {
		return nil
	}
	check := func(ls slot.Limits, whose string) *input.Error {
		for _, l := range ls {
			count, per := int64(1), l.Interval
			switch {
			case !l.Rate.IsZero():
				count, per = int64(l.Rate.N), l.Rate.Per
			case !l.Window.IsZero():
				count, per = int64(l.Window.N), l.Window.Per
			}
			if per <= 0 {
				continue
			}
			// n per span faster than count per per: n·per > count·span,
			// exactly (the products pass int64's range).
			fast := new(big.Int).Mul(big.NewInt(n), big.NewInt(int64(per)))
			if fast.Cmp(new(big.Int).Mul(big.NewInt(count), big.NewInt(int64(span)))) <= 0 {
				continue
			}
			field, rule := "schedule.cron", fmt.Sprintf("cron %q", spec.Cron)
			if spec.Every != nil {
				field, rule = "schedule.every", "every "+api.FormatPeriod(time.Duration(*spec.Every))
			}
			return input.Invalid("schedule_too_fast", field, fmt.Sprintf(
				"%s makes %s jobs a day, faster than %s's limit %s starts them (%s a day): its backlog would grow without end. Give a schedule no faster than the limit, or raise the limit first",
				rule, perDay(n, span), whose, l, perDay(count, per)))
		}
		return nil
	}
	if err := check(q.Config.LimitList(), "queue "+q.Name); err != nil {
		return err
	}
	if spec.Job.Key != "" {
		return check(slot.Limits(q.Config.KeyLimits), fmt.Sprintf("key %s of queue %s", spec.Job.Key, q.Name))
	}
	return nil
}

// perDay writes n per span as a number a day: whole from 100 up
// ("86400"), else to three figures ("0.714").
func perDay(n int64, span time.Duration) string {
	v := float64(n) * float64(24*time.Hour) / float64(span)
	if v >= 100 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Schedule does Engine.Schedule's work.
func (e *admin) Schedule(ctx context.Context, queue, name string) (Schedule, error) {
	st, err := e.schedules()
	if err != nil {
		return Schedule{}, err
	}
	if err := schedule.ValidateName(name); err != nil {
		return Schedule{}, err
	}
	q, err := e.Queue(ctx, queue)
	if err != nil {
		return Schedule{}, err
	}
	s, err := st.GetSchedule(ctx, queue, name)
	if errors.Is(err, ErrScheduleNotFound) || err == nil && s.Gen != q.Gen {
		return Schedule{}, &ScheduleNotFoundError{Queue: queue, Name: name}
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %s/%s: %w", queue, name, err)
	}
	return s, nil
}

// Schedules does Engine.Schedules's work.
func (e *admin) Schedules(ctx context.Context, queue string) ([]Schedule, error) {
	st, err := e.schedules()
	if err != nil {
		return nil, err
	}
	q, err := e.Queue(ctx, queue)
	if err != nil {
		return nil, err
	}
	all, err := st.ListSchedules(ctx, queue)
	if err != nil {
		return nil, fmt.Errorf("schedules %s: %w", queue, err)
	}
	out := []Schedule{}
	for _, s := range all {
		if s.Gen == q.Gen {
			out = append(out, s)
		}
	}
	return out, nil
}

// PauseSchedule does Engine.PauseSchedule's work.
func (e *admin) PauseSchedule(ctx context.Context, queue, name string) (Schedule, int, error) {
	s, err := e.changeSchedule(ctx, queue, name, func(s *Schedule) { s.Paused, s.DueAt = true, time.Time{} })
	if err != nil {
		return s, 0, err
	}
	n, first := e.cancelAhead(ctx, s, reasonPaused)
	if n == 0 {
		return s, 0, nil
	}
	s, err = e.changeSchedule(ctx, queue, name, func(s *Schedule) {
		// Resumed meanwhile: its pass made from where it was, the
		// cancelled ones with it.
		if s.Paused && (s.Next.IsZero() || first.Before(s.Next)) {
			s.Next, s.Made = first, s.Made-int64(n)
		}
	})
	return s, n, err
}

// reasonPaused is the reason in the history of an occurrence's job that
// its schedule's pause cancelled: the resume makes it again.
const reasonPaused = "schedule paused"

// ResumeSchedule does Engine.ResumeSchedule's work.
func (e *admin) ResumeSchedule(ctx context.Context, queue, name string) (Schedule, error) {
	s, err := e.changeSchedule(ctx, queue, name, func(s *Schedule) { s.Paused, s.DueAt = false, e.dueAt(s.Next) })
	if err != nil {
		return s, err
	}
	st, _ := e.schedules()
	if _, err := e.resumer.runSchedule(ctx, st, queue, name); err != nil {
		return s, err
	}
	return e.Schedule(ctx, queue, name)
}

// DeleteSchedule does Engine.DeleteSchedule's work.
func (e *admin) DeleteSchedule(ctx context.Context, queue, name string) (int, error) {
	s, err := e.Schedule(ctx, queue, name)
	if err != nil {
		return 0, err
	}
	st, _ := e.schedules()
	if err := st.DeleteSchedule(ctx, queue, name); err != nil {
		return 0, fmt.Errorf("delete schedule %s/%s: %w", queue, name, err)
	}
	n, _ := e.cancelAhead(ctx, s, "schedule deleted")
	return n, nil
}

// changeSchedule applies change to a schedule by compare-and-set, reading
// it again after a conflict.
func (e *admin) changeSchedule(ctx context.Context, queue, name string, change func(*Schedule)) (Schedule, error) {
	st, err := e.schedules()
	if err != nil {
		return Schedule{}, err
	}
	for {
		s, err := e.Schedule(ctx, queue, name)
		if err != nil {
			return s, err
		}
		from := s.Version
		change(&s)
		s, err = st.PutSchedule(ctx, s, from)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if errors.Is(err, ErrScheduleNotFound) {
			return s, &ScheduleNotFoundError{Queue: queue, Name: name}
		}
		if err != nil {
			return s, fmt.Errorf("schedule %s/%s: %w", queue, name, err)
		}
		return s, nil
	}
}

// cancelAhead cancels the occurrences of s made ahead of their time (after
// now, before its Next) that have not started, their histories giving
// reason; it counts them and returns the first.
func (e *admin) cancelAhead(ctx context.Context, s Schedule, reason string) (n int, first time.Time) {
	spec := schedule.SpecOf(s.Spec)
	rule, err := spec.Compile()
	if err != nil {
		return 0, time.Time{}
	}
	now := e.now()
	for t := rule.Next(now); !t.IsZero() && (s.Next.IsZero() || t.Before(s.Next)) && t.Before(now.Add(e.scheduleLead()+time.Minute)); t = rule.Next(t) {
		j, err := e.cancelJob(ctx, job.Ref{Queue: s.Queue, ID: schedule.OccurrenceID(s.Name, t)}, reason)
		if err == nil && j.Status == job.Cancelled {
			if n == 0 {
				first = t
			}
			n++
		}
	}
	return n, first
}

// cancelIfStopped cancels the jobs of a batch of occurrences a pass made
// but could not record, if the schedule was paused or deleted
// meanwhile: a pause or delete cancels what the schedule made ahead, and
// this batch may have been made after it looked. The pause went back to
// before the batch, so a resume makes these again.
func (e *admin) cancelIfStopped(ctx context.Context, st ScheduleState, queue, name string, times []time.Time) {
	s, err := st.GetSchedule(ctx, queue, name)
	if err != nil && !errors.Is(err, ErrScheduleNotFound) || err == nil && !s.Paused {
		return
	}
	reason := reasonPaused
	if err != nil {
		reason = "schedule deleted"
	}
	now := e.now()
	for _, t := range times {
		if t.After(now) {
			_, _ = e.cancelJob(ctx, job.Ref{Queue: queue, ID: schedule.OccurrenceID(name, t)}, reason)
		}
	}
}
