package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// Stats lists the busiest keys of a waiting room: most jobs waiting
// first, then by name, the jobs without a key as the key "", at most
// api.MaxRoomKeys; booked jobs are not counted.
func TestRoomBusiestKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, simOptions{Workers: 1})
		defer s.stop()
		ctx := context.Background()
		s.createQueue("busy", slot.Config{Interval: time.Second, KeyBookAhead: 1})
		if _, err := s.eng.Pause(ctx, "busy", time.Time{}); err != nil {
			t.Fatal(err)
		}
		// No key: 4 jobs, 1 booked, 3 waiting; then, the room not empty
		// and the queue paused, every job waits: A's 9, and 2 of each of
		// k00 to k11.
		s.enqueue("busy", 4, nil)
		s.enqueue("busy", 9, func(_ int, sp *job.Spec) { sp.Key = "A" })
		for i := range 12 {
			s.enqueue("busy", 2, func(_ int, sp *job.Spec) { sp.Key = fmt.Sprintf("k%02d", i) })
		}
		st, err := s.eng.Stats(ctx, "busy")
		if err != nil {
			t.Fatal(err)
		}
		if st.Room == nil {
			t.Fatal("no room figures")
		}
		want := []api.RoomKey{{Key: "A", Waiting: 9}, {Key: "", Waiting: 3}}
		for i := range api.MaxRoomKeys - 2 {
			want = append(want, api.RoomKey{Key: fmt.Sprintf("k%02d", i), Waiting: 2})
		}
		if !slices.Equal(st.Room.Keys, want) {
			t.Fatalf("Room.Keys = %+v\nwant %+v", st.Room.Keys, want)
		}
	})
}
