package dynamostore

import (
	"math"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// TestGateExpressionSize: the largest gate, which drops maxDropped ended
// places and overwrites its own, keeps each expression within DynamoDB's
// 4 KB, whatever the tickets (they are placeholders' values, which do not
// count).
func TestGateExpressionSize(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC)
	r := engine.GateRequest{Queue: "q", Ticket: math.MaxInt64, Interval: time.Second, Skew: time.Second,
		Now: now, MaxRunning: slot.MaxRunningLimit, Until: now.Add(time.Minute)}
	seen := slot.State{LastStart: now, Running: map[int64]time.Time{r.Ticket: now.Add(-time.Nanosecond)}}
	for i := range maxDropped + 5 {
		seen.Running[math.MaxInt64-1-int64(i)] = now.Add(-time.Duration(i+1) * time.Nanosecond)
	}
	in := gateExprs(r, time.Second, 0, true, seen, newToken())
	cond, upd := in.cond, in.update
	t.Logf("condition %d bytes, update %d bytes, %d names", len(cond), len(upd), len(in.names))
	if len(cond) > 4096 || len(upd) > 4096 {
		t.Errorf("condition %d bytes, update %d bytes: DynamoDB takes 4,096 at most", len(cond), len(upd))
	}
	if f := capFormOf(seen, r); len(f.dropped) != maxDropped || !f.mine || f.bound != r.MaxRunning+maxDropped+1 {
		t.Errorf("form drops %d, mine %v, bound %d; want %d, true, %d", len(f.dropped), f.mine, f.bound, maxDropped, r.MaxRunning+maxDropped+1)
	}
}
