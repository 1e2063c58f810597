// Package storetest is the conformance suite for engine.State: the contract
// in internal/engine/state.go, stated as tests. Every state store runs it —
// internal/memstore on every go test, internal/dynamostore against a DynamoDB
// endpoint — so the engine can rely on one behaviour whatever the backend.
//
// Each subtest works on queues of its own, named from the test name and a
// random suffix, so stores that share a table (DynamoDB) need not be emptied
// between subtests. Times are whole milliseconds, the precision DynamoDB
// keeps, and are compared with time.Time.Equal.
package storetest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Run runs the suite. newState returns the store a subtest uses: a fresh
// one, or a shared one (queue names never repeat).
func Run(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("Queue", func(t *testing.T) { testQueue(t, newState) })
	t.Run("Take", func(t *testing.T) { testTake(t, newState) })
	t.Run("Gate", func(t *testing.T) { testGate(t, newState) })
	t.Run("Jobs", func(t *testing.T) { testJobs(t, newState) })
	t.Run("Moves", func(t *testing.T) { testMoves(t, newState) })
	t.Run("Lease", func(t *testing.T) { testLease(t, newState) })
	t.Run("Lanes", func(t *testing.T) { testLanes(t, newState) })
	t.Run("Skip", func(t *testing.T) { testSkip(t, newState) })
	t.Run("Due", func(t *testing.T) { testDue(t, newState) })
	t.Run("Forms", func(t *testing.T) { testForms(t, newState) })
	t.Run("Meters", func(t *testing.T) { testMeters(t, newState) })
	t.Run("Horizons", func(t *testing.T) { testHorizons(t, newState) })
	t.Run("Schedules", func(t *testing.T) { testSchedules(t, newState) })
	t.Run("SlowDown", func(t *testing.T) { testSlowDown(t, newState) })
	t.Run("Reconfigure", func(t *testing.T) { testReconfigure(t, newState) })
	t.Run("Booked", func(t *testing.T) { testBooked(t, newState) })
	t.Run("Schema", func(t *testing.T) { testSchema(t, newState) })
}

// base is the suite's fixed "now"; every time passed in derives from it.
var base = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// Expiry is judged by the store's own clock, which the suite cannot set,
// so expired and unexpired jobs lie far from any real now.
var (
	longAgo   = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	farFuture = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

const interval = time.Second

func at(d time.Duration) time.Time { return base.Add(d) }

// queueName returns a queue name no other subtest or run uses.
func queueName(t *testing.T) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '.'
	}, strings.TrimPrefix(t.Name(), "TestState"))
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return fmt.Sprintf("st-%s-%s", strings.Trim(name, "."), hex.EncodeToString(b[:]))
}

func testConfig(iv time.Duration) slot.Config {
	return slot.Config{Interval: iv, Targets: []string{"https://example.com/*"}}.WithDefaults()
}

// newQueue creates a queue with the given interval and returns its name.
func newQueue(t *testing.T, st engine.State, iv time.Duration) string {
	t.Helper()
	name := queueName(t)
	if err := st.CreateQueue(t.Context(), engine.Queue{Name: name, Config: testConfig(iv), CreatedAt: base}); err != nil {
		t.Fatalf("CreateQueue(%s): %v", name, err)
	}
	return name
}

func getQueue(t *testing.T, st engine.State, name string) engine.Queue {
	t.Helper()
	q, err := st.GetQueue(t.Context(), name)
	if err != nil {
		t.Fatalf("GetQueue(%s): %v", name, err)
	}
	return q
}

func take(t *testing.T, st engine.State, queue string, n, line int, now time.Time) engine.Taken {
	t.Helper()
	tk, err := st.Take(t.Context(), engine.TakeRequest{Queue: queue, N: n, Line: line, Interval: interval, Now: now})
	if err != nil {
		t.Fatalf("Take(%s, n=%d, line=%d): %v", queue, n, line, err)
	}
	return tk
}

