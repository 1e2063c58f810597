package dynamostore_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

var base = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func newQueue(t *testing.T, st engine.State, name string, iv time.Duration) {
	t.Helper()
	cfg := slot.Config{Interval: iv}.WithDefaults()
	if err := st.CreateQueue(t.Context(), engine.Queue{Name: name, Config: cfg, CreatedAt: base}); err != nil {
		t.Fatalf("CreateQueue(%s): %v", name, err)
	}
}

func queuedJob(queue, id string, ticket int64) job.Job {
	return job.Job{Queue: queue, ID: id, Kind: "test", Status: job.Queued, Ticket: ticket, Attempt: 1, SlotAt: base, EnqueuedAt: base}
}

// op names a request: "GetItem", "TransactWriteItems", …
func op(r *http.Request) string {
	t := r.Header.Get("X-Amz-Target")
	return t[strings.LastIndex(t, ".")+1:]
}

// fastRetries keeps the SDK's standard retryer (what it retries, how
// often) but waits a millisecond between attempts.
func fastRetries(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
	})
}

func TestMissingTable(t *testing.T) {
	st := dynamostore.New(newClient(t, nil), "slotq-no-such-table", dynamostore.Options{})
	ctx := t.Context()
	calls := map[string]func() error{
		"GetQueue": func() error { _, err := st.GetQueue(ctx, "q"); return err },
		"CreateQueue": func() error {
			return st.CreateQueue(ctx, engine.Queue{Name: "q", Config: slot.Config{Interval: time.Second}})
		},
		"Take": func() error {
			_, err := st.Take(ctx, engine.TakeRequest{Queue: "q", N: 1, Line: 1, Interval: time.Second, Now: base})
			return err
		},
		"Gate": func() error {
			_, err := st.Gate(ctx, engine.GateRequest{Queue: "q", Ticket: 1, Interval: time.Second, Now: base})
			return err
		},
		"CreateJobs": func() error {
			_, err := st.CreateJobs(ctx, []job.Job{queuedJob("q", "a", 1), queuedJob("q", "b", 2)})
			return err
		},
		"UpdateJob": func() error {
			j := queuedJob("q", "a", 1)
			return st.UpdateJob(ctx, j, j.Version())
		},
		"ListJobs": func() error {
			_, err := st.ListJobs(ctx, engine.ListRequest{Queue: "q", Status: job.Parked})
			return err
		},
		"ListQueues": func() error { _, err := st.ListQueues(ctx); return err },
		"ListDue":    func() error { _, err := st.ListDue(ctx, base, 10); return err },
		"ListHeld":   func() error { _, err := st.ListHeld(ctx, "q", 0, 10); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			var rnf *types.ResourceNotFoundException
			if !errors.Is(err, dynamostore.ErrTableNotFound) || !errors.As(err, &rnf) {
				t.Fatalf("got %v, want ErrTableNotFound wrapping ResourceNotFoundException", err)
			}
			if !strings.Contains(err.Error(), "slotq-no-such-table") {
				t.Errorf("error %q does not name the table", err)
			}
		})
	}
}

