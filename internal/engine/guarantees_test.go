package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// Each test here states the guarantee of docs/guarantees.md it checks, and fails
// if that guarantee is broken.

// checkSpacing fails if the starts of a queue, in start order, break
// docs/guarantees.md §3 in its window form: for any i < j, start_j − start_i ≥
// (j − i)·interval − skew. (With u_k = start_k − k·interval that is
// u_j ≥ max(u_i) − skew, one pass.)
func checkSpacing(t *testing.T, starts []start, interval, skew time.Duration) {
	t.Helper()
	top := 0
	for j := 1; j < len(starts); j++ {
		u := func(k int) time.Time { return starts[k].At.Add(-time.Duration(k) * interval) }
		if u(j).Before(u(top).Add(-skew)) {
			t.Fatalf("starts %d and %d (tickets %d, %d) are %v apart; want at least %d·%v − %v",
				top, j, starts[top].Ticket, starts[j].Ticket, starts[j].At.Sub(starts[top].At), j-top, interval, skew)
		}
		if u(j).After(u(top)) {
			top = j
		}
	}
}

// checkSingleStart fails if any attempt of a job began twice.
func checkSingleStart(t *testing.T, starts []start) {
	t.Helper()
	seen := map[string]bool{}
	for _, st := range starts {
		k := fmt.Sprintf("%s#%d", st.ID, st.Attempt)
		if seen[k] {
			t.Fatalf("attempt %d of job %s began twice", st.Attempt, st.ID)
		}
		seen[k] = true
	}
}

// §5.1 Position: every accepted job gets a ticket; per queue tickets are
// unique and increase in acceptance order; a batch gets a contiguous range.
func TestGuaranteePosition(t *testing.T) {
	inSim(t, simOptions{}, func(t *testing.T, s *sim) {
		s.createQueue("pos", slot.Config{Interval: time.Millisecond})
		const producers, calls = 20, 10
		results := make([][]engine.EnqueueResult, producers)
		var wg sync.WaitGroup
		for p := range producers {
			wg.Go(func() {
				for c := range calls {
					results[p] = append(results[p], s.enqueue("pos", 1+(p+c)%7, nil))
				}
			})
		}
		wg.Wait()
		owner := map[int64]string{}
		total := 0
		for p, rs := range results {
			var last int64
			for _, r := range rs {
				for i, a := range r.Jobs {
					total++
					if prev, dup := owner[a.Ticket]; dup {
						t.Fatalf("ticket %d given to %s and %s", a.Ticket, prev, a.JobID)
					}
					owner[a.Ticket] = a.JobID
					if i > 0 && a.Ticket != r.Jobs[i-1].Ticket+1 {
						t.Fatalf("batch not contiguous: %d after %d", a.Ticket, r.Jobs[i-1].Ticket)
					}
					if a.Ticket <= last {
						t.Fatalf("producer %d: ticket %d not after its earlier %d", p, a.Ticket, last)
					}
					last = a.Ticket
				}
			}
		}
		for tk := int64(1); tk <= int64(total); tk++ {
			if _, ok := owner[tk]; !ok {
				t.Fatalf("ticket %d missing among %d accepted jobs", tk, total)
			}
		}
		s.waitFinished("pos", time.Hour)
	})
}

