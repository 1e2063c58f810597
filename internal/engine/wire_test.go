package engine_test

import (
	"testing"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
)

// stateOnly are the fields of a queue's state that only the stores keep
// (slot.State.API leaves them out).
var stateOnly = []string{"slot.State.Line", "slot.State.Marks", "slot.State.SlowTicket", "slot.State.SlowHold", "slot.State.SlowSeen",
	"slot.State.Gated", "slot.State.GatedUntil", "slot.State.GatedThrough", "slot.State.RunFrom", "slot.State.PausedAt",
	"slot.State.BatchTicket", "slot.State.BatchAt", "slot.State.BatchFill"}

// TestWireConverters holds each converter of wire.go to the fields of
// the engine's record and of its api type: a field added to either and
// not carried fails here.
func TestWireConverters(t *testing.T) {
	t.Run("Queue", func(t *testing.T) {
		testenv.Converts(t, engine.Queue.API, append(stateOnly, "engine.Queue.Rebooked")...)
	})
}