func TestConditionalFailures(t *testing.T) {
	api := newClient(t, nil)
	m := awsmeter.NewDynamoDB(api)
	st := dynamostore.New(m, newTable(t, api), dynamostore.Options{})
	ctx := t.Context()
	newQueue(t, st, "q", time.Second)
	newQueue(t, st, "paused", time.Second)
	if _, err := st.Pause(ctx, "paused", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Take(ctx, engine.TakeRequest{Queue: "q", N: 3, Line: 3, Interval: time.Second, Now: base}); err != nil {
		t.Fatal(err)
	}
	a, b, c, p := queuedJob("q", "a", 1), queuedJob("q", "b", 2), queuedJob("q", "c", 3), queuedJob("paused", "p", 1)
	if _, err := st.CreateJobs(ctx, []job.Job{a, b, c, p}); err != nil {
		t.Fatal(err)
	}
	start := func(j job.Job, now time.Time) error {
		// The line's slots are a second apart: a's the first.
		slotAt := base.Add(time.Duration(j.Ticket-1) * time.Second)
		_, err := st.Gate(ctx, engine.GateRequest{Queue: j.Queue, Ticket: j.Ticket, Interval: time.Second, Now: now, SlotAt: slotAt})
		return err
	}
	if err := start(b, base); err != nil {
		t.Fatalf("Gate(b): %v", err)
	}
	moved := a.Version()
	moved.Attempt = 2

	tests := []struct {
		name string
		call func() error
		want error
		gate slot.Verdict
	}{
		{"CreateQueue exists", func() error {
			return st.CreateQueue(ctx, engine.Queue{Name: "q", Config: slot.Config{Interval: time.Second}})
		}, engine.ErrQueueExists, 0},
		{"Take no queue", func() error {
			_, err := st.Take(ctx, engine.TakeRequest{Queue: "nope", N: 1, Line: 1, Interval: time.Second, Now: base})
			return err
		}, engine.ErrQueueNotFound, 0},
		{"Take interval changed", func() error {
			_, err := st.Take(ctx, engine.TakeRequest{Queue: "q", N: 1, Line: 0, Interval: 2 * time.Second, Now: base})
			return err
		}, engine.ErrLimitChanged, 0},
		{"Gate no queue", func() error { return start(queuedJob("nope", "zz", 1), base) }, engine.ErrQueueNotFound, 0},
		{"Gate passed", func() error { return start(a, base.Add(time.Hour)) }, nil, slot.Passed},
		{"Gate early", func() error { return start(c, base.Add(500*time.Millisecond)) }, nil, slot.Early},
		{"Gate paused", func() error { return start(p, base) }, nil, slot.Paused},
		{"Gate interval changed", func() error {
			_, err := st.Gate(ctx, engine.GateRequest{Queue: "q", Ticket: 3, Interval: 2 * time.Second, Now: base.Add(time.Hour)})
			return err
		}, engine.ErrLimitChanged, 0},
		{"UpdateJob conflict", func() error { return st.UpdateJob(ctx, a, moved) }, engine.ErrConflict, 0},
		{"UpdateJob missing", func() error { j := queuedJob("q", "zz", 9); return st.UpdateJob(ctx, j, j.Version()) }, engine.ErrJobNotFound, 0},
		{"Pause missing", func() error { _, err := st.Pause(ctx, "nope", time.Time{}); return err }, engine.ErrQueueNotFound, 0},
		{"Unpause missing", func() error { _, err := st.Unpause(ctx, "nope", time.Time{}); return err }, engine.ErrQueueNotFound, 0},
		{"SetConfig missing", func() error { return st.SetConfig(ctx, "nope", slot.Config{Interval: time.Second}) }, engine.ErrQueueNotFound, 0},
		{"DeleteQueue missing", func() error { return st.DeleteQueue(ctx, "nope") }, engine.ErrQueueNotFound, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := m.Counts()[stateUpdate].CondFailed
			err := tt.call()
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("got %v, want %v", err, tt.want)
				}
				return
			}
			var ge *engine.GateError
			if !errors.As(err, &ge) || ge.Verdict != tt.gate {
				t.Fatalf("got %v, want a gate error %s", err, tt.gate)
			}
			if tt.gate == slot.Early && !ge.OpenAt.Equal(base.Add(time.Second)) {
				t.Errorf("OpenAt = %v, want %v", ge.OpenAt, base.Add(time.Second))
			}
			// The gate is the write's condition: DynamoDB refused it.
			if n := m.Counts()[stateUpdate].CondFailed - before; n == 0 {
				t.Errorf("a refused gate made no state update that failed its condition")
			}
		})
	}
}

// stateUpdate is awsmeter's name for an UpdateItem of a queue state item
// (a take, gate, pause, unpause or purge).
const stateUpdate = "UpdateItem state"

// throttle answers the first n requests of kind opName with DynamoDB's
// ProvisionedThroughputExceededException (n < 0: all of them) and counts
// the attempts.
type throttle struct {
	opName   string
	n        int64
	attempts atomic.Int64
}

func (th *throttle) wrap(next httpClient) httpClient {
	return doFunc(func(r *http.Request) (*http.Response, error) {
		if op(r) != th.opName {
			return next.Do(r)
		}
		if k := th.attempts.Add(1); th.n >= 0 && k > th.n {
			return next.Do(r)
		}
		return awsError(r, http.StatusBadRequest, "ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded.", ""), nil
	})
}

func TestThrottling(t *testing.T) {
	t.Run("RetriedThenSucceeds", func(t *testing.T) {
		th := &throttle{opName: "GetItem", n: 2}
		api := newClient(t, th.wrap, fastRetries)
		m := awsmeter.NewDynamoDB(api)
		st := dynamostore.New(m, newTable(t, api), dynamostore.Options{})
		j := queuedJob("q", "a", 1)
		if _, err := st.CreateJobs(t.Context(), []job.Job{j}); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetJob(t.Context(), job.Ref{Queue: "q", ID: "a"})
		if err != nil {
			t.Fatalf("GetJob after two throttles: %v", err)
		}
		if got.ID != "a" {
			t.Errorf("GetJob: got %+v", got)
		}
		if n := th.attempts.Load(); n != 3 {
			t.Errorf("%d GetItem attempts, want 3 (two throttled, one through)", n)
		}
		if n := m.Counts()["GetItem job"].Calls; n != 1 {
			t.Errorf("%d GetItem calls from the store, want 1 (SDK retries are one call)", n)
		}
	})
	t.Run("Exhausted", func(t *testing.T) {
		th := &throttle{opName: "GetItem", n: -1}
		api := newClient(t, th.wrap, fastRetries)
		st := dynamostore.New(api, newTable(t, api), dynamostore.Options{})
		_, err := st.GetJob(t.Context(), job.Ref{Queue: "q", ID: "a"})
		var pte *types.ProvisionedThroughputExceededException
		if !errors.As(err, &pte) {
			t.Fatalf("got %v, want a wrapped ProvisionedThroughputExceededException", err)
		}
		if errors.Is(err, engine.ErrJobNotFound) || !strings.HasPrefix(err.Error(), "get job q/a: ") {
			t.Errorf("error %q: want it wrapped as get job q/a", err)
		}
		if n := th.attempts.Load(); n != 3 {
			t.Errorf("%d GetItem attempts, want 3 (the SDK's default)", n)
		}
	})
}

