package main

import (
	"testing"

	"github.com/slotq/slotq/pkg/api"
)

// A missed slot reads as what happened and where the job went.
func TestEventTextSlotMissed(t *testing.T) {
	tests := []struct {
		ev   api.Event
		want string
	}{
		{api.Event{Kind: api.SlotMissed, LatenessMs: 31, OldTicket: 7, Ticket: 812}, "slot missed: woke 31ms late; new ticket 812"},
		{api.Event{Kind: api.SlotMissed, LatenessMs: 4, Ticket: 7}, "slot missed: woke 4ms late; takes the next opening"},
	}
	for _, tt := range tests {
		if got := eventText(tt.ev); got != tt.want {
			t.Errorf("eventText(%+v) = %q, want %q", tt.ev, got, tt.want)
		}
	}
}
