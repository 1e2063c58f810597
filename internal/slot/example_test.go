package slot_test

import (
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// Three producers take tickets on an idle queue with a 1s interval; the
// gate then lets each ticket start at its slot, and not before: the skew
// is no early allowance, it is part of each start's deadline.
func Example() {
	now := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	const interval, skew = time.Second, 10 * time.Millisecond
	var s slot.State
	for _, n := range []int{1, 2, 1} {
		var first int64
		var slots []time.Time
		s, first, slots = slot.Take(s, n, n, slot.Every(interval), skew, now)
		fmt.Printf("took %d: first ticket %d at +%v\n", n, first, slots[0].Sub(now))
	}

	s = slot.Started(s, 1, slot.Every(interval), now) // ticket 1 starts at its slot
	v, open := slot.Gate(s, 2, slot.Every(interval), skew, now.Add(500*time.Millisecond))
	fmt.Printf("ticket 2 at +500ms: %v, opens at +%v\n", v, open.Sub(now))
	v, _ = slot.Gate(s, 2, slot.Every(interval), skew, now.Add(time.Second))
	fmt.Printf("ticket 2 at +1s: %v\n", v)
	// Output:
	// took 1: first ticket 1 at +0s
	// took 2: first ticket 2 at +1s
	// took 1: first ticket 4 at +3s
	// ticket 2 at +500ms: early, opens at +1s
	// ticket 2 at +1s: start
}

// A backlog's slots in each form of a limit: an interval, a rate with a
// burst (Burst+1 at once after an idle time, then one per period/count),
// and a window (its count at once, then its backlog paced a period
// over its count apart, each moment a period after the one it follows
// in the window). The line keeps slot.Room (2 ms) of every rate's burst and
// every window's period for its starts' wake-ups: a worker that wakes
// that late still starts without moving anyone.
func ExampleTake_forms() {
	now := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	for _, l := range []slot.Limit{
		{Interval: 100 * time.Millisecond},
		{Rate: api.Rate{N: 10, Per: time.Second}, Burst: 2},
		{Window: api.Rate{N: 3, Per: time.Second}},
	} {
		skew := slot.Config{Limits: []api.Limit{l}}.WithDefaults().Skew
		_, _, slots := slot.Take(slot.State{}, 7, 7, slot.Limits{l}, skew, now)
		fmt.Printf("%-24s", l.String()+":")
		for _, at := range slots {
			fmt.Printf(" +%v", at.Sub(now))
		}
		fmt.Println()
	}
	// Output:
	// interval 100ms:          +0s +100ms +200ms +300ms +400ms +500ms +600ms
	// rate 10/1s burst 2:      +0s +0s +2ms +102ms +202ms +302ms +402ms
	// window 3/1s:             +0s +0s +0s +1.002s +1.336s +1.67s +2.004s
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
