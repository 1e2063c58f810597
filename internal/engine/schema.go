package engine

import (
	"context"
	"fmt"
	"time"
)

// SchemaVersion is the layout of the records this engine writes, which
// a table's schema mark (Schema) says its records are in:
//
//	1  the first stack: no due index (a table without a mark counts as it)
//	2  the due index: parked jobs, held jobs and busy lanes carry its keys
//	3  the waiting room's jobs carry its keys too, by queue, priority and
//	   key in ticket order (State.ListRoom)
//
// A resume run that finds an older mark brings the records to this
// layout (rebuild) and then writes the mark.
const SchemaVersion = 3

// schemaRecheck is how long an engine that saw the schema mark asking
// for no rebuild goes without reading it again: a rebuild asked later
// (Reindex) is taken up by the resume runs within it.
const schemaRecheck = 10 * time.Minute

// rebuildShare is the part of a resume run's time kept for a rebuild
// under way: the due work goes first, up to the rest, so a rebuild
// neither holds up what is due nor waits for a backlog to clear.
const rebuildShare = 4 // one quarter

// rebuildDue reports whether the schema mark asks for a rebuild
// (Schema.Pending): records written before the due index carry no entry
// of it, so the resume function would never find them. Once this engine
// has seen the mark asking for none it reads it again only schemaRecheck
// later, so a resume run of a rebuilt table costs nothing for it.
func (e *core) rebuildDue(ctx context.Context) (bool, error) {
	now := e.now()
	if seen := e.schemaSeen.Load(); seen != 0 && now.Sub(time.Unix(0, seen)) < schemaRecheck {
		return false, nil
	}
	mark, err := e.state.Schema(ctx)
	if err != nil {
		return false, fmt.Errorf("schema: %w", err)
	}
	if mark.Pending() {
		return true, nil
	}
	e.schemaSeen.Store(now.UnixNano())
	return false, nil
}
