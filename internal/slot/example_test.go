package slot_test

import (
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/slot"
)

// Three producers take tickets on an idle queue with a 1s interval; the
// gate then lets each ticket start at its slot, and not before.
func Example() {
	now := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	const interval, skew = time.Second, 10 * time.Millisecond
	var s slot.State
	for _, n := range []int{1, 2, 1} {
		var first int64
		var at time.Time
		s, first, at = slot.Take(s, n, n, interval, now)
		fmt.Printf("took %d: first ticket %d at +%v\n", n, first, at.Sub(now))
	}

	s = slot.Started(s, 1, interval, now) // ticket 1 starts at its slot
	v, open := slot.Gate(s, 2, interval, skew, now.Add(500*time.Millisecond))
	fmt.Printf("ticket 2 at +500ms: %v, opens at +%v\n", v, open.Sub(now))
	v, _ = slot.Gate(s, 2, interval, skew, now.Add(time.Second))
	fmt.Printf("ticket 2 at +1s: %v\n", v)
	// Output:
	// took 1: first ticket 1 at +0s
	// took 2: first ticket 2 at +1s
	// took 1: first ticket 4 at +3s
	// ticket 2 at +500ms: early, opens at +990ms
	// ticket 2 at +1s: start
}

// A queue's configuration refuses bad input with an input.Error that names
// the field.
func ExampleConfig_Validate() {
	c := slot.Config{Interval: time.Second, Skew: 2 * time.Second}.WithDefaults()
	err := c.Validate()
	if in, ok := err.(*input.Error); ok {
		fmt.Println(in.Code, in.Field)
	}
	// Output:
	// invalid_skew skew
}
