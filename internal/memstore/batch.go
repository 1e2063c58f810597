package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// LeadBatch makes jobID the leader of batch b unless a job leads it
// already, and returns the leader. The store keeps leaders for as long
// as it lives: until, which bounds a record's life on DynamoDB, does not
// matter in memory.
func (s *Store) LeadBatch(_ context.Context, b engine.BatchRef, jobID string, _ time.Time) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leads == nil {
		s.leads = map[engine.BatchRef]string{}
	}
	if leader, ok := s.leads[b]; ok {
		return leader, nil
	}
	s.leads[b] = jobID
	return jobID, nil
}

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
