package schedule

import "github.com/slotq/slotq/pkg/api"

// API returns the spec as the wire writes it (api.ScheduleSpec).
func (s Spec) API() api.ScheduleSpec {
	return api.ScheduleSpec{
		Every: (*api.Duration)(s.Every), Cron: s.Cron, TZ: s.TZ, Start: s.Start, End: s.End,
		Missed: string(s.Missed), Job: api.ScheduleJob(s.Job),
	}
}
