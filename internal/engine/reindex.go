package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/pkg/api"
)

// reindexPage is how many parked jobs (or lanes) a rebuild rewrites
// between two writes of its cursor in the schema mark: a run killed at
// its timeout loses at most one page of work, never the queue's.
const reindexPage = 100

// ReindexReport says what one call of a rebuild (Reindex, or a resume
// run's share of it) rewrote, and how far the rebuild is
// (api.ReindexReport, the type users decode). TimedPauses are left alone
// (see Reindex).
type ReindexReport = api.ReindexReport

// ReindexProgress is how far a rebuild of the records is, over all the
// runs that stepped it (api.ReindexProgress; the schema mark keeps it).
type ReindexProgress = api.ReindexProgress

// errMarkMoved: another run wrote the schema mark since this one read it;
// it steps the rebuild, this one stops.
var errMarkMoved = errors.New("schema mark moved")

// Reindex does Engine.Reindex's work.
func (e *resumer) Reindex(ctx context.Context) (ReindexReport, error) {
	mark, err := e.state.Schema(ctx)
	if err != nil {
		return ReindexReport{}, fmt.Errorf("reindex: %w", err)
	}
	if !mark.Pending() {
		next := Schema{Version: mark.Version, Rebuild: true, Seq: mark.Seq + 1}
		if err := e.state.PutSchema(ctx, next, mark); err != nil && !errors.Is(err, ErrConflict) {
			return ReindexReport{}, fmt.Errorf("reindex: %w", err)
		}
		e.schemaSeen.Store(0)
	}
	rep, err := e.rebuild(ctx, func() bool { return !e.fits(ctx, e.opts.RecordTimeout) })
	if err != nil {
		return rep, fmt.Errorf("reindex: %w", err)
	}
	return rep, nil
}

// rebuild steps the rebuild the schema mark asks for, from its cursor,
// until it is over or stop says the caller's time is up, writing the
// cursor every page. A mark that asks for none answers Done. Two calls at
// once are harmless: each rewrite is at its record's version, and the
// cursor is written by compare-and-set, so the call that loses stops
// (errMarkMoved is no error to its caller).
func (e *resumer) rebuild(ctx context.Context, stop func() bool) (rep ReindexReport, _ error) {
	mark, err := e.state.Schema(ctx)
	if err != nil {
		return rep, err
	}
	if !mark.Pending() {
		rep.Progress.Done = true
		return rep, nil
	}
	queues, err := e.state.ListQueues(ctx)
	if err != nil {
		return rep, err
	}
	slices.SortFunc(queues, func(a, b Queue) int { return strings.Compare(a.Name, b.Name) })
	w := &rebuilder{e: e, mark: mark, rep: &rep}
	defer func() { rep.Progress = w.progress(queues) }()
	for _, q := range queues {
		if q.Name <= mark.After {
			continue
		}
		done, err := w.queue(ctx, q, stop)
		if errors.Is(err, errMarkMoved) {
			return rep, nil
		}
		if err != nil || !done {
			return rep, err
		}
	}
	// Over: the mark says so, and keeps what the rebuild rewrote.
	next := Schema{Version: SchemaVersion, Queues: w.mark.Queues, Jobs: w.mark.Jobs, LanesDone: w.mark.LanesDone}
	if err := w.save(ctx, next); err != nil {
		if errors.Is(err, errMarkMoved) {
			return rep, nil
		}
		return rep, err
	}
	e.schemaSeen.Store(e.now().UnixNano())
	e.log.InfoContext(ctx, "records rebuilt for the due index", "schema_version", SchemaVersion,
		"queues", next.Queues, "jobs", next.Jobs, "lanes", next.LanesDone)
	return rep, nil
}

// rebuilder is one call's walk of a rebuild: the mark as last written.
type rebuilder struct {
	e    *resumer
	mark Schema
	rep  *ReindexReport
}

// save writes next as the mark if it is still the one last written.
func (w *rebuilder) save(ctx context.Context, next Schema) error {
	next.Seq = w.mark.Seq + 1
	err := w.e.state.PutSchema(ctx, next, w.mark)
	if errors.Is(err, ErrConflict) {
		return errMarkMoved
	}
	if err != nil {
		return err
	}
	w.mark = next
	return nil
}

// queue rewrites q's parked jobs from the cursor, a page at a time, then
// its busy lanes, and marks q rebuilt. done is false when stop cut it
// short (the cursor is saved).
func (w *rebuilder) queue(ctx context.Context, q Queue, stop func() bool) (done bool, _ error) {
	e := w.e
	cur := w.mark
	if cur.Queue != q.Name {
		cur.Queue, cur.Ticket, cur.Lanes, cur.Key = q.Name, 0, false, ""
		if q.State.Paused && !q.State.PausedUntil.IsZero() {
			w.rep.TimedPauses++
		}
	}
	for !cur.Lanes {
		if stop() {
			return false, w.save(ctx, cur)
		}
		page, err := e.state.ListJobs(ctx, ListRequest{Queue: q.Name, Gen: q.Gen, Status: job.Parked, After: cur.Ticket, Limit: reindexPage})
		if err != nil {
			return false, fmt.Errorf("reindex %s: %w", q.Name, err)
		}
		for _, j := range page {
			if err := e.state.UpdateJob(ctx, j, j.Version()); err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrJobNotFound) {
				return false, fmt.Errorf("reindex %s: %w", q.Name, err)
			}
			cur.Ticket = j.Ticket
		}
		cur.Jobs += int64(len(page))
		w.rep.Jobs += len(page)
		cur.Lanes = len(page) < reindexPage
		if err := w.save(ctx, cur); err != nil {
			return false, err
		}
	}
	if stop() {
		return false, nil
	}
	lanes, err := e.state.ListLanes(ctx, q.Name)
	if err != nil {
		return false, fmt.Errorf("reindex %s: %w", q.Name, err)
	}
	n := 0
	for _, l := range lanes {
		if l.Key <= cur.Key && cur.Key != "" || l.Idle() {
			continue
		}
		if n == reindexPage {
			if err := w.save(ctx, cur); err != nil {
				return false, err
			}
			if stop() {
				return false, nil
			}
			n = 0
		}
		if _, err := e.state.PutLane(ctx, l, l.Version, 0); err != nil && !errors.Is(err, ErrConflict) {
			return false, fmt.Errorf("reindex %s: key %s: %w", q.Name, l.Key, err)
		}
		cur.Key = l.Key
		cur.LanesDone++
		w.rep.Lanes++
		n++
	}
	next := Schema{Version: cur.Version, Rebuild: cur.Rebuild, After: q.Name,
		Queues: cur.Queues + 1, Jobs: cur.Jobs, LanesDone: cur.LanesDone}
	if err := w.save(ctx, next); err != nil {
		return false, err
	}
	w.rep.Queues++
	return true, nil
}

// progress says how far the mark's rebuild is, of queues.
func (w *rebuilder) progress(queues []Queue) ReindexProgress {
	m := w.mark
	p := ReindexProgress{Done: !m.Pending(), QueuesDone: m.Queues, Queue: m.Queue, Ticket: m.Ticket, Jobs: m.Jobs, Lanes: m.LanesDone}
	if !p.Done {
		for _, q := range queues {
			if q.Name > m.After {
				p.QueuesLeft++
			}
		}
	}
	return p
}
