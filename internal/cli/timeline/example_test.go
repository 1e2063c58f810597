package timeline_test

import (
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/slot"
)

// Summarize the starts of a queue with a 1s interval and a 10ms skew: the
// third job started 40ms late and the fourth at its slot, only 960ms
// later: closer than interval − skew, a violation (slotq's gate would have
// held the fourth back).
func ExampleSummarize() {
	t0 := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	var starts []timeline.Start
	for i, late := range []time.Duration{0, 0, 40 * time.Millisecond, 0} {
		slot := t0.Add(time.Duration(i) * time.Second)
		starts = append(starts, timeline.Start{Queue: "emails", Ticket: int64(i + 1), SlotAt: slot, At: slot.Add(late)})
	}
	s := timeline.Summarize(starts, slot.Every(time.Second), 10*time.Millisecond)
	fmt.Println("starts", s.Starts, "violations", s.Violations, "inversions", s.Inversions)
	fmt.Println("spacing min", s.SpacingMin, "lateness max", s.LatenessMax, "makespan", s.Makespan)
	// Output:
	// starts 4 violations 1 inversions 0
	// spacing min 960ms lateness max 40ms makespan 3s
}
