package admin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/schedule"
	"github.com/slotq/slotq/internal/slot"
)

// The schedule sample events, in the order an operator would use them.
func TestScheduleSampleEvents(t *testing.T) {
	h, eng := newHandler()
	ctx := context.Background()
	if _, err := eng.CreateQueue(ctx, "reports", slot.Config{Interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	steps := []struct {
		event string
		check func(t *testing.T, r Response)
	}{
		{"admin-create-schedule.json", func(t *testing.T, r Response) {
			s := r.Schedule
			if s == nil || s.Name != "morning-report" || s.Spec.Cron != "0 8 * * *" || s.Spec.Job.Kind != "send-report" || s.Spec.Job.Key != "report" {
				t.Fatalf("schedule %+v", s)
			}
			if n := s.Next.In(paris); n.Hour() != 8 || n.Minute() != 0 || !n.After(time.Now()) {
				t.Errorf("next %s; want 08:00 in Paris, ahead", n)
			}
		}},
		{"admin-list-schedules.json", func(t *testing.T, r Response) {
			if len(r.Schedules) != 1 || r.Schedules[0].Name != "morning-report" {
				t.Errorf("schedules %+v", r.Schedules)
			}
		}},
		{"admin-get-schedule.json", func(t *testing.T, r Response) {
			if r.Schedule == nil || r.Schedule.Paused {
				t.Errorf("schedule %+v", r.Schedule)
			}
		}},
		{"admin-pause-schedule.json", func(t *testing.T, r Response) {
			if r.Schedule == nil || !r.Schedule.Paused || r.Cancelled == nil {
				t.Errorf("schedule %+v, cancelled %v", r.Schedule, r.Cancelled)
			}
		}},
		{"admin-resume-schedule.json", func(t *testing.T, r Response) {
			if r.Schedule == nil || r.Schedule.Paused {
				t.Errorf("schedule %+v", r.Schedule)
			}
		}},
		{"admin-delete-schedule.json", func(t *testing.T, r Response) {
			if r.Cancelled == nil {
				t.Errorf("cancelled %v", r.Cancelled)
			}
		}},
	}
	for _, s := range steps {
		t.Run(s.event, func(t *testing.T) { s.check(t, handleSample(t, h, s.event)) })
	}
	if ss, err := eng.Schedules(ctx, "reports"); err != nil || len(ss) != 0 {
		t.Errorf("after delete: %+v, %v", ss, err)
	}
}

// soon is the RFC 3339 text of d from now.
func soon(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }

// Hostile schedule requests through the handler and its real decoding:
// each is refused with a typed error naming the full path of the bad
// value, and nothing is written (no schedule, no job, no message).
func TestHostileSchedulesWriteNothing(t *testing.T) {
	h, eng, st, tr := newEmbedded()
	ctx := context.Background()
	if _, err := eng.CreateQueue(ctx, "emails", slot.Config{Interval: time.Second, Targets: []string{"https://hooks.example.com/*"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CreateQueue(ctx, "slow", slot.Config{Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	sched := func(s string) string {
		return fmt.Sprintf(`{"op":"create_schedule","queue":"emails","name":"s","schedule":%s}`, s)
	}
	echo := `"job":{"kind":"echo"}`
	for _, tc := range []struct{ name, body, code, field string }{
		{"no schedule", `{"op":"create_schedule","queue":"emails","name":"s"}`, "missing_schedule", "schedule"},
		{"no name", `{"op":"create_schedule","queue":"emails","schedule":{"every":"1s",` + echo + `}}`, "invalid_schedule_name", "name"},
		{"bad name", `{"op":"get_schedule","queue":"emails","name":"a/b"}`, "invalid_schedule_name", "name"},
		{"name on list", `{"op":"list_schedules","queue":"emails","name":"s"}`, "unused_field", "name"},
		{"schedule on pause", `{"op":"pause_schedule","queue":"emails","name":"s","schedule":{}}`, "unused_field", "schedule"},
		{"unknown field", sched(`{"every":"1s","evry":"1s",` + echo + `}`), "unknown_field", "schedule.evry"},
		{"Every", sched(`{"Every":"1s",` + echo + `}`), "unknown_field", "schedule.Every"},
		{"every a number", sched(`{"every":1,` + echo + `}`), "invalid_duration", "schedule.every"},
		{"every too short", sched(`{"every":"100ms",` + echo + `}`), "invalid_every", "schedule.every"},
		{"neither", sched(`{` + echo + `}`), "no_rule", "schedule.every"},
		{"both", sched(`{"every":"1s","cron":"* * * * *",` + echo + `}`), "invalid_rule", "schedule.cron"},
		{"bad cron", sched(`{"cron":"0 25 * * *",` + echo + `}`), "invalid_cron", "schedule.cron"},
		{"never fires", sched(`{"cron":"0 0 30 2 *",` + echo + `}`), "never_fires", "schedule.cron"},
		{"unknown zone", sched(`{"cron":"0 8 * * *","tz":"Europe/Atlantis",` + echo + `}`), "unknown_tz", "schedule.tz"},
		{"the host's zone", sched(`{"cron":"0 8 * * *","tz":"localtime",` + echo + `}`), "unknown_tz", "schedule.tz"},
		{"tz with every", sched(`{"every":"1m","tz":"Europe/Paris",` + echo + `}`), "invalid_tz", "schedule.tz"},
		{"faster than the queue", `{"op":"create_schedule","queue":"slow","name":"s","schedule":{"every":"1s",` + echo + `}}`, "schedule_too_fast", "schedule.every"},
		{"end before start", sched(fmt.Sprintf(`{"every":"1m","start":%q,"end":%q,`+echo+`}`, soon(48*time.Hour), soon(24*time.Hour))), "invalid_end", "schedule.end"},
		{"start too far", sched(fmt.Sprintf(`{"every":"1m","start":%q,`+echo+`}`, soon(400*24*time.Hour))), "invalid_start", "schedule.start"},
		{"start not a time", sched(`{"every":"1m","start":"tomorrow",` + echo + `}`), "invalid_time", "schedule.start"},
		{"bad missed", sched(`{"every":"1m","missed":"most",` + echo + `}`), "invalid_missed", "schedule.missed"},
		{"no kind", sched(`{"every":"1m","job":{}}`), "no_target", "schedule.job.kind"},
		{"job id", sched(`{"every":"1m","job":{"kind":"echo","id":"x"}}`), "unknown_field", "schedule.job.id"},
		{"target not allowed", sched(`{"every":"1m","job":{"target":"https://evil.example.net/"}}`), "target_not_allowed", "schedule.job.target"},
		{"payload too large", sched(`{"every":"1m","job":{"kind":"echo","payload":"` + strings.Repeat("x", job.MaxPayload) + `"}}`), "payload_too_large", "schedule.job.payload"},
		{"no queue", `{"op":"create_schedule","queue":"nope","name":"s","schedule":{"every":"1s",` + echo + `}}`, "queue_not_found", "queue"},
		{"none to get", `{"op":"get_schedule","queue":"emails","name":"none"}`, "schedule_not_found", "name"},
		{"none to pause", `{"op":"pause_schedule","queue":"emails","name":"none"}`, "schedule_not_found", "name"},
		{"none to delete", `{"op":"delete_schedule","queue":"emails","name":"none"}`, "schedule_not_found", "name"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantRefused(t, h, tc.body, tc.code, tc.field) })
	}
	ss, _ := st.ListSchedules(ctx, "emails")
	_, jobs := st.Contents()
	if len(ss) != 0 || len(jobs) != 0 || tr.Stats().Sent != 0 {
		t.Fatalf("refused requests wrote %d schedules, %d jobs, %d messages", len(ss), len(jobs), tr.Stats().Sent)
	}
	_ = schedule.MaxMissed
}
