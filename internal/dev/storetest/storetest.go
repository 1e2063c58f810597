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
	t.Run("Batch", func(t *testing.T) { testBatch(t, newState) })
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

// fields notes each named field in which got and want, records of one
// struct type, differ: times by Equal, bytes by bytes.Equal (nil and
// empty alike, shown as text), any other field by ==.
func (d *differ) fields(got, want any, names ...string) {
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for _, n := range names {
		gf, wf := g.FieldByName(n), w.FieldByName(n)
		gv, wv := gf.Interface(), wf.Interface()
		var ok bool
		switch x := gv.(type) {
		case time.Time:
			ok = x.Equal(wv.(time.Time))
		default:
			if gf.Kind() == reflect.Slice && gf.Type().Elem().Kind() == reflect.Uint8 {
				ok, gv, wv = bytes.Equal(gf.Bytes(), wf.Bytes()), string(gf.Bytes()), string(wf.Bytes())
			} else {
				ok = gv == wv
			}
		}
		d.check(n, ok, gv, wv)
	}
}

// String lists the differences, or is "".
func (d differ) String() string { return strings.Join(d, "; ") }

// diffJob describes how got differs from want, or returns "".
func diffJob(got, want job.Job) string {
	var d differ
	d.fields(got, want, "Queue", "ID", "Kind", "Target", "Payload", "Status", "Ticket", "SlotAt", "NotBefore", "Scheduled",
		"Key", "Detached", "Attempt", "Retickets", "ParkReason", "DueAt", "EnqueuedAt", "StartedAt", "FinishedAt", "LastError",
		"ExpiresAt", "Reruns", "RerunFrom", "TraceParent", "TraceState", "AttemptSpan", "Result", "ResultDropped")
	gh, wh := job.EncodeHistory(got.History, want.EnqueuedAt), job.EncodeHistory(want.History, want.EnqueuedAt)
	d.check("History", gh == wh, gh, wh)
	d.fields(got, want, "HistoryDropped", "Priority", "Booking")
	return d.String()
}

// diffState describes how got differs from want, or returns "".
func diffState(got, want slot.State) string {
	var d differ
	d.fields(got, want, "Ticket", "Current", "Clock", "LastStart", "Front", "Paused", "PausedUntil")
	if !want.RunFrom.IsZero() { // states the tests write by hand say nothing of the run
		d.fields(got, want, "RunFrom")
	}
	d.fields(got, want, "Gated", "GatedUntil", "GatedThrough")
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
