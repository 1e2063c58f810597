package slot_test

import (
	"testing"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/slot"
)

// TestStateAPI holds State.API to the fields of State and api.QueueState:
// a field added to either and not carried fails here, unless it is one
// the stores alone keep.
func TestStateAPI(t *testing.T) {
	testenv.Converts(t, slot.State.API, "slot.State.Line", "slot.State.Marks", "slot.State.SlowTicket", "slot.State.SlowHold", "slot.State.SlowSeen",
		"slot.State.Gated", "slot.State.GatedUntil", "slot.State.GatedThrough", "slot.State.RunFrom", "slot.State.PausedAt",
		"slot.State.BatchTicket", "slot.State.BatchAt", "slot.State.BatchFill")
}