// §5.2 Expected start: the answer's slot_at is when the job starts (exactly,
// in a fault-free run), position counts the tickets ahead; a job whose
// queue was paused gets a new ticket and slot that its status shows, and
// starts then.
func TestGuaranteeExpectedStart(t *testing.T) {
	inSim(t, simOptions{Workers: 3}, func(t *testing.T, s *sim) {
		s.createQueue("eta", slot.Config{Interval: 2 * time.Second})
		first := s.enqueue("eta", 5, nil)
		for i, a := range first.Jobs {
			if a.Position != int64(i) {
				t.Fatalf("position of job %d = %d, want %d", i, a.Position, i)
			}
		}
		// The first job, due now, starts: its worker may have to wait a
		// moment for its record (its message goes first), a millisecond
		// at a time, far within the next job's two seconds.
		for synctest.Wait(); len(s.startsOf("eta")) == 0; synctest.Wait() {
			time.Sleep(time.Millisecond)
		}
		second := s.enqueue("eta", 3, nil)
		if second.Jobs[0].Position != 4 {
			t.Fatalf("position of the 6th job with the 1st started = %d, want 4", second.Jobs[0].Position)
		}
		s.waitFinished("eta", time.Hour)
		want := map[string]time.Time{}
		for _, a := range append(first.Jobs, second.Jobs...) {
			want[a.JobID] = a.SlotAt
		}
		for _, st := range s.startsOf("eta") {
			if d := st.At.Sub(want[st.ID]); d < 0 || d > 10*time.Millisecond {
				t.Fatalf("job %s started %v after its slot %v", st.ID, d, want[st.ID])
			}
		}

		// Paused: the job keeps waiting, then takes a new ticket and slot.
		ctx := context.Background()
		if _, err := s.eng.Pause(ctx, "eta", time.Time{}); err != nil {
			t.Fatal(err)
		}
		a := s.enqueue("eta", 1, nil).Jobs[0]
		time.Sleep(time.Minute)
		if _, err := s.eng.Unpause(ctx, "eta"); err != nil {
			t.Fatal(err)
		}
		j, _ := s.eng.Job(ctx, job.Ref{Queue: "eta", ID: a.JobID})
		if j.Ticket == a.Ticket || !j.SlotAt.After(a.SlotAt) || j.Retickets != 1 {
			t.Fatalf("after the pause the job shows ticket %d slot %v retickets %d; want a new ticket and slot", j.Ticket, j.SlotAt, j.Retickets)
		}
		s.waitFinished("eta", time.Hour)
		starts := s.startsOf("eta")
		last := starts[len(starts)-1]
		if last.ID != a.JobID || last.Ticket != j.Ticket || last.At.Sub(j.SlotAt) > 10*time.Millisecond || last.At.Before(j.SlotAt) {
			t.Fatalf("re-ticketed job started %+v; want ticket %d at %v", last, j.Ticket, j.SlotAt)
		}
	})
}

// §5.3 Spacing and §5.4 Single start, under stress: many workers, delivery
// jitter of several intervals, duplicate deliveries and crashes between
// gate, claim, run and record. The starts keep the window form of the
// spacing rule (no burst after a late start, whatever the skew), and no
// attempt begins twice.
func TestGuaranteeSpacingAndSingleStart(t *testing.T) {
	eachRun(t, nil, faultRuns(8, 16, 3*time.Second, 0.05, 3, nil), func(t *testing.T, s *sim, _ slot.Config, _ simRun) {
		const interval, skew = time.Second, 100 * time.Millisecond
		s.createQueue("spaced", slot.Config{Interval: interval, Skew: skew, MaxAttempts: 10})
		produceSteadily(func(p, c int) { s.enqueue("spaced", 1+(p*c)%4, nil) })
		s.waitFinished("spaced", 6*time.Hour)
		starts := s.startsOf("spaced")
		if len(starts) == 0 {
			t.Fatal("nothing started")
		}
		checkSpacing(t, starts, interval, skew)
		checkSingleStart(t, starts)
		s.checkNoneFailed("spaced")
	})
}

// §5.5 Nothing lost: with crashes at every step (between a message and its
// record, after the gate, after the claim, before the outcome), refused
// sends and failing handlers, every accepted job ends succeeded, or failed
// with a dead-letter record after its attempts. A crashed attempt runs
// again (at-least-once). The transport keeps what it accepted, as SQS does:
// a message it loses outright is a lost job (docs/states.md).
func TestGuaranteeNothingLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refuse sync.Map
		s := newSim(t, simOptions{Workers: 6, CrashRate: 0.1, Seed: 11, Transport: memstore.TransportOptions{
			DuplicateRate: 0.2, Jitter: time.Second,
			SendFailure: func(e job.Envelope) error {
				if _, again := refuse.LoadOrStore(e.JobID, true); !again && e.Ticket%5 == 0 {
					return errors.New("injected send failure")
				}
				return nil
			},
		}})
		defer s.stop()
		s.createQueue("safe", slot.Config{Interval: 500 * time.Millisecond, MaxAttempts: 8, Backoff: time.Second})
		var accepted []string
		for range 6 {
			for _, a := range s.enqueue("safe", 10, nil).Jobs {
				accepted = append(accepted, a.JobID)
			}
		}
		// Two jobs always fail: they must end failed with their error.
		s.mu.Lock()
		s.failFor[accepted[3]] = 100
		s.failFor[accepted[17]] = 100
		s.mu.Unlock()
		s.waitFinished("safe", 12*time.Hour)
		ctx := context.Background()
		for _, id := range accepted {
			j, err := s.eng.Job(ctx, job.Ref{Queue: "safe", ID: id})
			if err != nil {
				t.Fatalf("job %s lost: %v", id, err)
			}
			switch {
			case id == accepted[3] || id == accepted[17]:
				if j.Status != job.Failed || j.LastError == "" || j.Attempt != 8 {
					t.Fatalf("always-failing job ended %s attempt %d error %q; want failed after 8 attempts", j.Status, j.Attempt, j.LastError)
				}
			case j.Status != job.Succeeded:
				t.Fatalf("job %s ended %s", id, j.Status)
			}
		}
		checkSingleStart(t, s.startsOf("safe"))
		checkSpacing(t, s.startsOf("safe"), 500*time.Millisecond, slot.DefaultSkew)
	})
}

