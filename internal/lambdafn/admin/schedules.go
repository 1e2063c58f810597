package admin

import (
	"context"
	"fmt"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/schedule"
)

// ScheduleOps are the operations on a queue's schedules
// (docs/schedules.md): create_schedule (queue, name, schedule),
// list_schedules (queue), and get_schedule, pause_schedule,
// resume_schedule and delete_schedule (queue, name).
var ScheduleOps = []string{"create_schedule", "list_schedules", "get_schedule", "pause_schedule", "resume_schedule", "delete_schedule"}

// Schedules is the engine calls of the schedule ops. An Admin that is not
// one answers them with no_schedules.
type Schedules interface {
	CreateSchedule(ctx context.Context, queue, name string, spec schedule.Spec) (engine.Schedule, error)
	Schedule(ctx context.Context, queue, name string) (engine.Schedule, error)
	Schedules(ctx context.Context, queue string) ([]engine.Schedule, error)
	PauseSchedule(ctx context.Context, queue, name string) (engine.Schedule, int, error)
	ResumeSchedule(ctx context.Context, queue, name string) (engine.Schedule, error)
	DeleteSchedule(ctx context.Context, queue, name string) (int, error)
}

var _ Schedules = (*engine.Engine)(nil)

// schedule runs one of ScheduleOps.
func (h *Handler) schedule(ctx context.Context, r Request) (Response, error) {
	eng, ok := h.Engine.(Schedules)
	if !ok {
		return Response{}, input.Invalid("no_schedules", "op", fmt.Sprintf("op %s: this admin keeps no schedules", r.Op))
	}
	if r.Op != "list_schedules" {
		if err := schedule.ValidateName(r.Name); err != nil {
			return Response{}, err
		}
	}
	switch r.Op {
	case "create_schedule":
		if r.Schedule == nil {
			return Response{}, input.Invalid("missing_schedule", "schedule", "create_schedule needs a schedule object: every or cron, and the job")
		}
		s, err := eng.CreateSchedule(ctx, r.Queue, r.Name, *r.Schedule)
		return Response{Schedule: &s}, err
	case "list_schedules":
		ss, err := eng.Schedules(ctx, r.Queue)
		return Response{Schedules: nonNil(ss)}, err
	case "get_schedule":
		s, err := eng.Schedule(ctx, r.Queue, r.Name)
		return Response{Schedule: &s}, err
	case "pause_schedule":
		s, n, err := eng.PauseSchedule(ctx, r.Queue, r.Name)
		return Response{Schedule: &s, Cancelled: &n}, err
	case "resume_schedule":
		s, err := eng.ResumeSchedule(ctx, r.Queue, r.Name)
		return Response{Schedule: &s}, err
	case "delete_schedule":
		n, err := eng.DeleteSchedule(ctx, r.Queue, r.Name)
		return Response{Cancelled: &n}, err
	}
	return Response{}, input.Invalid("invalid_op", "op", fmt.Sprintf("op %q is not one of %v", r.Op, Ops))
}
