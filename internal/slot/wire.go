package slot

import "github.com/slotq/slotq/pkg/api"

// API returns the state as the wire shows it (api.QueueState): the
// counters and the gate, without what only the stores keep (Line, Marks,
// the slow-down's SlowTicket, SlowHold and SlowSeen, and the gated
// state's Gated, GatedUntil and GatedThrough, the line's RunFrom, the
// pause's PausedAt and the last batch's BatchTicket, BatchAt and
// BatchFill).
func (s State) API() api.QueueState {
	return api.QueueState{
		Ticket: s.Ticket, Current: s.Current, Front: s.Front, Clock: s.Clock, LastStart: s.LastStart,
		Paused: s.Paused, PausedUntil: s.PausedUntil, Purged: s.Purged, Running: s.Running,
		SlowUntil: s.SlowUntil, SlowDowns: s.SlowDowns,
	}
}
