package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// TestJobSlotAtLeftOut checks that a job without a slot (one that waits in
// its queue's waiting room) carries no slot_at, as the enqueue answer
// does not, rather than the zero time.
func TestJobSlotAtLeftOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  api.Job
		want bool
	}{
		{"waiting", api.Job{ID: "w", Status: api.Parked}, false},
		{"booked", api.Job{ID: "b", Status: api.Queued, SlotAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(b), `"slot_at"`); got != tc.want {
				t.Errorf("%s: slot_at given %v, want %v", b, got, tc.want)
			}
		})
	}
}
