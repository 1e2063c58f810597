package dynamomodel_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/bench/dynamomodel"
	"github.com/slotq/slotq/internal/dev/storetest"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// TestState runs the conformance suite on the model, with latencies small
// enough for the suite's hundreds of calls and throughput high enough
// that it throttles nothing: the model keeps the embedded store's
// semantics whatever the calls' timing.
func TestState(t *testing.T) {
	storetest.Run(t, func(*testing.T) engine.State {
		return dynamomodel.New(memstore.New(memstore.Options{}), dynamomodel.Options{
			Latency:    dynamomodel.Latency{Median: 100 * time.Microsecond, P99: 400 * time.Microsecond},
			WriteUnits: 1e9, ReadUnits: 1e9,
		})
	})
}

func newQueue(t *testing.T, st engine.State, name string) engine.Queue {
	t.Helper()
	cfg := slot.Config{Interval: time.Second}.WithDefaults()
	if err := st.CreateQueue(t.Context(), engine.Queue{Name: name, Config: cfg, Gen: 1}); err != nil {
		t.Fatal(err)
	}
	q, err := st.GetQueue(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestUnits checks what each kind of call is billed, and where: the
// queue's partition (hot) apart from the jobs'.
func TestUnits(t *testing.T) {
	ctx := t.Context()
	m := dynamomodel.New(memstore.New(memstore.Options{}), dynamomodel.Options{NoLatency: true})
	q := newQueue(t, m, "q")
	m.Reset()

	now := time.Now().Truncate(time.Millisecond)
	taken, err := m.Take(ctx, engine.TakeRequest{Queue: q.Name, N: 1, Line: 1, Limits: q.Config.LimitList(), Skew: q.Config.Skew, Now: now, Seen: q.State, Gen: q.Gen})
	if err != nil {
		t.Fatal(err)
	}
	j := job.Job{Queue: q.Name, ID: "a", Gen: q.Gen, Ticket: taken.First, SlotAt: taken.Slots[0], Status: job.Queued}
	if _, err := m.CreateJobs(ctx, []job.Job{j}); err != nil {
		t.Fatal(err)
	}
	// The same id again: a refused condition on the job's partition.
	if created, err := m.CreateJobs(ctx, []job.Job{j}); err != nil || created[0] {
		t.Fatalf("CreateJobs of an existing job: created %v, %v", created, err)
	}
	if _, err := m.GetQueue(ctx, q.Name); err != nil {
		t.Fatal(err)
	}

	u := m.Units()
	if u.Hot.Writes != 1 || u.Hot.WriteUnits != 1 || u.Hot.Reads != 1 || u.Hot.ReadUnits != 1 || u.Hot.Refused != 0 {
		t.Errorf("hot partition: %+v, want one write and one read of a unit each, nothing refused", u.Hot)
	}
	if u.All.Writes != 3 || u.All.Refused != 1 || u.All.Reads != 1 {
		t.Errorf("all partitions: %+v, want 3 writes (take, job, job again) of which 1 refused, 1 read", u.All)
	}
	if u.HotPeakWriteUnits < 1 {
		t.Errorf("hot peak %v write units a second, want at least the take's 1", u.HotPeakWriteUnits)
	}
}

// TestRefusedGateIsBilled checks that a gate the limit refuses is billed
// as a write, as DynamoDB bills a failed condition.
func TestRefusedGateIsBilled(t *testing.T) {
	ctx := t.Context()
	m := dynamomodel.New(memstore.New(memstore.Options{}), dynamomodel.Options{NoLatency: true})
	q := newQueue(t, m, "q")
	now := time.Now().Truncate(time.Millisecond)
	gate := func(ticket int64, at time.Time) error {
		_, err := m.Gate(ctx, engine.GateRequest{Queue: q.Name, Ticket: ticket, Limits: q.Config.LimitList(),
			Skew: q.Config.Skew, Now: at, At: at, SlotAt: at, Gen: q.Gen, Scheduled: true})
		return err
	}
	if err := gate(1, now); err != nil {
		t.Fatal(err)
	}
	m.Reset()
	var ge *engine.GateError
	if err := gate(2, now.Add(time.Millisecond)); !errors.As(err, &ge) {
		t.Fatalf("a second start 1ms after the first at an interval of 1s: %v, want a *engine.GateError", err)
	}
	if u := m.Units().Hot; u.Writes != 1 || u.Refused != 1 || u.WriteUnits != 1 {
		t.Errorf("hot partition after a refused gate: %+v, want one write, refused, billed a unit", u)
	}
}

// TestThrottle checks a partition's throughput: writes beyond it are
// throttled, sent again by the retryer, and fail once its attempts are
// spent; another partition is not held up.
func TestThrottle(t *testing.T) {
	ctx := t.Context()
	m := dynamomodel.New(memstore.New(memstore.Options{}), dynamomodel.Options{NoLatency: true, WriteUnits: 5, MaxAttempts: 1})
	q := newQueue(t, m, "q")
	other := newQueue(t, m, "other")
	m.Reset()
	var throttled int
	for range 20 {
		_, err := m.Pause(ctx, q.Name, time.Time{})
		if errors.Is(err, dynamomodel.ErrThrottled) {
			throttled++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if throttled == 0 {
		t.Fatal("20 writes at once on a partition of 5 write units a second: none throttled")
	}
	if u := m.Units().Hot; u.Throttled != throttled || u.Writes != 20-throttled {
		t.Errorf("hot partition: %+v, want %d throttled and %d writes", u, throttled, 20-throttled)
	}
	if _, err := m.Pause(ctx, other.Name, time.Time{}); err != nil {
		t.Errorf("a write to another queue's partition: %v", err)
	}
}

// TestThrottleRetried checks that a throttled call is sent again after
// the SDK's backoff and lands once the partition has room.
func TestThrottleRetried(t *testing.T) {
	ctx := t.Context()
	m := dynamomodel.New(memstore.New(memstore.Options{}), dynamomodel.Options{NoLatency: true, WriteUnits: 10})
	q := newQueue(t, m, "q")
	m.Reset()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// 15 writes at once on a partition that holds at most 10 units: some
	// are throttled, and the retryer's backoff (up to 2s, then 4s) gives
	// the partition time to take them all.
	for i := range 15 {
		if _, err := m.Pause(ctx, q.Name, time.Time{}); err != nil {
			t.Fatalf("write %d, with the SDK's retries: %v", i, err)
		}
	}
	if u := m.Units().Hot; u.Throttled == 0 || u.Writes != 15 {
		t.Errorf("hot partition: %+v, want at least one throttle and 15 writes", u)
	}
}

// TestLatency checks that calls take the model's latency: the median
// and p99 of many calls' times, measured around them.
func TestLatency(t *testing.T) {
	ctx := t.Context()
	lat := dynamomodel.Latency{Median: 2 * time.Millisecond, P99: 6 * time.Millisecond}
	m := dynamomodel.New(memstore.New(memstore.Options{}), dynamomodel.Options{Latency: lat, Seed: 3})
	q := newQueue(t, m, "q")
	var took []time.Duration
	for range 300 {
		begin := time.Now()
		if _, err := m.GetQueue(ctx, q.Name); err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(begin))
	}
	slices.Sort(took)
	// A sleep takes at least its time: the median cannot be below the
	// model's; a busy host makes it longer, never shorter.
	if p50 := took[len(took)/2]; p50 < lat.Median*8/10 {
		t.Errorf("median call %v, want about %v", p50, lat.Median)
	}
	if p99 := took[len(took)*99/100]; p99 < lat.P99*7/10 {
		t.Errorf("p99 call %v, want about %v", p99, lat.P99)
	}
}

// TestStaleFormBilled checks that a gate whose form the store would pick
// from a stale read (another start moved the line's current past what it
// read) is billed as internal/dynamostore pays for it: a refused write,
// then the one that lands.
func TestStaleFormBilled(t *testing.T) {
	ctx := t.Context()
	m := dynamomodel.New(memstore.New(memstore.Options{}), dynamomodel.Options{NoLatency: true})
	cfg := slot.Config{Rate: api.Rate{N: 10, Per: time.Second}, Burst: 5}.WithDefaults()
	if err := m.CreateQueue(ctx, engine.Queue{Name: "q", Config: cfg, Gen: 1}); err != nil {
		t.Fatal(err)
	}
	q, err := m.GetQueue(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	ls := cfg.LimitList()
	taken, err := m.Take(ctx, engine.TakeRequest{Queue: "q", N: 2, Line: 2, Limits: ls, Skew: cfg.Skew, Now: now, Seen: q.State, Gen: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := taken.State
	gate := func(ticket int64) {
		t.Helper()
		at := taken.Slots[ticket-1]
		if _, err := m.Gate(ctx, engine.GateRequest{Queue: "q", Ticket: ticket, Limits: ls, Skew: cfg.Skew, Now: at, At: at,
			Seen: seen, Gen: 1}); err != nil {
			t.Fatalf("gate ticket %d: %v", ticket, err)
		}
	}
	m.Reset()
	gate(2) // moves current to 2
	if u := m.Units().Hot; u.Writes != 1 || u.Refused != 0 {
		t.Fatalf("a gate from the state as it is: %+v, want one write, none refused", u)
	}
	m.Reset()
	gate(1) // read before ticket 2's gate: its form would move current
	if u := m.Units().Hot; u.Writes != 2 || u.Refused != 1 {
		t.Errorf("a gate from a stale read: %+v, want two writes, one refused", u)
	}
}

// TestDebounceUnits checks that the model keeps debounce items and bills
// each step one call on the debounce partition: an open, a join, a
// refused join after the close (billed as a write), the close, a read.
func TestDebounceUnits(t *testing.T) {
	ctx := t.Context()
	m := dynamomodel.New(memstore.New(memstore.Options{}), dynamomodel.Options{NoLatency: true})
	now := time.Now().Truncate(time.Millisecond)
	d := engine.Debounce{Queue: "q", Gen: 1, Key: "k", JobID: "a", Until: now.Add(time.Second), Payload: []byte(`{"n":1}`)}
	if err := m.OpenDebounce(ctx, d, engine.Debounce{}); err != nil {
		t.Fatal(err)
	}
	d.Payload = []byte(`{"n":2}`)
	if got, err := m.JoinDebounce(ctx, d, now); err != nil || got.JobID != "a" {
		t.Fatalf("join: %+v, %v", got, err)
	}
	got, err := m.CloseDebounce(ctx, "q", "k", "a", now.Add(2*time.Second))
	if err != nil || string(got.Payload) != `{"n":2}` {
		t.Fatalf("close: %+v, %v; want the last payload", got, err)
	}
	if _, err := m.JoinDebounce(ctx, d, now.Add(2*time.Second)); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a join after the close: %v, want ErrConflict", err)
	}
	if _, err := m.GetDebounce(ctx, "q", "k"); err != nil {
		t.Fatal(err)
	}
	if u := m.Units(); u.All.Writes != 4 || u.All.Refused != 1 || u.All.Reads != 1 {
		t.Errorf("units %+v, want 4 writes (open, join, close, the refused join), 1 refused, 1 read", u.All)
	}
}