// §5.6 Pause: once Pause returns, nothing of the queue starts until it is
// resumed; parked jobs keep their relative order; a pause with until is
// lifted by the resume schedule by itself.
func TestGuaranteePause(t *testing.T) {
	inSim(t, simOptions{Workers: 8, Transport: memstore.TransportOptions{Jitter: 200 * time.Millisecond}}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("p", slot.Config{Interval: time.Second})
		res := s.enqueue("p", 30, nil)
		time.Sleep(10*time.Second + 500*time.Millisecond)
		until := time.Now().Add(5 * time.Minute)
		if _, err := s.eng.Pause(ctx, "p", until); err != nil {
			t.Fatal(err)
		}
		pausedAt := time.Now()
		time.Sleep(3 * time.Minute)
		late := s.enqueue("p", 3, nil) // enqueued while paused: parked behind the others
		for _, st := range s.startsOf("p") {
			if st.At.After(pausedAt) {
				t.Fatalf("job %s (ticket %d) started at %v, after the pause at %v", st.ID, st.Ticket, st.At, pausedAt)
			}
		}
		before := len(s.startsOf("p"))
		if before == 0 || before == 30 {
			t.Fatalf("%d jobs started before the pause; the test wants some, not all", before)
		}
		s.waitFinished("p", time.Hour)
		starts := s.startsOf("p")
		firstAfter := starts[before].At
		if firstAfter.Before(until) || firstAfter.Sub(until) > 2*time.Minute {
			t.Fatalf("first start after the pause at %v; the pause ran until %v and the schedule should lift it", firstAfter, until)
		}
		// Relative order kept: the jobs that waited start in their order of
		// acceptance.
		order := map[string]int{}
		for i, a := range append(res.Jobs, late.Jobs...) {
			order[a.JobID] = i
		}
		for i := before + 1; i < len(starts); i++ {
			if order[starts[i].ID] < order[starts[i-1].ID] {
				t.Fatalf("after the pause %s started before %s, against their order", starts[i].ID, starts[i-1].ID)
			}
		}
		checkSpacing(t, starts, time.Second, slot.DefaultSkew)
	})
}

// §5.7 No time travel: ticket, current, the slot clock and the last start
// only move forward. chaosState checks every state it sees; this test
// drives a busy, jittery, paused-and-resumed run through it.
func TestGuaranteeNoTimeTravel(t *testing.T) {
	inSim(t, simOptions{Workers: 8, CrashRate: 0.05, Transport: memstore.TransportOptions{Jitter: 2 * time.Second, DuplicateRate: 0.2}}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("tt", slot.Config{Interval: 300 * time.Millisecond})
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				for range 4 {
					s.enqueue("tt", 5, nil)
					time.Sleep(700 * time.Millisecond)
				}
			})
		}
		time.Sleep(2 * time.Second)
		if _, err := s.eng.Pause(ctx, "tt", time.Time{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second)
		// A crash while it releases the parked jobs leaves them to the
		// resume schedule.
		if _, err := s.eng.Unpause(ctx, "tt"); err != nil && !errors.Is(err, errCrash) {
			t.Fatal(err)
		}
		wg.Wait()
		s.waitFinished("tt", 6*time.Hour)
		q, err := s.store.GetQueue(ctx, "tt")
		if err != nil {
			t.Fatal(err)
		}
		s.chaos.mu.Lock()
		seen := s.chaos.seen[fmt.Sprintf("tt (generation %d)", q.Gen)]
		s.chaos.mu.Unlock()
		// (Current moves with the gate's writes; this queue's booked
		// starts pass by a read and move the clock, not current.)
		if seen.Ticket < 100 || seen.Clock.IsZero() {
			t.Fatalf("the observer saw too little: %+v", seen)
		}
	})
}

