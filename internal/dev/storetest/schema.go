package storetest

import (
	"errors"
	"testing"

	"github.com/slotq/slotq/internal/engine"
)

// testSchema checks the schema mark: a rebuild's cursor and counts come
// back as written, and a write from a mark that moved meanwhile is a
// conflict, so of two runs stepping one rebuild one writes each page.
// It puts the mark back as it found it.
func testSchema(t *testing.T, newState func(t *testing.T) engine.State) {
	st := newState(t)
	ctx := t.Context()
	m0, err := st.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m1 := engine.Schema{Version: m0.Version, Rebuild: true, After: "q-a", Queue: "q-b", Ticket: 4200, Lanes: true, Key: "k-7",
		Queues: 3, Jobs: 4200, LanesDone: 7, Seq: m0.Seq + 1}
	if err := st.PutSchema(ctx, m1, m0); err != nil {
		t.Fatalf("PutSchema(%+v from %+v): %v", m1, m0, err)
	}
	if got, err := st.Schema(ctx); err != nil || got != m1 {
		t.Fatalf("Schema = %+v, %v; want %+v", got, err, m1)
	}
	m2 := m1
	m2.Ticket, m2.Seq = 4300, m1.Seq+1
	if err := st.PutSchema(ctx, m2, m0); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("PutSchema from the mark before the last write: %v, want ErrConflict", err)
	}
	if err := st.PutSchema(ctx, m2, m1); err != nil {
		t.Fatalf("PutSchema from the mark as it is: %v", err)
	}
	if err := st.PutSchema(ctx, m0, m2); err != nil {
		t.Fatalf("PutSchema back to %+v: %v", m0, err)
	}
	if got, err := st.Schema(ctx); err != nil || got != m0 {
		t.Fatalf("Schema = %+v, %v; want it back as it was, %+v", got, err, m0)
	}
}
