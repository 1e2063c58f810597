package workload

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/pkg/api"
)

// TestFairReport scores a made-up run of the fair workload: each figure of
// the table from the starts, enqueues and bookings it saw.
func TestFairReport(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	cfg := FairConfig{Rate: api.Rate{N: 200, Per: time.Second}, KeyBookAhead: 5, LateKeys: 2}
	res := fairResult{Skew: time.Millisecond, Enqueued: map[string]time.Time{}, Keys: map[string]string{},
		Urgent: map[string]bool{}, Booked: map[string]time.Time{}, Told: map[string]time.Time{}, Waited: 3}
	// job, key, urgent, enqueued, booked, told, started (ms after t0)
	jobs := []struct {
		id, key                    string
		urgent                     bool
		enq, booked, told, started int
	}{
		{"a1", "A", false, 0, 0, 0, 0},
		{"a2", "A", false, 0, 0, 5, 6},
		{"k1", "k01", false, 1000, 1000, 1010, 1010},
		{"k1b", "k01", false, 1000, 1005, 1015, 1016},
		{"k2", "k02", false, 1000, 1002, 1020, 1020},
		{"u1", "A", true, 2000, 2030, 2040, 2043},
		{"u2", "A", true, 2000, 2050, 2060, 2060},
		{"a3", "A", false, 0, 2000, 2065, 2065},
	}
	for _, j := range jobs {
		res.Enqueued[j.id], res.Keys[j.id], res.Urgent[j.id] = ms(j.enq), j.key, j.urgent
		res.Booked[j.id], res.Told[j.id] = ms(j.booked), ms(j.told)
		res.Starts = append(res.Starts, timeline.Start{JobID: j.id, Key: j.key, At: ms(j.started), Gate: ms(j.started)})
	}
	r := newFairReport(cfg, res)
	want := fairReport{
		Jobs: 8, Waited: 3,
		// k01 first starts 10ms after its enqueue, k02 20ms.
		LateFirstP50: 10 * time.Millisecond, LateFirstP99: 20 * time.Millisecond,
		UrgentBookedP50: 30 * time.Millisecond, UrgentBookedP99: 50 * time.Millisecond,
		UrgentStartP50: 43 * time.Millisecond, UrgentStartP99: 60 * time.Millisecond,
		// A's own jobs, the urgent left out: 0 to 2065ms; ideal of 8
		// starts at 200/s.
		HeavyMakespan: 2065 * time.Millisecond, Ideal: 35 * time.Millisecond,
		// k1 at 1010 and k1b at 1016 keep 5ms; a2 at 6 and a1 at 0 too; u1
		// at 2043 and a3... none closer than 5ms − skew.
		ToldP50: 0, ToldP99: 3 * time.Millisecond, ToldMax: 3 * time.Millisecond,
	}
	if r != want {
		t.Errorf("report:\n got %+v\nwant %+v", r, want)
	}
	if p := r.problems(); len(p) != 0 {
		t.Errorf("problems of a clean run: %v", p)
	}

	// Two starts 1ms apart break the queue's limit; a job run twice, one
	// lost, one started without a booking.
	res.Starts = append(res.Starts,
		timeline.Start{JobID: "x", Key: "A", At: ms(3000), Gate: ms(3000)},
		timeline.Start{JobID: "y", Key: "A", At: ms(3001), Gate: ms(3001)},
		timeline.Start{JobID: "k2", Key: "k02", At: ms(3100), Gate: ms(3100)})
	res.Enqueued["x"], res.Enqueued["y"] = t0, t0
	res.Told["x"], res.Told["y"] = ms(3000), ms(3000)
	res.Unfinished, res.Unstarted, res.StartedTwice = 1, 1, 1
	delete(res.Told, "u2")
	r = newFairReport(cfg, res)
	if r.Violations != 1 || r.GateViolations != 1 {
		t.Errorf("violations: handler %d, gate %d; want 1 and 1", r.Violations, r.GateViolations)
	}
	if r.Untold != 1 || r.Lost != 1 || r.Twice != 1 {
		t.Errorf("untold %d, lost %d, twice %d; want 1 each", r.Untold, r.Lost, r.Twice)
	}
	p := strings.Join(r.problems(), "; ")
	for _, w := range []string{"1 violations of the queue's limit at the gate", "1 of 10 jobs lost", "1 jobs ran more than once", "1 jobs started without a booking"} {
		if !strings.Contains(p, w) {
			t.Errorf("problems %q lack %q", p, w)
		}
	}
}

// TestBenchFairSmall runs a small fair workload end to end: every job runs
// once, the late keys and the urgent jobs go through the waiting room, and
// the gate keeps the queue's limit.
func TestBenchFairSmall(t *testing.T) {
	cfg := FairConfig{Queue: "fair", Rate: api.Rate{N: 200, Per: time.Second}, KeyBookAhead: 3, KeyMaxRunning: 100,
		Heavy: 60, LateKeys: 3, LateJobs: 4, LateAfter: 50 * time.Millisecond,
		Urgent: 5, UrgentKey: "A", UrgentAfter: 100 * time.Millisecond, Workers: 8, Seed: 1, Timeout: 2 * time.Minute}
	res, err := runFair(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := newFairReport(cfg, res)
	if p := r.problems(); len(p) > 0 {
		t.Fatalf("problems: %v", p)
	}
	if r.Jobs != cfg.total() || len(res.Booked) != cfg.total() {
		t.Errorf("jobs %d, booked %d; want %d each", r.Jobs, len(res.Booked), cfg.total())
	}
	if r.Waited == 0 {
		t.Errorf("no job waited in the room: %+v", r)
	}
	var b strings.Builder
	tw := newTable(&b, fairHeader)
	tw.row(r.row("1"))
	if got := strings.Count(b.String(), "\n"); got != 2 {
		t.Errorf("table of %d lines:\n%s", got, b.String())
	}
	if t.Failed() {
		t.Log(b.String())
	}
}