// §5.8 Passed means re-ticket: a job that reaches the gate after the queue
// started a later ticket takes a new ticket, keeping its id and attempt,
// and still runs.
func TestGuaranteePassedReticket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Hold back job #1's message: every send of ticket 1 is refused, so
		// it waits parked as unsent while tickets 2 and 3 start.
		s := newSim(t, simOptions{Transport: memstore.TransportOptions{SendFailure: func(e job.Envelope) error {
			if e.Ticket == 1 {
				return errors.New("held back")
			}
			return nil
		}}})
		defer s.stop()
		ctx := context.Background()
		s.createQueue("late", slot.Config{Interval: time.Second})
		res := s.enqueue("late", 3, nil)
		held := res.Jobs[0]
		time.Sleep(5 * time.Second)
		// Deliver the stale envelope by hand, as a late SQS delivery would.
		j, _ := s.eng.Job(ctx, job.Ref{Queue: "late", ID: held.JobID})
		if v := j.Version(); v.Status != job.Parked || v.Ticket != 1 || v.Attempt != 1 {
			t.Fatalf("held job at %+v, want parked at ticket 1, attempt 1", v)
		}
		from := j.Version()
		j.Status = job.Queued
		if err := s.store.UpdateJob(ctx, j, from); err != nil {
			t.Fatal(err)
		}
		if err := s.eng.Work(ctx, j.Envelope()); err != nil {
			t.Fatal(err)
		}
		after, _ := s.eng.Job(ctx, job.Ref{Queue: "late", ID: held.JobID})
		if after.ID != held.JobID || after.Attempt != 1 || after.Ticket <= 3 || after.Retickets != 1 {
			t.Fatalf("passed job is now %+v; want the same id and attempt with a ticket after 3", after)
		}
		s.waitFinished("late", time.Hour)
		starts := s.startsOf("late")
		if last := starts[len(starts)-1]; last.ID != held.JobID || last.Ticket != after.Ticket {
			t.Fatalf("last start %+v; want the re-ticketed job with ticket %d", last, after.Ticket)
		}
	})
}

// §5.9 Far future without hops: a job may ask for not_before a year ahead;
// it is parked, released once with an exact delay, and starts on time.
func TestGuaranteeFarFuture(t *testing.T) {
	inSim(t, simOptions{ResumeEvery: 10 * time.Minute}, func(t *testing.T, s *sim) {
		s.createQueue("far", slot.Config{Interval: time.Second})
		at := time.Now().Add(365 * 24 * time.Hour).Truncate(time.Millisecond).Add(123 * time.Millisecond)
		a := s.enqueue("far", 1, func(_ int, sp *job.Spec) { sp.NotBefore = &at }).Jobs[0]
		if a.Status != job.Parked || !a.SlotAt.Equal(at) {
			t.Fatalf("answer %+v; want parked with slot %v", a, at)
		}
		// Normal jobs behind it are not held up.
		b := s.enqueue("far", 1, nil).Jobs[0]
		if b.SlotAt.After(time.Now().Add(time.Second)) {
			t.Fatalf("a job behind the far one got slot %v", b.SlotAt)
		}
		sentBefore := s.tr.Stats().Sent
		s.waitFinished("far", 366*24*time.Hour)
		if sends := s.tr.Stats().Sent - sentBefore; sends != 1 {
			t.Fatalf("the far job was sent %d times; want once", sends)
		}
		for _, st := range s.startsOf("far") {
			if st.ID == a.JobID && (st.At.Before(at) || st.At.Sub(at) > 10*time.Millisecond) {
				t.Fatalf("far job started at %v; want %v", st.At, at)
			}
		}
	})
}

