package schedule

import (
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// API returns the spec as the wire writes it (api.ScheduleSpec).
func (s Spec) API() api.ScheduleSpec {
	return api.ScheduleSpec{
		Every: (*api.Duration)(s.Every), Cron: s.Cron, TZ: s.TZ, Start: s.Start, End: s.End,
		Missed: string(s.Missed), Job: api.ScheduleJob(s.Job),
	}
}

// SpecOf is the spec a stored schedule holds (api.Schedule.Spec), with
// the rule's methods: Compile, MissedPolicy. It is Spec.API's inverse.
func SpecOf(a api.ScheduleSpec) Spec {
	return Spec{
		Every: (*slot.Duration)(a.Every), Cron: a.Cron, TZ: a.TZ, Start: a.Start, End: a.End,
		Missed: Missed(a.Missed), Job: Job(a.Job),
	}
}
