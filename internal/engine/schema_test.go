package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// building is a State whose due index is still being built.
type building struct{ engine.State }

func (building) ListDue(context.Context, time.Time, int) ([]engine.DueEntry, error) {
	return nil, fmt.Errorf("list due: %w", engine.ErrIndexNotReady)
}

// A table from before the schema mark is brought to the current layout a
// page of queues per resume run, from where the last run stopped, and
// marked current by the run that finishes; a run meanwhile on an index
// still building reads nothing of it and fails nothing.
func TestUpgradeSchemaInPages(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	eng := testenv.NewEngine(t, engine.Options{State: building{store}})
	const queues = 150 // more than a run's page (100)
	for i := range queues {
		if _, err := eng.CreateQueue(ctx, fmt.Sprintf("q%03d", i), slot.Config{Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.PutSchema(ctx, engine.Schema{}, engine.Schema{Version: engine.SchemaVersion}); err != nil {
		t.Fatal(err)
	}
	rep, err := eng.Resume(ctx)
	if err != nil || !rep.IndexBuilding || rep.Upgraded == nil || rep.Upgraded.Queues != 100 {
		t.Fatalf("first run: %+v (upgraded %+v), %v; want a page of 100 queues, the index building", rep, rep.Upgraded, err)
	}
	if sc, _ := store.Schema(ctx); sc != (engine.Schema{After: "q099"}) {
		t.Fatalf("mark after the first page: %+v, want version 0 after q099", sc)
	}
	rep, err = eng.Resume(ctx)
	if err != nil || rep.Upgraded == nil || rep.Upgraded.Queues != queues-100 {
		t.Fatalf("second run: upgraded %+v, %v; want the other %d queues", rep.Upgraded, err, queues-100)
	}
	if sc, _ := store.Schema(ctx); sc != (engine.Schema{Version: engine.SchemaVersion}) {
		t.Fatalf("mark after the last page: %+v, want version %d", sc, engine.SchemaVersion)
	}
	if rep, err := eng.Resume(ctx); err != nil || rep.Upgraded != nil {
		t.Errorf("third run: upgraded %+v, %v; want nothing", rep.Upgraded, err)
	}
}
