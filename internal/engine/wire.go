package engine

import "github.com/slotq/slotq/pkg/api"

// The admin function answers the engine's records as pkg/api's types:
// each record that keeps more than the wire shows has one converter here,
// held to both types' fields by wire_test.go.

// API returns the queue as the admin function answers it (api.Queue):
// without Rebooked, which only the stores keep.
func (q Queue) API() api.Queue {
	return api.Queue{Name: q.Name, Gen: q.Gen, Config: api.Config(q.Config), State: q.State.API(), CreatedAt: q.CreatedAt}
}

// API returns the schedule as the admin function answers it
// (api.Schedule).
func (s Schedule) API() api.Schedule {
	return api.Schedule{
		Queue: s.Queue, Name: s.Name, Gen: s.Gen, Spec: s.Spec.API(), Paused: s.Paused,
		Next: s.Next, DueAt: s.DueAt, Last: s.Last, Made: s.Made, Skipped: s.Skipped,
		Error: s.Error, Version: s.Version, CreatedAt: s.CreatedAt,
	}
}
