package client_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// The schedule calls send the sample events, field for field.
func TestScheduleRequestEncoding(t *testing.T) {
	s, c := newStub(t)
	ctx := context.Background()
	one := &client.ScheduleInput{Queue: "reports", Name: "morning-report"}
	for _, tt := range []struct {
		event string
		call  func() error
	}{
		{"admin-create-schedule.json", func() error {
			_, err := c.CreateSchedule(ctx, &client.CreateScheduleInput{Queue: "reports", Name: "morning-report", Spec: api.ScheduleSpec{
				Cron: "0 8 * * *", TZ: "Europe/Paris", Missed: api.MissedLatest,
				Job: api.ScheduleJob{Kind: "send-report", Payload: json.RawMessage(`{"report": "daily"}`), Key: "report"},
			}})
			return err
		}},
		{"admin-list-schedules.json", func() error {
			_, err := c.ListSchedules(ctx, &client.ListSchedulesInput{Queue: "reports"})
			return err
		}},
		{"admin-get-schedule.json", func() error { _, err := c.GetSchedule(ctx, one); return err }},
		{"admin-pause-schedule.json", func() error { _, err := c.PauseSchedule(ctx, one); return err }},
		{"admin-resume-schedule.json", func() error { _, err := c.ResumeSchedule(ctx, one); return err }},
		{"admin-delete-schedule.json", func() error { _, err := c.DeleteSchedule(ctx, one); return err }},
	} {
		t.Run(tt.event, func(t *testing.T) {
			if err := tt.call(); err != nil {
				t.Fatal(err)
			}
			fn, body := s.last()
			if fn != "AdminFunction" {
				t.Errorf("called %s, want AdminFunction", fn)
			}
			jsonEqual(t, body, tt.event)
		})
	}
}
