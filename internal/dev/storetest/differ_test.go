package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// The differ names each field it is given that differs, whatever its
// kind, and no other: a time by Equal, bytes by their content.
func TestDiffer(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j := job.Job{Queue: "q", ID: "a", Payload: []byte(`{}`), Status: job.Queued, Ticket: 1, SlotAt: at, Priority: 2}
	if d := diffJob(j, j); d != "" {
		t.Errorf("a job against itself: %s", d)
	}
	same := j
	same.SlotAt, same.Payload = at.In(time.FixedZone("x", 3600)), []byte(`{}`)
	if d := diffJob(same, j); d != "" {
		t.Errorf("the same instant elsewhere, the same bytes: %s", d)
	}
	other := j
	other.SlotAt, other.Payload, other.Status, other.Priority = at.Add(time.Millisecond), []byte(`{"v":1}`), job.Parked, 3
	d := diffJob(other, j)
	for _, f := range []string{"SlotAt", "Payload: got {\"v\":1}, want {}", "Status", "Priority"} {
		if !strings.Contains(d, f) {
			t.Errorf("diffJob says %q, nothing of %s", d, f)
		}
	}
	if strings.Contains(d, "Ticket") {
		t.Errorf("diffJob says %q: Ticket did not change", d)
	}
	if d := diffState(slot.State{Ticket: 2, Clock: at}, slot.State{Ticket: 2}); !strings.HasPrefix(d, "Clock:") {
		t.Errorf("diffState = %q, want the clock", d)
	}
}
