package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/slotq/slotq/internal/job"
)

// ReindexReport says what Reindex rewrote.
type ReindexReport struct {
	Queues int `json:"queues"`
	// Jobs counts parked jobs rewritten; Lanes lanes with a holder or
	// waiters rewritten.
	Jobs  int `json:"jobs"`
	Lanes int `json:"lanes"`
	// TimedPauses counts queues paused with a paused_until, which Reindex
	// leaves alone (see Reindex).
	TimedPauses int `json:"timed_pauses,omitempty"`
}

// Reindex writes every record that may be due again, as it is, so that
// its store puts it in the due index: for a table whose records were
// written before the due index existed (an upgrade). It walks every queue:
// its parked jobs (each rewritten at its version: a job that moved meanwhile
// was written by a writer that indexed it) and its lanes with a holder or
// waiters (a compare-and-set at their version). It does not touch a
// queue's pause: a queue paused with a paused_until from before is counted
// in TimedPauses, and lifts when it is resumed or paused again by hand.
// It costs a read and a write per parked job and lane, once. The resume
// function does the same by itself, a page of queues a run, on a table
// whose schema mark is older than SchemaVersion (upgradeSchema).
func (e *Engine) Reindex(ctx context.Context) (ReindexReport, error) {
	var rep ReindexReport
	queues, err := e.state.ListQueues(ctx)
	if err != nil {
		return rep, fmt.Errorf("reindex: %w", err)
	}
	for _, q := range queues {
		if err := e.reindexQueue(ctx, q, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// reindexQueue rewrites q's parked jobs and busy lanes (Reindex) and
// counts them in rep.
func (e *Engine) reindexQueue(ctx context.Context, q Queue, rep *ReindexReport) error {
	rep.Queues++
	if q.State.Paused && !q.State.PausedUntil.IsZero() {
		rep.TimedPauses++
	}
	parked, err := e.listAll(ctx, q, job.Parked)
	if err != nil {
		return fmt.Errorf("reindex %s: %w", q.Name, err)
	}
	for _, j := range parked {
		if err := e.state.UpdateJob(ctx, j, j.Version()); err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrJobNotFound) {
			return fmt.Errorf("reindex %s: %w", q.Name, err)
		}
		rep.Jobs++
	}
	lanes, err := e.state.ListLanes(ctx, q.Name)
	if err != nil {
		return fmt.Errorf("reindex %s: %w", q.Name, err)
	}
	for _, l := range lanes {
		if l.Idle() {
			continue
		}
		if _, err := e.state.PutLane(ctx, l, l.Version, 0); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("reindex %s: key %s: %w", q.Name, l.Key, err)
		}
		rep.Lanes++
	}
	return nil
}
