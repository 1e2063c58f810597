package main

import (
	"strings"
	"testing"

	"github.com/slotq/slotq/pkg/api"
)

// queues stats names the busiest keys of a waiting room, the jobs without
// a key as "(no key)", with thousands separated; none, no row.
func TestRoomRowsBusiestKeys(t *testing.T) {
	var b strings.Builder
	roomRows(&b, &api.RoomFigures{Booked: 5, Waiting: 4007, ByPriority: [api.MaxPriority]int{0, 0, 4007},
		Keys: []api.RoomKey{{Key: "A", Waiting: 3995}, {Key: "k01", Waiting: 10}, {Waiting: 2}}})
	want := "booked\t5\nin waiting room\t4007 (priority 3: 4007)\nbusiest keys waiting\tA 3,995, k01 10, (no key) 2\n"
	if b.String() != want {
		t.Errorf("roomRows:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	roomRows(&b, &api.RoomFigures{Booked: 1})
	if strings.Contains(b.String(), "busiest") {
		t.Errorf("an empty room lists keys: %q", b.String())
	}
}
