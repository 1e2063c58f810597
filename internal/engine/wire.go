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