// §5.10 Bad input: each case returns an *input.Error naming the field
// and writes nothing: queues, jobs and the transport are as they were.
func TestGuaranteeBadInputWritesNothing(t *testing.T) {
	inSim(t, simOptions{}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("strict", slot.Config{Interval: time.Second, Targets: []string{"https://ok.example.com/*"}})
		s.enqueue("strict", 2, nil)
		time.Sleep(10 * time.Second)
		far := time.Now().Add(400 * 24 * time.Hour)
		big := json.RawMessage(`"` + string(make([]byte, 0)) + fmt.Sprintf("%0*d", job.MaxPayload, 0) + `"`)
		many := make([]job.Spec, job.MaxBatch+1)
		for i := range many {
			many[i] = job.Spec{Kind: "sim"}
		}
		tests := []struct {
			name  string
			run   func() error
			field string
		}{
			{"bad queue name", func() error {
				_, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "no/slash", Job: &job.Spec{Kind: "sim"}})
				return err
			}, "queue"},
			{"interval zero on create", func() error {
				iv := slot.Duration(0)
				_, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "fresh", Interval: &iv, Job: &job.Spec{Kind: "sim"}})
				return err
			}, "interval"},
			{"create with negative interval", func() error {
				_, err := s.eng.CreateQueue(ctx, "fresh", slot.Config{Interval: -time.Second})
				return err
			}, "config.interval"},
			{"payload over the limit", func() error {
				_, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "strict", Jobs: []job.Spec{{Kind: "sim"}, {Kind: "sim", Payload: big}}})
				return err
			}, "jobs[1].payload"},
			{"too many jobs", func() error {
				_, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "strict", Jobs: many})
				return err
			}, "jobs"},
			{"target not allowed", func() error {
				_, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "strict", Jobs: []job.Spec{{Kind: "sim"}, {Target: "https://evil.example.com/x"}}})
				return err
			}, "jobs[1].target"},
			{"target not allowed on a queue the call would create", func() error {
				_, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "brand-new", Job: &job.Spec{Target: "https://evil.example.com/x"}})
				return err
			}, "job.target"},
			{"pause until beyond the representable", func() error {
				_, err := s.eng.Pause(ctx, "strict", time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
				return err
			}, "until"},
			{"unknown kind", func() error {
				_, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "strict", Job: &job.Spec{Kind: "nope"}})
				return err
			}, "job.kind"},
			{"not_before beyond a year", func() error {
				_, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "strict", Job: &job.Spec{Kind: "sim", NotBefore: &far}})
				return err
			}, "job.not_before"},
			{"pause until the past", func() error { _, err := s.eng.Pause(ctx, "strict", time.Now().Add(-time.Hour)); return err }, "until"},
			{"configure with skew over interval", func() error {
				_, err := s.eng.Configure(ctx, "strict", slot.Config{Interval: time.Second, Skew: 2 * time.Second})
				return err
			}, "config.skew"},
		}
		for _, tt := range tests { // no t.Run inside a synctest bubble
			before := snapshot(t, s)
			err := tt.run()
			var ie *input.Error
			if !errors.As(err, &ie) || ie.Field != tt.field {
				t.Errorf("%s: err = %v; want an InputError on %s", tt.name, err, tt.field)
			}
			if after := snapshot(t, s); !reflect.DeepEqual(before, after) {
				t.Errorf("%s: state changed:\nbefore %+v\nafter  %+v", tt.name, before, after)
			}
		}
	})
}

type stateSnapshot struct {
	Queues []engine.Queue
	Jobs   []job.Job
	Sent   int64
}

func snapshot(t *testing.T, s *sim) stateSnapshot {
	t.Helper()
	ctx := context.Background()
	qs, err := s.store.ListQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := stateSnapshot{Queues: qs, Sent: s.tr.Stats().Sent}
	for _, q := range qs {
		for _, st := range job.Statuses {
			snap.Jobs = append(snap.Jobs, s.jobs(q.Name, st)...)
		}
	}
	return snap
}

// checkSlotOrder fails if a line job (not in outOfLine) started before
// its slot: starts follow slots. The tickets of one moment may start in
// any order, and a worker late within its room keeps its start after jobs
// of later slots started (docs/guarantees.md §8), so ticket order is not
// asked; what a start must never do is come before the slot it was told.
func checkSlotOrder(t *testing.T, starts []start, outOfLine map[string]bool) {
	t.Helper()
	for _, st := range starts {
		if !outOfLine[st.ID] && st.At.Before(st.SlotAt) {
			t.Fatalf("ticket %d (job %s) started at %v, %v before its slot", st.Ticket, st.ID, st.At, st.SlotAt.Sub(st.At))
		}
	}
}

// reticketed counts the re-tickets in the histories of jobs: starts a
// clean run (no jitter, no crash) must not need.
func reticketed(jobs []job.Job) int {
	n := 0
	for _, j := range jobs {
		for _, ev := range j.History {
			if ev.Kind == job.Reticketed {
				n++
			}
		}
	}
	return n
}

// firstReticketed is the first of jobs whose history has a re-ticket, for
// a failure's message.
func firstReticketed(jobs []job.Job) job.Job {
	for _, j := range jobs {
		if reticketed([]job.Job{j}) > 0 {
			return j
		}
	}
	return job.Job{}
}