// newJob returns a job record with every commonly set field filled.
func newJob(queue, id string, ticket int64, status job.Status) job.Job {
	return job.Job{
		Queue: queue, ID: id, Kind: "storetest.noop", Payload: []byte(`{"id":"` + id + `"}`),
		Status: status, Ticket: ticket, SlotAt: at(time.Duration(ticket) * interval),
		Attempt: 1, EnqueuedAt: base,
	}
}

func createJobs(t *testing.T, st engine.State, jobs ...job.Job) {
	t.Helper()
	created, err := st.CreateJobs(t.Context(), jobs)
	if err != nil {
		t.Fatalf("CreateJobs: %v", err)
	}
	if len(created) != len(jobs) {
		t.Fatalf("CreateJobs: got %d answers for %d jobs", len(created), len(jobs))
	}
	for i, c := range created {
		if !c {
			t.Fatalf("CreateJobs: jobs[%d] (%s) reported as existing", i, jobs[i].ID)
		}
	}
}

func getJob(t *testing.T, st engine.State, queue, id string) job.Job {
	t.Helper()
	j, err := st.GetJob(t.Context(), job.Ref{Queue: queue, ID: id})
	if err != nil {
		t.Fatalf("GetJob(%s/%s): %v", queue, id, err)
	}
	return j
}

// differ gathers the fields in which a record differs from the one
// wanted.
type differ []string

// check notes field, got g and wanted w, unless ok.
func (d *differ) check(field string, ok bool, g, w any) {
	if !ok {
		*d = append(*d, fmt.Sprintf("%s: got %v, want %v", field, g, w))
	}
}

// String lists the differences, or is "".
func (d differ) String() string { return strings.Join(d, "; ") }

// diffJob describes how got differs from want, or returns "".
func diffJob(got, want job.Job) string {
	var d differ
	d.check("Queue", got.Queue == want.Queue, got.Queue, want.Queue)
	d.check("ID", got.ID == want.ID, got.ID, want.ID)
	d.check("Kind", got.Kind == want.Kind, got.Kind, want.Kind)
	d.check("Target", got.Target == want.Target, got.Target, want.Target)
	d.check("Payload", bytes.Equal(got.Payload, want.Payload), string(got.Payload), string(want.Payload))
	d.check("Status", got.Status == want.Status, got.Status, want.Status)
	d.check("Ticket", got.Ticket == want.Ticket, got.Ticket, want.Ticket)
	d.check("SlotAt", got.SlotAt.Equal(want.SlotAt), got.SlotAt, want.SlotAt)
	d.check("NotBefore", got.NotBefore.Equal(want.NotBefore), got.NotBefore, want.NotBefore)
	d.check("Scheduled", got.Scheduled == want.Scheduled, got.Scheduled, want.Scheduled)
	d.check("Lane", got.Key == want.Key, got.Key, want.Key)
	d.check("Detached", got.Detached == want.Detached, got.Detached, want.Detached)
	d.check("Attempt", got.Attempt == want.Attempt, got.Attempt, want.Attempt)
	d.check("Retickets", got.Retickets == want.Retickets, got.Retickets, want.Retickets)
	d.check("ParkReason", got.ParkReason == want.ParkReason, got.ParkReason, want.ParkReason)
	d.check("DueAt", got.DueAt.Equal(want.DueAt), got.DueAt, want.DueAt)
	d.check("EnqueuedAt", got.EnqueuedAt.Equal(want.EnqueuedAt), got.EnqueuedAt, want.EnqueuedAt)
	d.check("StartedAt", got.StartedAt.Equal(want.StartedAt), got.StartedAt, want.StartedAt)
	d.check("FinishedAt", got.FinishedAt.Equal(want.FinishedAt), got.FinishedAt, want.FinishedAt)
	d.check("LastError", got.LastError == want.LastError, got.LastError, want.LastError)
	d.check("ExpiresAt", got.ExpiresAt.Equal(want.ExpiresAt), got.ExpiresAt, want.ExpiresAt)
	d.check("Reruns", got.Reruns == want.Reruns, got.Reruns, want.Reruns)
	d.check("RerunFrom", got.RerunFrom == want.RerunFrom, got.RerunFrom, want.RerunFrom)
	d.check("TraceParent", got.TraceParent == want.TraceParent, got.TraceParent, want.TraceParent)
	d.check("TraceState", got.TraceState == want.TraceState, got.TraceState, want.TraceState)
	d.check("AttemptSpan", got.AttemptSpan == want.AttemptSpan, got.AttemptSpan, want.AttemptSpan)
	d.check("Result", bytes.Equal(got.Result, want.Result), string(got.Result), string(want.Result))
	d.check("ResultDropped", got.ResultDropped == want.ResultDropped, got.ResultDropped, want.ResultDropped)
	gh, wh := job.EncodeHistory(got.History, want.EnqueuedAt), job.EncodeHistory(want.History, want.EnqueuedAt)
	d.check("History", gh == wh, gh, wh)
	d.check("HistoryDropped", got.HistoryDropped == want.HistoryDropped, got.HistoryDropped, want.HistoryDropped)
	d.check("Priority", got.Priority == want.Priority, got.Priority, want.Priority)
	d.check("Booking", got.Booking == want.Booking, got.Booking, want.Booking)
	return d.String()
}

