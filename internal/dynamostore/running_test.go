package dynamostore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// TestGateDropsEveryEndedPlace: a queue ran slot.MaxRunningLimit attempts
// whose workers all died, and its cap was lowered since. The next start
// drops every ended place in its one write (an expression DynamoDB takes:
// under 4 KB), so the lowered cap does not leave the queue stuck behind
// entries that no start could clear.
func TestGateDropsEveryEndedPlace(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	const iv = time.Millisecond
	newQueue(t, st, "q", iv)
	const n = slot.MaxRunningLimit
	if _, err := st.Take(ctx, engine.TakeRequest{Queue: "q", N: n + 1, Interval: iv, Now: base}); err != nil {
		t.Fatal(err)
	}
	var s slot.State
	for ticket := int64(1); ticket <= n; ticket++ {
		var err error
		now := base.Add(time.Duration(ticket) * iv)
		s, err = st.Gate(ctx, engine.GateRequest{Queue: "q", Ticket: ticket, Interval: iv, Now: now, Scheduled: true,
			MaxRunning: n, Until: base.Add(time.Second), Seen: s})
		if err != nil {
			t.Fatalf("ticket %d: %v", ticket, err)
		}
	}
	if len(s.Running) != n {
		t.Fatalf("%d places taken, want %d", len(s.Running), n)
	}
	now := base.Add(time.Minute)
	s, err := st.Gate(ctx, engine.GateRequest{Queue: "q", Ticket: n + 1, Interval: iv, Now: now, Scheduled: true,
		MaxRunning: 2, Until: now.Add(time.Minute), Seen: s})
	if err != nil {
		t.Fatalf("the start after every lease ended: %v", err)
	}
	if len(s.Running) != 1 || !s.Running[n+1].Equal(now.Add(time.Minute)) {
		t.Errorf("running %v, want ticket %d's place alone", s.Running, n+1)
	}
}

// TestGateRetryMeetsItsOwnPlace: a gate under a cap lands, its answer is
// lost, and another start lands before the SDK sends it again. The
// re-sent gate no longer finds its write token (the item carries the
// other's), and now fails the cap, whose last place it took itself; but
// its own entry, ticket and until, shows that it landed, and it passes
// instead of answering slot.Full for a start that happened.
func TestGateRetryMeetsItsOwnPlace(t *testing.T) {
	api := newClient(t, nil, fastRetries)
	table := newTable(t, api)
	clean := dynamostore.New(api, table, dynamostore.Options{})
	newQueue(t, clean, "q", time.Millisecond)
	req := func(ticket int64, now, until time.Time) engine.GateRequest {
		return engine.GateRequest{Queue: "q", Ticket: ticket, Interval: time.Millisecond, Now: now,
			Scheduled: true, MaxRunning: 2, Until: until}
	}
	var otherErr error
	f := newFaultyDB(api, 1, 0, faultRule{Op: "UpdateItem", If: onStateItem, Fault: faultLost, Rate: 1, N: 1, Then: func() {
		_, otherErr = clean.Gate(t.Context(), req(2, base.Add(time.Millisecond), base.Add(time.Hour)))
	}})
	st := dynamostore.New(f, table, dynamostore.Options{})
	until := base.Add(time.Minute)
	s, err := st.Gate(t.Context(), req(1, base, until))
	if err != nil || otherErr != nil {
		t.Fatalf("gates: %v, %v", err, otherErr)
	}
	if f.Injected("UpdateItem", faultLost) != 1 {
		t.Fatalf("injected %s; want one lost answer", f)
	}
	if len(s.Running) != 2 || !s.Running[1].Equal(until) {
		t.Errorf("running %v, want tickets 1 and 2", s.Running)
	}
	// A gate of the same ticket with another until is another start (a
	// redelivery whose first worker died before its claim): it takes its
	// own place again, and no other.
	later := until.Add(time.Second)
	s, err = clean.Gate(t.Context(), req(1, base.Add(2*time.Millisecond), later))
	if err != nil || len(s.Running) != 2 || !s.Running[1].Equal(later) {
		t.Errorf("another start of ticket 1: running %v, %v; want its own place, until %v", s.Running, err, later)
	}
	_, err = clean.Gate(t.Context(), req(3, base.Add(3*time.Millisecond), later))
	var ge *engine.GateError
	if !errors.As(err, &ge) || ge.Verdict != slot.Full {
		t.Errorf("ticket 3 with both places taken: %v, want slot.Full", err)
	}
}