// loseResponse lets the first request of kind opName reach DynamoDB, then
// drops the answer with a connection reset, which the SDK retries.
type loseResponse struct {
	opName string
	done   atomic.Bool
}

func (l *loseResponse) wrap(next httpClient) httpClient {
	return doFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := next.Do(r)
		if err == nil && op(r) == l.opName && l.done.CompareAndSwap(false, true) {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil, errors.New("read tcp: connection reset by peer")
		}
		return resp, err
	})
}

// TestRetriedWriteAppliesOnce: a write whose answer was lost, and which the
// SDK sent again, is recognised by its write token instead of being applied
// twice (Take) or reported as someone else's (CreateJobs, Start,
// UpdateJob).
func TestRetriedWriteAppliesOnce(t *testing.T) {
	setup := func(t *testing.T, opName string) (*dynamostore.Store, *loseResponse) {
		l := &loseResponse{opName: opName}
		api := newClient(t, l.wrap, fastRetries)
		st := dynamostore.New(api, newTable(t, api), dynamostore.Options{})
		l.done.Store(true)
		newQueue(t, st, "q", time.Second)
		l.done.Store(false)
		return st, l
	}
	t.Run("Take", func(t *testing.T) {
		st, l := setup(t, "UpdateItem")
		tk, err := st.Take(t.Context(), engine.TakeRequest{Queue: "q", N: 2, Line: 2, Interval: time.Second, Now: base})
		if err != nil {
			t.Fatal(err)
		}
		if !l.done.Load() {
			t.Fatal("no response was lost")
		}
		if tk.First != 1 || len(tk.Slots) != 2 || !tk.Slots[0].Equal(base) || !tk.Slots[1].Equal(base.Add(time.Second)) || tk.State.Ticket != 2 || !tk.State.Clock.Equal(base.Add(time.Second)) {
			t.Errorf("Take = %+v, want tickets 1–2 from %v", tk, base)
		}
	})
	t.Run("CreateJobs", func(t *testing.T) {
		for _, n := range []int{1, 3} {
			st, _ := setup(t, "PutItem")
			var jobs []job.Job
			for i := range n {
				jobs = append(jobs, queuedJob("q", string(rune('a'+i)), int64(i+1)))
			}
			created, err := st.CreateJobs(t.Context(), jobs)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range created {
				if !c {
					t.Errorf("%d jobs: created[%d] = false after a retried create", n, i)
				}
			}
			created, err = st.CreateJobs(t.Context(), jobs)
			if err != nil || created[0] {
				t.Errorf("second CreateJobs: created = %v, %v; want all false", created, err)
			}
		}
	})
	t.Run("GateAndUpdate", func(t *testing.T) {
		st, l := setup(t, "UpdateItem")
		l.done.Store(true)
		j := queuedJob("q", "a", 1)
		if _, err := st.CreateJobs(t.Context(), []job.Job{j}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Take(t.Context(), engine.TakeRequest{Queue: "q", N: 1, Line: 1, Interval: time.Second, Now: base}); err != nil {
			t.Fatal(err)
		}
		l.done.Store(false)
		s, err := st.Gate(t.Context(), engine.GateRequest{Queue: "q", Ticket: 1, Interval: time.Second, Now: base})
		if err != nil {
			t.Fatalf("Gate with a lost answer: %v", err)
		}
		if s.Current != 1 || !s.LastStart.Equal(base) {
			t.Errorf("state after the gate: %+v", s)
		}

		l.opName = "PutItem"
		l.done.Store(false)
		running := j
		running.Status, running.StartedAt = job.Running, base
		if err := st.UpdateJob(t.Context(), running, j.Version()); err != nil {
			t.Fatalf("claim with a lost answer: %v", err)
		}
		l.done.Store(false)
		done := running
		done.Status, done.FinishedAt = job.Succeeded, base.Add(time.Second)
		if err := st.UpdateJob(t.Context(), done, running.Version()); err != nil {
			t.Fatalf("UpdateJob with a lost answer: %v", err)
		}
		if err := st.UpdateJob(t.Context(), done, running.Version()); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("a second UpdateJob from the same version: %v, want ErrConflict", err)
		}
	})
}
