package storetest

import (
	"fmt"
	"testing"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// testMoves checks that UpdateJob makes exactly the status changes
// job.CanMove allows: every other one is refused with job.ErrIllegalMove
// and leaves the record as it was.
func testMoves(t *testing.T, newState func(t *testing.T) engine.State) {
	st := newState(t)
	ctx := t.Context()
	name := queueName(t)
	type move struct{ from, to job.Status }
	var moves []move
	var jobs []job.Job
	for _, from := range job.Statuses {
		for _, to := range job.Statuses {
			m := move{from, to}
			moves = append(moves, m)
			jobs = append(jobs, newJob(name, fmt.Sprintf("%s-%s", from, to), int64(len(jobs)+1), from))
		}
	}
	createJobs(t, st, jobs...)
	for i, m := range moves {
		j := jobs[i]
		moved := j
		moved.Status = m.to
		err := st.UpdateJob(ctx, moved, j.Version())
		if job.CanMove(m.from, m.to) {
			if err != nil {
				t.Errorf("%s to %s: %v", m.from, m.to, err)
			} else if d := diffJob(getJob(t, st, name, j.ID), moved); d != "" {
				t.Errorf("%s to %s: %s", m.from, m.to, d)
			}
			continue
		}
		wantErr(t, fmt.Sprintf("%s to %s", m.from, m.to), err, job.ErrIllegalMove)
		wantUnchanged(t, st, j)
	}
}
