package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// ListBatch returns up to limit jobs of batch b queued at its ticket, in
// id order.
func (s *Store) ListBatch(_ context.Context, b engine.BatchRef, limit int) ([]job.Job, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []job.Job
	for _, j := range s.jobs[b.Queue] {
		if j.Batched && j.Status == job.Queued && j.Ticket == b.Ticket && j.Gen == b.Gen && !j.Expired(now) {
			out = append(out, copyJob(j))
		}
	}
	slices.SortFunc(out, func(a, b job.Job) int { return cmp.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)], nil
}
