package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SchemaVersion is the layout of the records this engine writes, which
// a table's schema mark (Schema) says its records are in:
//
//	1  the first stack: no due index (a table without a mark counts as it)
//	2  the due index: parked jobs, held jobs and busy lanes carry its keys
//
// A resume run that finds an older mark brings the records to this
// layout (upgradeSchema) and then writes the mark.
const SchemaVersion = 2

// upgradeQueuesPerRun bounds the queues one resume run rebuilds: a table
// with many queues is rebuilt over several runs, a page each, from where
// the mark says the last one stopped.
const upgradeQueuesPerRun = 100

// upgradeSchema brings a table whose schema mark is older than
// SchemaVersion to it, a page of queues per call (Reindex's work for each:
// records written before the due index carry no entry of it, so the
// resume function would never find them), and moves the mark on; the
// page that finishes writes SchemaVersion. Once a call of this engine has
// seen the mark current it reads it no more, so a resume run of an
// upgraded table costs nothing for it after its first. Runs at once are
// harmless: each rewrite is at its record's version, and the mark is
// written by compare-and-set (the loser's page is done again, at no
// harm, by the next run).
func (e *Engine) upgradeSchema(ctx context.Context) (*ReindexReport, error) {
	if e.schemaCurrent.Load() {
		return nil, nil
	}
	mark, err := e.state.Schema(ctx)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if mark.Version >= SchemaVersion {
		e.schemaCurrent.Store(true)
		return nil, nil
	}
	queues, err := e.state.ListQueues(ctx)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	slices.SortFunc(queues, func(a, b Queue) int { return strings.Compare(a.Name, b.Name) })
	rep := &ReindexReport{}
	next := Schema{Version: SchemaVersion}
	for _, q := range queues {
		if q.Name <= mark.After {
			continue
		}
		if rep.Queues == upgradeQueuesPerRun || !e.fits(ctx, e.opts.RecordTimeout) {
			next = Schema{Version: mark.Version, After: next.After}
			break
		}
		if err := e.reindexQueue(ctx, q, rep); err != nil {
			return rep, fmt.Errorf("schema: %w", err)
		}
		next.After = q.Name
	}
	if next.Version == SchemaVersion {
		next.After = ""
	}
	if err := e.state.PutSchema(ctx, next, mark); err != nil && !errors.Is(err, ErrConflict) {
		return rep, fmt.Errorf("schema: %w", err)
	}
	if next.Version == SchemaVersion {
		e.schemaCurrent.Store(true)
		e.log.InfoContext(ctx, "records brought to the current schema", "schema_version", SchemaVersion,
			"queues", rep.Queues, "jobs", rep.Jobs, "lanes", rep.Lanes)
	}
	return rep, nil
}
