package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Retry: a failed or cancelled job run again on request, under its id.

// failing sets how many first attempts of each id fail.
func (s *sim) failing(n int, ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.failFor[id] = n
	}
}

// attemptsOf counts the starts of each attempt of job id.
func (s *sim) attemptsOf(queue, id string) map[int]int {
	n := map[int]int{}
	for _, st := range s.startsOf(queue) {
		if st.ID == id {
			n[st.Attempt]++
		}
	}
	return n
}

func (s *sim) get(queue, id string) job.Job {
	s.t.Helper()
	j, err := s.store.GetJob(context.Background(), job.Ref{Queue: queue, ID: id})
	if err != nil {
		s.t.Fatalf("get %s/%s: %v", queue, id, err)
	}
	return j
}

// Two dead letters are run again while 20 jobs wait: they take tickets
// behind those 20, start after them, and every start of the queue keeps
// the spacing. Each rerun has max_attempts attempts of its own (d1 fails
// its first rerun attempt and succeeds on the second), its attempts keep
// counting, and its history names who asked.
func TestRetryDeadLetterRunsThroughTheGate(t *testing.T) {
	inSim(t, simOptions{Seed: 11}, func(t *testing.T, s *sim) {
		const iv = 100 * time.Millisecond
		ctx := context.Background()
		s.createQueue("q", slot.Config{Interval: iv, Skew: time.Millisecond, MaxAttempts: 2, Backoff: iv})
		s.failing(3, "d1") // attempts 1, 2 (the first run) and 3 fail
		s.failing(2, "d2") // attempts 1 and 2 fail
		s.enqueue("q", 2, func(i int, sp *job.Spec) { sp.ID = fmt.Sprintf("d%d", i+1) })
		s.waitFinished("q", time.Hour)
		for _, id := range []string{"d1", "d2"} {
			if j := s.get("q", id); j.Status != job.Failed || j.Attempt != 2 {
				t.Fatalf("%s: %s at attempt %d, want failed at 2", id, j.Status, j.Attempt)
			}
		}
		waiting := s.enqueue("q", 20, nil)
		res, err := s.eng.Retry(ctx, engine.RetryRequest{Queue: "q", IDs: []string{"d1", "d2"}, By: "ops@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		last := waiting.Jobs[len(waiting.Jobs)-1]
		if len(res.Jobs) != 2 || res.Jobs[0].Ticket <= last.Ticket || res.Jobs[1].Ticket != res.Jobs[0].Ticket+1 ||
			res.Jobs[0].Status != job.Queued || !res.Jobs[0].SlotAt.After(last.SlotAt) {
			t.Fatalf("retry answered %+v; want d1 and d2 queued at the two tickets after %d (slot after %v)", res.Jobs, last.Ticket, last.SlotAt)
		}
		s.waitFinished("q", time.Hour)

		d1, d2 := s.get("q", "d1"), s.get("q", "d2")
		if d1.Status != job.Succeeded || d1.Attempt != 4 || d1.RerunFrom != 2 || d1.Reruns != 1 {
			t.Errorf("d1: %s, attempt %d, rerun from %d, %d reruns; want succeeded at attempt 4 (its rerun's second), from 2, 1 rerun",
				d1.Status, d1.Attempt, d1.RerunFrom, d1.Reruns)
		}
		if d2.Status != job.Succeeded || d2.Attempt != 3 {
			t.Errorf("d2: %s at attempt %d, want succeeded at 3", d2.Status, d2.Attempt)
		}
		i := slices.IndexFunc(d2.History, func(ev job.Event) bool { return ev.Kind == job.Rerun })
		if i < 0 || d2.History[i].Reason != "ops@example.com" || d2.History[i].Attempt != 3 || d2.History[i].Ticket != res.Jobs[1].Ticket {
			t.Errorf("d2's history %+v; want a rerun event by ops@example.com, attempt 3, ticket %d", d2.History, res.Jobs[1].Ticket)
		}
		if got := kinds(d2.History[i:]); !slices.Equal(got, []job.EventKind{job.Rerun, job.Started, job.SucceededEvent}) {
			t.Errorf("d2's history from the rerun: %v", got)
		}
		starts := s.startsOf("q")
		checkSpacing(t, starts, iv, time.Millisecond)
		checkSingleStart(t, starts)
		var lastWaiting time.Time
		for _, st := range starts {
			if st.Ticket == last.Ticket {
				lastWaiting = st.At
			}
		}
		for _, st := range starts {
			if st.ID == "d2" && st.Attempt == 3 && !st.At.After(lastWaiting) {
				t.Errorf("d2's rerun started at %v, before the jobs that waited ahead of it (last at %v)", st.At, lastWaiting)
			}
		}
		for id, want := range map[string]map[int]int{"d1": {1: 1, 2: 1, 3: 1, 4: 1}, "d2": {1: 1, 2: 1, 3: 1}} {
			if got := s.attemptsOf("q", id); !reflect.DeepEqual(got, want) {
				t.Errorf("%s's attempts started %v, want %v", id, got, want)
			}
		}
	})
}

// Refused retries answer a typed error naming the field, and write
// nothing; a cancelled job may be run again.
func TestRetryRefusedWritesNothing(t *testing.T) {
	inSim(t, simOptions{Seed: 12}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("q", slot.Config{Interval: 100 * time.Millisecond, MaxAttempts: 1})
		s.failing(1, "f")
		s.enqueue("q", 2, func(i int, sp *job.Spec) { sp.ID = []string{"f", "s"}[i] })
		s.waitFinished("q", time.Hour)
		if _, err := s.eng.Pause(ctx, "q", time.Time{}); err != nil {
			t.Fatal(err)
		}
		s.enqueue("q", 2, func(i int, sp *job.Spec) { sp.ID = []string{"p", "c"}[i] })
		if _, err := s.eng.CancelJob(ctx, job.Ref{Queue: "q", ID: "c"}); err != nil {
			t.Fatal(err)
		}
		retry := func(r engine.RetryRequest) func() error {
			return func() error {
				if r.Queue == "" {
					r.Queue = "q"
				}
				_, err := s.eng.Retry(ctx, r)
				return err
			}
		}
		ids := make([]string, engine.MaxRetryIDs+1)
		for i := range ids {
			ids[i] = fmt.Sprintf("j%d", i)
		}
		tests := []struct {
			name, field string
			want        error // a sentinel, or nil for an *input.Error
			run         func() error
		}{
			{"a parked job", "job_ids[1]", engine.ErrNotRetryable, retry(engine.RetryRequest{IDs: []string{"f", "p"}})},
			{"a succeeded job", "job_ids[0]", engine.ErrNotRetryable, retry(engine.RetryRequest{IDs: []string{"s", "f"}})},
			{"no such job", "job_ids[2]", engine.ErrJobNotFound, retry(engine.RetryRequest{IDs: []string{"f", "c", "nope"}})},
			{"no such queue", "", engine.ErrQueueNotFound, retry(engine.RetryRequest{Queue: "nope", IDs: []string{"f"}})},
			{"a bad queue name", "queue", nil, retry(engine.RetryRequest{Queue: "no/pe", IDs: []string{"f"}})},
			{"a bad id", "job_ids[1]", nil, retry(engine.RetryRequest{IDs: []string{"f", strings.Repeat("x", 300)}})},
			{"an id twice", "job_ids[1]", nil, retry(engine.RetryRequest{IDs: []string{"f", "f"}})},
			{"no ids", "job_ids", nil, retry(engine.RetryRequest{})},
			{"ids and failed", "job_ids", nil, retry(engine.RetryRequest{IDs: []string{"f"}, Failed: true})},
			{"too many ids", "job_ids", nil, retry(engine.RetryRequest{IDs: ids})},
			{"a bad by", "by", nil, retry(engine.RetryRequest{IDs: []string{"f"}, By: "a,b"})},
			{"after without failed", "after", nil, retry(engine.RetryRequest{IDs: []string{"f"}, After: 3})},
			{"a negative after", "after", nil, retry(engine.RetryRequest{Failed: true, After: -1})},
			{"a negative up_to", "up_to", nil, retry(engine.RetryRequest{Failed: true, UpTo: -1})},
			{"a page too large", "limit", nil, retry(engine.RetryRequest{Failed: true, Limit: engine.MaxRetryPage + 1})},
		}
		for _, tt := range tests { // no t.Run inside a synctest bubble
			before := snapshot(t, s)
			err := tt.run()
			if tt.want != nil {
				var fe *engine.FieldError
				var nr *engine.NotRetryableError
				field := ""
				if errors.As(err, &fe) {
					field = fe.Field
				} else if errors.As(err, &nr) {
					field = nr.Field
				}
				if !errors.Is(err, tt.want) || field != tt.field {
					t.Errorf("%s: err = %v (field %q); want %v on %q", tt.name, err, field, tt.want, tt.field)
				}
			} else if ie := (*input.Error)(nil); !errors.As(err, &ie) || ie.Field != tt.field {
				t.Errorf("%s: err = %v; want an input error on %s", tt.name, err, tt.field)
			}
			if after := snapshot(t, s); !reflect.DeepEqual(before, after) {
				t.Errorf("%s: state changed:\nbefore %+v\nafter  %+v", tt.name, before, after)
			}
		}

		// The failed and the cancelled job, on the paused queue: parked,
		// and they run once it is resumed.
		res, err := s.eng.Retry(ctx, engine.RetryRequest{Queue: "q", IDs: []string{"f", "c"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 2 || res.Jobs[0].Status != job.Parked || res.Jobs[1].Status != job.Parked {
			t.Fatalf("retry on a paused queue answered %+v, want both parked", res.Jobs)
		}
		if j := s.get("q", "c"); j.History[len(j.History)-2].Reason != "admin" {
			t.Errorf("c's history %+v: want a rerun by admin (the default)", j.History)
		}
		if _, err := s.eng.Unpause(ctx, "q"); err != nil {
			t.Fatal(err)
		}
		s.waitFinished("q", time.Hour)
		for id, want := range map[string]job.Status{"f": job.Succeeded, "c": job.Succeeded, "p": job.Succeeded, "s": job.Succeeded} {
			if j := s.get("q", id); j.Status != want {
				t.Errorf("%s: %s, want %s", id, j.Status, want)
			}
		}
	})
}

// 1,000 dead letters are run again a page of 100 at a time: none is lost
// and each runs once more. Jobs that fail again meanwhile (their new
// tickets lie above the retry's up_to) are not run again by the same
// retry, so it ends.
func TestRetryFailedInPages(t *testing.T) {
	inSim(t, simOptions{Seed: 13, Workers: 8}, func(t *testing.T, s *sim) {
		const n, again = 1000, 7
		ctx := context.Background()
		s.createQueue("q", slot.Config{Interval: time.Millisecond, Skew: time.Microsecond, MaxAttempts: 1})
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("j%04d", i)
		}
		s.failing(1, ids...)
		s.failing(2, ids[:again]...) // fail their rerun too
		for i := 0; i < n; i += job.MaxBatch {
			s.enqueue("q", min(job.MaxBatch, n-i), func(k int, sp *job.Spec) { sp.ID = ids[i+k] })
		}
		s.waitFinished("q", time.Hour)
		if got := len(s.jobs("q", job.Failed)); got != n {
			t.Fatalf("%d failed, want %d", got, n)
		}
		retried := map[string]int{}
		pages, after, upTo := 0, int64(0), int64(0)
		for {
			res, err := s.eng.Retry(ctx, engine.RetryRequest{Queue: "q", Failed: true, After: after, UpTo: upTo, Limit: 100, By: "sweeper"})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(res.Jobs) > 100 {
				t.Fatalf("a page of %d jobs, want at most 100", len(res.Jobs))
			}
			for _, a := range res.Jobs {
				retried[a.JobID]++
			}
			upTo = res.UpTo
			if res.NextAfter == 0 {
				break
			}
			after = res.NextAfter
			if pages > 20 {
				t.Fatal("the retry does not end")
			}
			time.Sleep(50 * time.Millisecond) // let some of them fail again meanwhile
		}
		s.waitFinished("q", time.Hour)
		if len(retried) != n || pages != n/100+1 && pages != n/100 {
			t.Errorf("%d jobs retried in %d pages, want %d in about %d", len(retried), pages, n, n/100)
		}
		for _, id := range ids {
			if retried[id] != 1 {
				t.Errorf("%s retried %d times, want once", id, retried[id])
			}
			want := job.Succeeded
			if slices.Index(ids[:again], id) >= 0 {
				want = job.Failed
			}
			j := s.get("q", id)
			if j.Status != want || j.Attempt != 2 {
				t.Errorf("%s: %s at attempt %d, want %s at 2", id, j.Status, j.Attempt, want)
			}
			if got := s.attemptsOf("q", id); !reflect.DeepEqual(got, map[int]int{1: 1, 2: 1}) {
				t.Errorf("%s: attempts started %v, want 1 and 2 once each", id, got)
			}
		}
		checkSingleStart(t, s.startsOf("q"))
	})
}

// Retry racing the admin operations that could meet it, each landing
// inside the retry's own store calls: one outcome, nothing lost, nothing
// run twice.
func TestRetryRacesAdmin(t *testing.T) {
	type outcome struct {
		status   job.Status // job.Status("gone") for a job that reads as not found
		reruns   int        // starts of the rerun's attempt
		retryErr error      // a sentinel the retry's error matches, or nil
	}
	gone := job.Status("gone")
	tests := []struct {
		name   string
		paused bool // the queue is paused when the retry comes: the job is parked
		when   func(op string, j *job.Job) bool
		op     func(ctx context.Context, eng *engine.Engine) error
		want   outcome
	}{
		{
			// A failed job is not waiting: the cancel is refused, and
			// the retry runs it.
			name: "cancel as the retry writes",
			when: rerunWrite,
			op: func(ctx context.Context, eng *engine.Engine) error {
				_, err := eng.CancelJob(ctx, job.Ref{Queue: "q", ID: "f"})
				if !errors.Is(err, engine.ErrNotWaiting) {
					return fmt.Errorf("cancel: %v, want not waiting", err)
				}
				return nil
			},
			want: outcome{status: job.Succeeded, reruns: 1},
		},
		{
			// The retry comes after the purge: its ticket lies past it.
			name: "purge before the retry's take",
			when: func(op string, _ *job.Job) bool { return op == "Take" },
			op:   purge,
			want: outcome{status: job.Succeeded, reruns: 1},
		},
		{
			// The purge covers the ticket the retry took: the job is
			// cancelled at the gate and never starts.
			name: "purge as the retry writes",
			when: rerunWrite,
			op:   purge,
			want: outcome{status: job.Cancelled},
		},
		{
			// Parked on the paused queue after the purge listed the
			// parked jobs it cancels: the retry cancels it itself.
			name:   "purge as the retry writes, paused",
			paused: true,
			when:   rerunWrite,
			op:     purge,
			want:   outcome{status: job.Cancelled},
		},
		{
			name: "delete before the retry's take",
			when: func(op string, _ *job.Job) bool { return op == "Take" },
			op:   deleteQ,
			want: outcome{status: gone, retryErr: engine.ErrQueueNotFound},
		},
		{
			// The job is written queued in a generation that no longer
			// exists: it reads as not found and its message ends it.
			name: "delete as the retry writes",
			when: rerunWrite,
			op:   deleteQ,
			want: outcome{status: gone},
		},
		{
			// Two retries of one job: one runs it, once.
			name: "another retry as the retry writes",
			when: rerunWrite,
			op: func(ctx context.Context, eng *engine.Engine) error {
				_, err := eng.Retry(ctx, engine.RetryRequest{Queue: "q", IDs: []string{"f"}})
				return err
			},
			want: outcome{status: job.Succeeded, reruns: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hook := &adminHook{}
				s := newSim(t, simOptions{Seed: 14, Wrap: func(st engine.State) engine.State { hook.State = st; return hook }})
				defer s.stop()
				ctx := context.Background()
				s.createQueue("q", slot.Config{Interval: 100 * time.Millisecond, MaxAttempts: 1})
				s.failing(1, "f")
				s.enqueue("q", 1, func(_ int, sp *job.Spec) { sp.ID = "f" })
				s.waitFinished("q", time.Hour)
				if tt.paused {
					if _, err := s.eng.Pause(ctx, "q", time.Time{}); err != nil {
						t.Fatal(err)
					}
				}
				var opErr error
				hook.arm(tt.when, func() { opErr = tt.op(ctx, s.eng) })
				_, err := s.eng.Retry(ctx, engine.RetryRequest{Queue: "q", IDs: []string{"f"}})
				if opErr != nil {
					t.Fatal(opErr)
				}
				if tt.want.retryErr == nil && err != nil || tt.want.retryErr != nil && !errors.Is(err, tt.want.retryErr) {
					t.Fatalf("retry: %v, want %v", err, tt.want.retryErr)
				}
				time.Sleep(time.Minute) // its message comes and goes
				got := outcome{status: gone, reruns: s.attemptsOf("q", "f")[2], retryErr: tt.want.retryErr}
				if j, err := s.store.GetJob(ctx, job.Ref{Queue: "q", ID: "f"}); err == nil {
					if q, err := s.store.GetQueue(ctx, "q"); err == nil && q.Gen == j.Gen {
						got.status = j.Status
					}
				}
				if got != tt.want {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
			})
		})
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// rerunWrite matches the retry's write of job f's rerun.
func rerunWrite(op string, j *job.Job) bool {
	return op == "UpdateJob" && j.ID == "f" && j.Reruns == 1 && j.Status.Waiting()
}

func purge(ctx context.Context, eng *engine.Engine) error {
	_, err := eng.Purge(ctx, "q")
	return err
}

func deleteQ(ctx context.Context, eng *engine.Engine) error {
	_, err := eng.DeleteQueue(ctx, "q")
	return err
}

// A keyed dead letter run again waits for its key like any job of the
// key: it never runs beside the job holding it, and the key's lane ends
// clean (nothing held, nothing pending).
func TestRetryKeyedDeadLetter(t *testing.T) {
	inSim(t, simOptions{Seed: 15, Workers: 4}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("q", slot.Config{Interval: 100 * time.Millisecond, Skew: time.Millisecond, MaxAttempts: 1})
		s.failing(1, "k1")
		enq := func(sp job.Spec) {
			t.Helper()
			if _, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &sp}); err != nil {
				t.Fatal(err)
			}
		}
		enq(laneSpec("k1", "K", 500*time.Millisecond))
		s.waitFinishedOrDump("q", time.Hour)
		if j := s.get("q", "k1"); j.Status != job.Failed {
			t.Fatalf("k1: %s, want failed", j.Status)
		}
		enq(laneSpec("k2", "K", 5*time.Second))
		time.Sleep(time.Second) // k2 runs, holding K
		if _, err := s.eng.Retry(ctx, engine.RetryRequest{Queue: "q", IDs: []string{"k1"}}); err != nil {
			t.Fatal(err)
		}
		// The rerun counts as pending on its key: a job of the key
		// enqueued now has k2 and k1 ahead of it.
		res, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &job.Spec{ID: "k3", Kind: "lane", Key: "K", Payload: json.RawMessage(`{"ms":100}`)}})
		if err != nil {
			t.Fatal(err)
		}
		if a := res.Jobs[0].KeyAhead; a == nil || *a != 2 {
			t.Errorf("k3's key_ahead %d, want 2 (k2 running, k1 run again)", deref(a))
		}
		s.waitFinishedOrDump("q", time.Hour)
		if j := s.get("q", "k1"); j.Status != job.Succeeded || j.Attempt != 2 {
			t.Errorf("k1: %s at attempt %d, want succeeded at 2", j.Status, j.Attempt)
		}
		runs := s.runsOf("q")
		if len(runs) != 4 {
			t.Fatalf("runs %+v, want k1, k2, k1 again, k3", runs)
		}
		if v := keyOverlap(runs); v != "" {
			t.Error(v)
		}
		// By the runs themselves, whatever key they carry.
		if k2, again := runs[1], runs[2]; k2.ID != "k2" || again.ID != "k1" || again.Begin.Before(k2.End) {
			t.Errorf("k1's rerun began at %v, before k2, holding K, ended at %v", again.Begin, k2.End)
		}
		l, err := s.store.GetLane(ctx, "q", "K")
		if err != nil {
			t.Fatal(err)
		}
		if l.Version != 0 && (l.Pending != 0 || !l.Idle()) {
			t.Errorf("lane K after both ended: %+v; want none, or idle with nothing pending", l)
		}
	})
}
