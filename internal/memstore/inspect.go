package memstore

import (
	"cmp"
	"slices"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// Contents returns every queue and every job record the store holds,
// expired ones included, by queue name and then job id: what a test
// compares before and after a call to see that the call wrote nothing.
// It only reads.
func (s *Store) Contents() ([]engine.Queue, []job.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	qs := make([]engine.Queue, 0, len(s.queues))
	for _, q := range s.queues {
		qs = append(qs, copyQueue(q))
	}
	var js []job.Job
	for _, byID := range s.jobs {
		for _, j := range byID {
			js = append(js, copyJob(j))
		}
	}
	slices.SortFunc(qs, func(a, b engine.Queue) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(js, func(a, b job.Job) int { return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.ID, b.ID)) })
	return qs, js
}
