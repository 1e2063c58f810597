package slot

import (
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/input"
)

// Batched reports whether a queue under c starts its jobs in batches:
// more than one job a start (Config.BatchMax).
func (c Config) Batched() bool { return c.BatchMax > 1 }

// validateBatch checks the batch settings beyond their ranges: a batch's
// wait fits between two starts, and batches go with the settings that
// count starts per queue only. Keys (their limits, their one-at-a-time)
// and the waiting room count per job, which a batch's one start does not
// say yet.
func (c Config) validateBatch() error {
	if c.BatchWait > c.Tick() {
		return input.Invalid("invalid_batch", "batch_wait", fmt.Sprintf("batch_wait %s is longer than %s, the least time between two starts the queue's limit allows on average", c.BatchWait, c.Tick()))
	}
	if !c.Batched() {
		return nil
	}
	switch {
	case c.Keyed():
		return input.Invalid("invalid_batch", "batch_max", "a queue with key_limits starts one job a start: leave batch_max out, or the key limits")
	case c.Bounded():
		return input.Invalid("invalid_batch", "batch_max", "a queue with book_ahead or key_book_ahead starts one job a start: leave batch_max out, or the bounds")
	}
	return nil
}

// Batch is how a take books the line tickets of a queue that starts its
// jobs in batches (Config.Batched).
type Batch struct {
	// Max is the most jobs a start carries (Config.BatchMax).
	Max int
	// Wait is how long the first job of a batch waits for more
	// (Config.BatchWait): a new batch is booked no sooner than Wait
	// after the take.
	Wait time.Duration
	// Margin is how long before its slot (less now) a batch an earlier
	// take opened stops taking jobs: its leader gathers it then. A batch
	// the same take opened takes jobs whatever its slot.
	Margin time.Duration
}

// TakeBatch is Take for a queue that starts its jobs in batches: a line
// ticket joins the last batch booked (the same ticket, the same slot)
// while it holds fewer than b.Max jobs and, if an earlier take opened
// it, its slot lies b.Margin or more after now; otherwise it opens a new
// batch, booked as Take books a ticket, no sooner than b.Wait after now. So n line jobs take as many
// tickets as the batches they open, each ticket one start against ls,
// and tickets[k] is the ticket of the k-th line job, slots[k] its slot.
// The jobs out of line (the last n − line) take a ticket each.
func TakeBatch(s State, n, line int, ls Limits, skew time.Duration, now time.Time, b Batch) (next State, tickets []int64, slots []time.Time) {
	tickets = make([]int64, n)
	slots = make([]time.Time, line)
	before := s.Ticket
	for k := range line {
		open := s.BatchTicket > before || !s.BatchAt.Before(now.Add(b.Margin))
		if s.BatchFill > 0 && s.BatchFill < b.Max && s.BatchAt.Equal(s.Clock) && open {
			s.BatchFill++
			tickets[k], slots[k] = s.BatchTicket, s.BatchAt
			continue
		}
		s.Ticket++
		s, slots[k] = book(s, ls, skew, now.Add(b.Wait))
		s.BatchTicket, s.BatchAt, s.BatchFill = s.Ticket, slots[k], 1
		tickets[k] = s.Ticket
	}
	for k := line; k < n; k++ {
		s.Ticket++
		tickets[k] = s.Ticket
	}
	return s, tickets, slots
}