// diffState describes how got differs from want, or returns "".
func diffState(got, want slot.State) string {
	var d differ
	d.check("Ticket", got.Ticket == want.Ticket, got.Ticket, want.Ticket)
	d.check("Current", got.Current == want.Current, got.Current, want.Current)
	d.check("Clock", got.Clock.Equal(want.Clock), got.Clock, want.Clock)
	d.check("LastStart", got.LastStart.Equal(want.LastStart), got.LastStart, want.LastStart)
	d.check("Front", got.Front.Equal(want.Front), got.Front, want.Front)
	d.check("Paused", got.Paused == want.Paused, got.Paused, want.Paused)
	d.check("PausedUntil", got.PausedUntil.Equal(want.PausedUntil), got.PausedUntil, want.PausedUntil)
	if !want.RunFrom.IsZero() { // states the tests write by hand say nothing of the run
		d.check("RunFrom", got.RunFrom.Equal(want.RunFrom), got.RunFrom, want.RunFrom)
	}
	d.check("Gated", got.Gated == want.Gated, got.Gated, want.Gated)
	d.check("GatedUntil", got.GatedUntil.Equal(want.GatedUntil), got.GatedUntil, want.GatedUntil)
	d.check("GatedThrough", got.GatedThrough == want.GatedThrough, got.GatedThrough, want.GatedThrough)
	return d.String()
}

func wantState(t *testing.T, what string, got, want slot.State) {
	t.Helper()
	if d := diffState(got, want); d != "" {
		t.Errorf("%s: %s", what, d)
	}
}

func sameConfig(a, b slot.Config) bool {
	if len(a.Targets) == 0 && len(b.Targets) == 0 {
		a.Targets, b.Targets = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

func tickets(jobs []job.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.Ticket
	}
	return out
}

func equalTickets(got []job.Job, want ...int64) bool {
	return slices.Equal(tickets(got), want)
}

// lineState is a queue state with no start recorded and no pause.
func lineState(ticket, current int64, clock time.Time) slot.State {
	return slot.State{Ticket: ticket, Current: current, Clock: clock}
}

// firstSlot is the first line slot a take gave (zero if none).
func firstSlot(tk engine.Taken) time.Time {
	if len(tk.Slots) == 0 {
		return time.Time{}
	}
	return tk.Slots[0]
}

// oneWins checks that exactly one of the concurrent calls whose errors
// are errs succeeded (what names them), and that the others lost with
// lost.
func oneWins(t *testing.T, what string, errs []error, lost error) {
	t.Helper()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, lost):
			t.Errorf("%s: call %d: got %v, want %v", what, i, err, lost)
		}
	}
	if won != 1 {
		t.Errorf("%s: %d of %d won, want 1", what, won, len(errs))
	}
}

// atOnce runs call(i) for each i below n, each on a goroutine of its
// own, all let go at once (callers racing for one write), and returns
// when all have returned.
func atOnce(n int, call func(i int)) {
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-ready
			call(i)
		})
	}
	close(ready)
	wg.Wait()
}
