package console

import (
	"context"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// ScheduleSource is what the console reads of a queue's schedules (admin
// list_schedules). A Source that is one shows them on the queue page;
// FromClient's is.
type ScheduleSource interface {
	Schedules(ctx context.Context, queue string) ([]api.Schedule, error)
}

var _ ScheduleSource = clientSource{}

func (s clientSource) Schedules(ctx context.Context, queue string) ([]api.Schedule, error) {
	out, err := s.c.ListSchedules(ctx, &client.ListSchedulesInput{Queue: queue})
	if err != nil {
		return nil, notFound(err)
	}
	return out.Schedules, nil
}

// scheduleRow is one schedule on the queue page.
type scheduleRow struct {
	Name, Rule, Job string
	Paused          bool
	Next, Last      time.Time
	Made, Skipped   int64
	Error           string
}

// schedules reads queue's schedules for its page, if the source has
// them.
func (s *server) schedules(ctx context.Context, queue string) ([]scheduleRow, error) {
	src, ok := s.src.(ScheduleSource)
	if !ok {
		return nil, nil
	}
	ss, err := src.Schedules(ctx, queue)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	rows := make([]scheduleRow, len(ss))
	for i, sc := range ss {
		rows[i] = scheduleRow{Name: sc.Name, Rule: ruleText(sc.Spec), Job: jobText(sc.Spec.Job), Paused: sc.Paused,
			Next: sc.Next, Last: sc.Last, Made: sc.Made, Skipped: sc.Skipped, Error: sc.Error}
	}
	return rows, nil
}

// ruleText is a schedule's rule in words: "every 1s", "cron 0 8 * * *
// (Europe/Paris)".
func ruleText(s api.ScheduleSpec) string {
	if s.Every != nil {
		return "every " + clikit.Setting(time.Duration(*s.Every))
	}
	tz := s.TZ
	if tz == "" {
		tz = "UTC"
	}
	return fmt.Sprintf("cron %s (%s)", s.Cron, tz)
}

func jobText(j api.ScheduleJob) string {
	s := "kind:" + j.Kind
	if j.Target != "" {
		s = j.Target
	}
	if j.Key != "" {
		s += ", key " + j.Key
	}
	return s
}
