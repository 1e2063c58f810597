package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// failUntil fails each job's attempts below its attempt ok, with a long
// error.
type failUntil struct{ ok int }

func (f failUntil) Run(ctx context.Context, j *job.Job, cfg slot.Config) error {
	if j.Attempt < f.ok {
		return errors.New(strings.Repeat("upstream said no; ", 20))
	}
	return nil
}

func kinds(h []job.Event) []job.EventKind {
	var out []job.EventKind
	for _, ev := range h {
		out = append(out, ev.Kind)
	}
	return out
}

// A job enqueued on a paused queue is parked; the resume run that lifts
// the pause re-tickets and releases it; its first attempt fails and it is
// retried; the second succeeds. Its history says so, in order, with the
// old and new ticket, the lateness of each start and the error.
func TestHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		tr := memstore.NewTransport(memstore.TransportOptions{})
		eng := testenv.NewEngine(t, engine.Options{Transport: tr, Runner: failUntil{ok: 2}})
		if _, err := eng.CreateQueue(ctx, "q", slot.Config{}); err != nil {
			t.Fatal(err)
		}
		// Another job first, so the parked one's new ticket differs.
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Jobs: []job.Spec{{ID: "first", Kind: "k"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Pause(ctx, "q", time.Now().Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Jobs: []job.Spec{{ID: "j", Kind: "k"}}}); err != nil {
			t.Fatal(err)
		}
		stop := workOne(tr, eng)
		time.Sleep(time.Minute)
		if _, err := eng.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		stop()

		j, err := eng.Job(ctx, job.Ref{Queue: "q", ID: "j"})
		if err != nil {
			t.Fatal(err)
		}
		want := []job.EventKind{job.Enqueued, job.ParkedEvent, job.Reticketed, job.Released,
			job.Started, job.AttemptFailed, job.Retried, job.Started, job.SucceededEvent}
		if got := kinds(j.History); !slices.Equal(got, want) {
			t.Fatalf("history %v, want %v", got, want)
		}
		h := j.History
		if h[1].Reason != string(job.PausedQueue) {
			t.Errorf("parked for %q, want paused", h[1].Reason)
		}
		if h[2].OldTicket != h[0].Ticket || h[2].Ticket <= h[2].OldTicket {
			t.Errorf("re-ticketed %d → %d, enqueued as %d", h[2].OldTicket, h[2].Ticket, h[0].Ticket)
		}
		if h[4].Attempt != 1 || h[5].Attempt != 1 || h[5].Error == "" || len(h[5].Error) > job.MaxEventError+len("…") {
			t.Errorf("attempt 1: started %+v, failed %+v", h[4], h[5])
		}
		if h[6].Attempt != 2 || h[6].Ticket != j.Ticket || h[7].Attempt != 2 {
			t.Errorf("retry: %+v, then %+v; job at ticket %d", h[6], h[7], j.Ticket)
		}
		if got := time.Duration(h[7].LatenessMs) * time.Millisecond; got != j.StartedAt.Sub(j.SlotAt).Truncate(time.Millisecond) {
			t.Errorf("second start %v late, job started %v after its slot", got, j.StartedAt.Sub(j.SlotAt))
		}
		for i := 1; i < len(h); i++ {
			if h[i].At.Before(h[i-1].At) {
				t.Errorf("event %d (%s) at %v, before event %d", i, h[i].Kind, h[i].At, i-1)
			}
		}
		if j.HistoryDropped != 0 {
			t.Errorf("dropped %d events", j.HistoryDropped)
		}
	})
}

// Under many retries the history keeps its last job.MaxHistory events,
// counts the ones it dropped, and stays small as stored.
func TestHistoryBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		tr := memstore.NewTransport(memstore.TransportOptions{})
		eng := testenv.NewEngine(t, engine.Options{Transport: tr, Runner: failUntil{ok: 40}})
		if _, err := eng.CreateQueue(ctx, "q", slot.Config{MaxAttempts: 40, Backoff: time.Second, MaxBackoff: time.Second}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Jobs: []job.Spec{{ID: "j", Kind: "k"}}}); err != nil {
			t.Fatal(err)
		}
		stop := workOne(tr, eng)
		time.Sleep(10 * time.Minute)
		stop()
		j, err := eng.Job(ctx, job.Ref{Queue: "q", ID: "j"})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != job.Succeeded || j.Attempt != 40 {
			t.Fatalf("job %s at attempt %d, want succeeded at 40", j.Status, j.Attempt)
		}
		if len(j.History) != job.MaxHistory {
			t.Errorf("%d events kept, want %d", len(j.History), job.MaxHistory)
		}
		// 1 enqueued + 39 × (started, attempt_failed, retried) + started,
		// succeeded.
		if total := len(j.History) + j.HistoryDropped; total != 1+39*3+2 {
			t.Errorf("%d events in all, want %d", total, 1+39*3+2)
		}
		if last := j.History[len(j.History)-1]; last.Kind != job.SucceededEvent {
			t.Errorf("last event %s", last.Kind)
		}
		stored := job.EncodeHistory(j.History, j.EnqueuedAt)
		t.Logf("history of %d events stored in %d bytes", len(j.History), len(stored))
		// Each event's error is cut to job.MaxEventError: the stored
		// history is bounded by the kept events, not by the attempts.
		if limit := job.MaxHistory * (job.MaxEventError + 64); len(stored) > limit {
			t.Errorf("history stored in %d bytes, more than %d: %s", len(stored), limit, stored)
		}
	})
}

// events collects what the engine reports.
type events struct {
	mu  sync.Mutex
	evs []engine.Event
}

func (e *events) Observe(_ context.Context, ev engine.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
}

// A message whose slot lies past the invocation's deadline is handed back:
// the observer hears it, and the job's history says how far ahead.
func TestHandBackRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		tr := &keep{Transport: memstore.NewTransport(memstore.TransportOptions{})}
		obs := &events{}
		eng := testenv.NewEngine(t, engine.Options{Transport: tr, Runner: failUntil{}, Observer: obs})
		iv := slot.Duration(time.Minute)
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Interval: &iv, Jobs: []job.Spec{{ID: "a", Kind: "k"}, {ID: "b", Kind: "k"}}}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := eng.Work(wctx, tr.msgs[1].Envelope); err != nil { // b's slot is a minute away
			t.Fatal(err)
		}
		j, err := eng.Job(ctx, job.Ref{Queue: "q", ID: "b"})
		if err != nil {
			t.Fatal(err)
		}
		if got := kinds(j.History); !slices.Equal(got, []job.EventKind{job.Enqueued, job.HandedBack}) || j.History[1].DelayMs != 60000 {
			t.Errorf("history %+v", j.History)
		}
		if len(obs.evs) != 1 || obs.evs[0].Kind != engine.EventHandedBack || obs.evs[0].Queue != "q" {
			t.Errorf("observed %+v", obs.evs)
		}
	})
}

// keep keeps the messages the engine sends.
type keep struct {
	*memstore.Transport
	msgs []engine.Message
}

func (k *keep) Send(ctx context.Context, msgs []engine.Message) error {
	k.msgs = append(k.msgs, msgs...)
	return k.Transport.Send(ctx, msgs)
}

// workOne runs one of tr's workers into eng until the stop it returns,
// which waits for the worker to end.
func workOne(tr *memstore.Transport, eng *engine.Engine) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- tr.Run(ctx, 1, eng.Work) }()
	return func() { cancel(); <-done }
}
