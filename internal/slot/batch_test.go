package slot

import (
	"errors"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/input"
)

// A take on a batched queue books one ticket and one slot a batch: its
// line jobs fill a batch up to Max, the first waits Wait for more, and
// the batches lie one interval apart.
func TestTakeBatchBooksOneSlotABatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ls := Every(100 * time.Millisecond)
	b := Batch{Max: 10, Wait: 50 * time.Millisecond, Margin: 60 * time.Millisecond}
	s, tickets, slots := TakeBatch(State{}, 25, 25, ls, 0, t0, b)
	for k := range 25 {
		if want := int64(k/10 + 1); tickets[k] != want {
			t.Fatalf("job %d: ticket %d, want %d", k, tickets[k], want)
		}
		if want := t0.Add(50*time.Millisecond + time.Duration(k/10)*100*time.Millisecond); !slots[k].Equal(want) {
			t.Fatalf("job %d: slot %v, want %v", k, slots[k].Sub(t0), want.Sub(t0))
		}
	}
	if s.Ticket != 3 || s.BatchTicket != 3 || s.BatchFill != 5 {
		t.Fatalf("state after: ticket %d, batch %d holding %d; want 3, 3, 5", s.Ticket, s.BatchTicket, s.BatchFill)
	}
	// A later take joins the last batch while it has room and its slot
	// lies beyond the margin…
	s, tickets, _ = TakeBatch(s, 7, 7, ls, 0, t0.Add(10*time.Millisecond), b)
	for k, tk := range tickets {
		if want := int64(3 + k/5); tk != want {
			t.Fatalf("second take, job %d: ticket %d, want %d (5 join batch 3, the rest open batch 4)", k, tk, want)
		}
	}
	// …and opens a new one once its slot comes within the margin,
	// though one take's jobs fill the batches it opens whatever the
	// margin (50ms wait, 60ms margin above).
	at := s.BatchAt.Add(-b.Margin + time.Nanosecond)
	_, tickets, slots = TakeBatch(s, 1, 1, ls, 0, at, b)
	if tickets[0] != 5 || !slots[0].After(s.BatchAt) {
		t.Fatalf("take %v before the last batch's slot: ticket %d at %v, want a new batch (ticket 5) after it", s.BatchAt.Sub(at), tickets[0], slots[0])
	}
}

// Jobs out of line (scheduled) take a ticket each, after the line's.
func TestTakeBatchOutOfLine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s, tickets, slots := TakeBatch(State{}, 5, 3, Every(time.Second), 0, t0, Batch{Max: 10})
	if want := []int64{1, 1, 1, 2, 3}; len(slots) != 3 || !equalTickets(tickets, want) || s.Ticket != 3 {
		t.Fatalf("tickets %v (state %d), slots %d; want %v, 3 slots", tickets, s.Ticket, len(slots), want)
	}
}

func equalTickets(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A batch's settings are refused, naming the field, out of range, beyond
// the time between starts, or beside settings that count per job.
func TestBatchSettingsChecked(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"too big", Config{BatchMax: 101}, "batch_max"},
		{"negative wait", Config{BatchMax: 2, BatchWait: -time.Millisecond}, "batch_wait"},
		{"wait past the interval", Config{Interval: 100 * time.Millisecond, BatchMax: 10, BatchWait: 101 * time.Millisecond}, "batch_wait"},
		{"keys", Config{BatchMax: 10, KeyLimits: Every(time.Second)}, "batch_max"},
		{"waiting room", Config{BatchMax: 10, BookAhead: 5}, "batch_max"},
	} {
		err := c.cfg.WithDefaults().Validate()
		var ie *input.Error
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: %v, want an input error on %s", c.name, err, c.field)
		}
	}
	if err := (Config{Interval: 100 * time.Millisecond, BatchMax: 100, BatchWait: 100 * time.Millisecond}).WithDefaults().Validate(); err != nil {
		t.Errorf("a batch of 100 waiting an interval: %v", err)
	}
}
