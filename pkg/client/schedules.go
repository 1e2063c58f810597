package client

import (
	"context"

	"github.com/slotq/slotq/pkg/api"
)

// CreateScheduleInput names a new schedule of a queue and its rule:
// Spec.Every or Spec.Cron (with Spec.TZ), and the job each occurrence
// becomes (docs/schedules.md).
type CreateScheduleInput struct {
	Queue, Name string
	Spec        api.ScheduleSpec
}

// ScheduleOutput is a schedule as stored after the call.
type ScheduleOutput struct {
	Schedule api.Schedule
	// Cancelled counts, for PauseSchedule and DeleteSchedule, the
	// occurrences made ahead of their time that the call cancelled.
	Cancelled int
}

// ScheduleInput names one schedule of a queue.
type ScheduleInput struct {
	Queue, Name string
}

// CreateSchedule creates a schedule on a queue; the occurrences due
// within the lead (two minutes) are made at once. A bad rule is an *Error
// naming its field ("schedule.cron", "schedule.tz", "schedule.end"), and
// nothing is written.
func (c *Client) CreateSchedule(ctx context.Context, in *CreateScheduleInput, optFns ...func(*Options)) (*ScheduleOutput, error) {
	spec := in.Spec
	res, err := c.admin(ctx, api.AdminRequest{Op: api.OpCreateSchedule, Queue: in.Queue, Name: in.Name, Schedule: &spec}, optFns)
	if err != nil {
		return nil, err
	}
	return &ScheduleOutput{Schedule: deref(res.Schedule)}, nil
}

// GetSchedule reads a schedule. ErrScheduleNotFound.
func (c *Client) GetSchedule(ctx context.Context, in *ScheduleInput, optFns ...func(*Options)) (*ScheduleOutput, error) {
	return c.scheduleOp(ctx, api.OpGetSchedule, in, optFns)
}

// PauseSchedule pauses a schedule: once it returns, none of its
// occurrences starts until it is resumed (those made ahead are
// cancelled). Occurrences whose time passes meanwhile follow its missed
// policy when it is resumed.
func (c *Client) PauseSchedule(ctx context.Context, in *ScheduleInput, optFns ...func(*Options)) (*ScheduleOutput, error) {
	return c.scheduleOp(ctx, api.OpPauseSchedule, in, optFns)
}

// ResumeSchedule resumes a paused schedule.
func (c *Client) ResumeSchedule(ctx context.Context, in *ScheduleInput, optFns ...func(*Options)) (*ScheduleOutput, error) {
	return c.scheduleOp(ctx, api.OpResumeSchedule, in, optFns)
}

// DeleteSchedule deletes a schedule and cancels the occurrences it made
// ahead of their time.
func (c *Client) DeleteSchedule(ctx context.Context, in *ScheduleInput, optFns ...func(*Options)) (*ScheduleOutput, error) {
	return c.scheduleOp(ctx, api.OpDeleteSchedule, in, optFns)
}

func (c *Client) scheduleOp(ctx context.Context, op string, in *ScheduleInput, optFns []func(*Options)) (*ScheduleOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: op, Queue: in.Queue, Name: in.Name}, optFns)
	if err != nil {
		return nil, err
	}
	out := &ScheduleOutput{Schedule: deref(res.Schedule)}
	if res.Cancelled != nil {
		out.Cancelled = *res.Cancelled
	}
	return out, nil
}

// ListSchedulesInput names the queue whose schedules to list.
type ListSchedulesInput struct {
	Queue string
}

// ListSchedulesOutput holds a queue's schedules in name order.
type ListSchedulesOutput struct {
	Schedules []api.Schedule
}

// ListSchedules lists a queue's schedules with their next occurrences.
func (c *Client) ListSchedules(ctx context.Context, in *ListSchedulesInput, optFns ...func(*Options)) (*ListSchedulesOutput, error) {
	res, err := c.admin(ctx, api.AdminRequest{Op: api.OpListSchedules, Queue: in.Queue}, optFns)
	if err != nil {
		return nil, err
	}
	return &ListSchedulesOutput{Schedules: res.Schedules}, nil
}
