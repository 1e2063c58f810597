package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/dev/storetest"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

func TestState(t *testing.T) {
	storetest.Run(t, func(*testing.T) engine.State { return memstore.New(memstore.Options{}) })
}

func TestStoreNow(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := memstore.New(memstore.Options{Now: func() time.Time { return now }})
	j := job.Job{Queue: "q", ID: "a", Kind: "k", Status: job.Succeeded, Ticket: 1, Attempt: 1, ExpiresAt: now.Add(time.Hour)}
	if _, err := st.CreateJobs(ctx, []job.Job{j}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetJob(ctx, job.Ref{Queue: j.Queue, ID: j.ID}); err != nil {
		t.Fatalf("GetJob before expiry: %v", err)
	}
	now = now.Add(time.Hour)
	if _, err := st.GetJob(ctx, job.Ref{Queue: j.Queue, ID: j.ID}); !errors.Is(err, engine.ErrJobNotFound) {
		t.Errorf("GetJob at expiry: %v, want ErrJobNotFound", err)
	}
	if n, _ := st.CountJobs(ctx, "q", 0, job.Succeeded); n != 0 {
		t.Errorf("CountJobs at expiry = %d, want 0", n)
	}
}

func TestTakeBadRequest(t *testing.T) {
	st := memstore.New(memstore.Options{})
	ctx := t.Context()
	if err := st.CreateQueue(ctx, engine.Queue{Name: "q", Config: defaultConfig()}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []engine.TakeRequest{{N: 0}, {N: 1, Line: 2}, {N: 2, Line: -1}} {
		r.Queue, r.Interval = "q", time.Second
		if _, err := st.Take(ctx, r); err == nil {
			t.Errorf("Take(n=%d, line=%d) succeeded", r.N, r.Line)
		}
	}
}

// delivery is one handler call, seen from the bubble's clock.
type delivery struct {
	id string
	at time.Duration // since the test began
}

// recorder collects deliveries; fail makes the handler return an error.
type recorder struct {
	start time.Time
	fail  func(job.Envelope) bool

	mu  sync.Mutex
	got []delivery
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) handle(_ context.Context, e job.Envelope) error {
	r.mu.Lock()
	r.got = append(r.got, delivery{e.JobID, time.Since(r.start)})
	r.mu.Unlock()
	if r.fail != nil && r.fail(e) {
		return errors.New("handler failed")
	}
	return nil
}

func (r *recorder) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// run starts tr.Run in the bubble; stop ends it and checks its answer.
func run(t *testing.T, tr *memstore.Transport, workers int, handle func(context.Context, job.Envelope) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx, workers, handle) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

func msg(id string, delay time.Duration) engine.Message {
	return engine.Message{Envelope: job.Envelope{V: job.EnvelopeVersion, Queue: "q", JobID: id, Ticket: 1, Attempt: 1,
		Payload: []byte(`{"id":"` + id + `"}`)}, Delay: delay}
}

func send(t *testing.T, tr *memstore.Transport, msgs ...engine.Message) {
	t.Helper()
	if err := tr.Send(t.Context(), msgs); err != nil {
		t.Fatalf("Send: %v", err)
	}
}

// deliverMany sends n messages numbered from 0, each delay ahead, to
// workers on tr, and answers what the recorder saw in the minute after
// (of a synctest bubble's fake time).
func deliverMany(t *testing.T, tr *memstore.Transport, workers, n int, delay time.Duration) []delivery {
	t.Helper()
	rec := newRecorder()
	stop := run(t, tr, workers, rec.handle)
	for i := range n {
		send(t, tr, msg(fmt.Sprint(i), delay))
	}
	_ = clock.Sleep(t.Context(), time.Minute) // the bubble's minute
	stop()
	return rec.deliveries()
}

func TestTransportDelay(t *testing.T) {
	for _, c := range []struct {
		name  string
		whole bool
		want  []delivery
	}{
		{"Exact", false, []delivery{{"now", 0}, {"soon", 1500 * time.Millisecond}, {"far", 15 * time.Minute}}},
		{"WholeSeconds", true, []delivery{{"now", 0}, {"soon", time.Second}, {"far", 15 * time.Minute}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := memstore.NewTransport(memstore.TransportOptions{WholeSeconds: c.whole})
				if tr.MaxDelay() != 15*time.Minute {
					t.Errorf("MaxDelay = %s, want 15m", tr.MaxDelay())
				}
				rec := newRecorder()
				// Sent before a worker runs: one running may take "now"
				// before Pending is read.
				send(t, tr, msg("far", 15*time.Minute), msg("soon", 1500*time.Millisecond), msg("now", 0))
				if n := tr.Pending(); n != 3 {
					t.Errorf("Pending = %d, want 3", n)
				}
				stop := run(t, tr, 1, rec.handle)
				time.Sleep(time.Hour)
				stop()
				if got := rec.deliveries(); !slices.Equal(got, c.want) {
					t.Errorf("deliveries %v, want %v", got, c.want)
				}
				if n := tr.Pending(); n != 0 {
					t.Errorf("Pending = %d, want 0", n)
				}
				if s := tr.Stats(); s.SendCalls != 1 || s.Sent != 3 || s.Delivered != 3 {
					t.Errorf("Stats = %+v", s)
				}
			})
		})
	}
}

// A message sent while the dispatcher waits for a later one is not held up.
func TestTransportEarlierMessageWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := memstore.NewTransport(memstore.TransportOptions{})
		rec := newRecorder()
		stop := run(t, tr, 1, rec.handle)
		send(t, tr, msg("late", 10*time.Minute))
		time.Sleep(time.Second)
		send(t, tr, msg("early", 2*time.Second))
		time.Sleep(time.Hour)
		stop()
		want := []delivery{{"early", 3 * time.Second}, {"late", 10 * time.Minute}}
		if got := rec.deliveries(); !slices.Equal(got, want) {
			t.Errorf("deliveries %v, want %v", got, want)
		}
	})
}

func TestTransportRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := errors.New("injected")
		tr := memstore.NewTransport(memstore.TransportOptions{MaxDelay: time.Minute,
			SendFailure: func(e job.Envelope) error {
				if e.JobID == "refused" {
					return bad
				}
				return nil
			}})
		err := tr.Send(t.Context(), []engine.Message{msg("ok", 0), msg("too-far", 2*time.Minute),
			msg("refused", 0), msg("negative", -time.Second), msg("ok2", time.Minute)})
		var se *engine.SendError
		if !errors.As(err, &se) {
			t.Fatalf("Send = %v, want a *engine.SendError", err)
		}
		var idx []int
		for i := range se.Failed {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		if !slices.Equal(idx, []int{1, 2, 3}) {
			t.Errorf("failed messages %v, want [1 2 3]", idx)
		}
		if !errors.Is(se.Failed[2], bad) {
			t.Errorf("Failed[2] = %v, want the injected error", se.Failed[2])
		}
		if n := tr.Pending(); n != 2 {
			t.Errorf("Pending = %d, want 2", n)
		}
		if s := tr.Stats(); s.Sent != 2 || s.Failed != 3 {
			t.Errorf("Stats = %+v, want 2 sent, 3 failed", s)
		}

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := tr.Send(ctx, []engine.Message{msg("x", 0)}); !errors.Is(err, context.Canceled) {
			t.Errorf("Send with a cancelled context = %v", err)
		}
	})
}

func TestTransportRedelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := memstore.NewTransport(memstore.TransportOptions{VisibilityTimeout: 5 * time.Second})
		rec := newRecorder()
		var calls atomic.Int32
		rec.fail = func(job.Envelope) bool { return calls.Add(1) <= 2 }
		stop := run(t, tr, 2, func(ctx context.Context, e job.Envelope) error {
			time.Sleep(time.Second) // the visibility timeout counts from receipt
			return rec.handle(ctx, e)
		})
		send(t, tr, msg("a", time.Second))
		time.Sleep(time.Minute)
		stop()
		want := []delivery{{"a", 2 * time.Second}, {"a", 7 * time.Second}, {"a", 12 * time.Second}}
		if got := rec.deliveries(); !slices.Equal(got, want) {
			t.Errorf("deliveries %v, want %v", got, want)
		}
		if s := tr.Stats(); s.Delivered != 3 || s.Redelivered != 2 {
			t.Errorf("Stats = %+v, want 3 delivered, 2 redelivered", s)
		}
		if n := tr.Pending(); n != 0 {
			t.Errorf("Pending = %d, want 0", n)
		}
	})
}

func TestTransportDuplicates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := memstore.NewTransport(memstore.TransportOptions{DuplicateRate: 1, Jitter: time.Second, Seed: 7})
		const n = 50
		got := deliverMany(t, tr, 4, n, 10*time.Second)
		if len(got) != 2*n {
			t.Fatalf("%d deliveries, want %d", len(got), 2*n)
		}
		per := map[string]int{}
		for _, d := range got {
			per[d.id]++
			if d.at < 10*time.Second || d.at >= 11*time.Second {
				t.Errorf("%s delivered at %s, want within [10s, 11s)", d.id, d.at)
			}
		}
		for id, k := range per {
			if k != 2 {
				t.Errorf("%s delivered %d times, want 2", id, k)
			}
		}
		if s := tr.Stats(); s.Duplicated != n || s.Sent != n {
			t.Errorf("Stats = %+v", s)
		}
	})
}

func TestTransportJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := memstore.NewTransport(memstore.TransportOptions{Jitter: 2 * time.Second, Rand: rand.New(rand.NewPCG(1, 2))})
		const n = 100
		got := deliverMany(t, tr, 8, n, 5*time.Second)
		if len(got) != n {
			t.Fatalf("%d deliveries, want %d", len(got), n)
		}
		distinct := map[time.Duration]bool{}
		for _, d := range got {
			distinct[d.at] = true
			if d.at < 5*time.Second || d.at >= 7*time.Second {
				t.Errorf("%s delivered at %s, want within [5s, 7s)", d.id, d.at)
			}
		}
		if len(distinct) < n/2 {
			t.Errorf("only %d distinct delivery times for %d jittered messages", len(distinct), n)
		}
	})
}

func TestTransportDrops(t *testing.T) {
	for _, rate := range []float64{1, 0.3} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := memstore.NewTransport(memstore.TransportOptions{DropRate: rate, Seed: 3})
				const n = 200
				delivered := int64(len(deliverMany(t, tr, 1, n, time.Second)))
				s := tr.Stats()
				if s.Sent != n || s.Dropped+delivered != n {
					t.Errorf("sent %d, dropped %d, delivered %d; want %d = dropped + delivered", s.Sent, s.Dropped, delivered, n)
				}
				if rate == 1 && delivered != 0 {
					t.Errorf("%d delivered at drop rate 1", delivered)
				}
				if rate < 1 && (s.Dropped == 0 || delivered == 0) {
					t.Errorf("drop rate %v dropped %d of %d", rate, s.Dropped, n)
				}
			})
		})
	}
}

func TestTransportWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := memstore.NewTransport(memstore.TransportOptions{})
		var busy, most atomic.Int32
		rec := newRecorder()
		stop := run(t, tr, 4, func(ctx context.Context, e job.Envelope) error {
			n := busy.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Second)
			busy.Add(-1)
			return rec.handle(ctx, e)
		})
		for i := range 8 {
			send(t, tr, msg(fmt.Sprint(i), 0))
		}
		time.Sleep(time.Minute)
		stop()
		if most.Load() != 4 {
			t.Errorf("at most %d handlers at once, want 4", most.Load())
		}
		for _, d := range rec.deliveries() {
			if d.at != time.Second && d.at != 2*time.Second {
				t.Errorf("%s finished at %s, want 1s or 2s", d.id, d.at)
			}
		}
	})
}

// An hour of one-second slots: each handler sends the next message.
func TestTransportHourOfSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := memstore.NewTransport(memstore.TransportOptions{WholeSeconds: true})
		rec := newRecorder()
		var count atomic.Int64
		stop := run(t, tr, 2, func(ctx context.Context, e job.Envelope) error {
			if err := rec.handle(ctx, e); err != nil {
				return err
			}
			if count.Add(1) < 3600 {
				return tr.Send(ctx, []engine.Message{msg(fmt.Sprint(count.Load()), time.Second)})
			}
			return nil
		})
		send(t, tr, msg("0", time.Second))
		time.Sleep(2 * time.Hour)
		stop()
		got := rec.deliveries()
		if len(got) != 3600 {
			t.Fatalf("%d deliveries, want 3600", len(got))
		}
		for i, d := range got {
			if want := time.Duration(i+1) * time.Second; d.at != want {
				t.Fatalf("delivery %d at %s, want %s", i, d.at, want)
			}
		}
	})
}

func TestTransportRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := memstore.NewTransport(memstore.TransportOptions{})
		rec := newRecorder()
		stop := run(t, tr, 1, rec.handle)
		send(t, tr, msg("a", time.Second), msg("b", time.Minute))
		time.Sleep(2 * time.Second)

		if err := tr.Run(t.Context(), 1, rec.handle); !errors.Is(err, memstore.ErrRunning) {
			t.Errorf("second Run = %v, want ErrRunning", err)
		}
		if err := tr.Run(t.Context(), 0, rec.handle); err == nil {
			t.Errorf("Run with 0 workers succeeded")
		}
		stop()
		if n := tr.Pending(); n != 1 {
			t.Fatalf("Pending after stop = %d, want 1", n)
		}
		time.Sleep(5 * time.Minute)
		stop = run(t, tr, 1, rec.handle)
		synctest.Wait()
		stop()
		want := []delivery{{"a", time.Second}, {"b", 5*time.Minute + 2*time.Second}}
		if got := rec.deliveries(); !slices.Equal(got, want) {
			t.Errorf("deliveries %v, want %v", got, want)
		}
	})
}

func defaultConfig() slot.Config { return slot.Config{Interval: time.Second}.WithDefaults() }

// An hour of a one-second queue on an unkind transport: a toy worker that
// sleeps to the slot, asks the gate, and resends early envelopes. Whatever
// the jitter and duplicates, starts are an interval apart and no job starts
// twice.
func TestStoreAndTransportHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := memstore.New(memstore.Options{})
		tr := memstore.NewTransport(memstore.TransportOptions{WholeSeconds: true, Jitter: 1500 * time.Millisecond, DuplicateRate: 0.2, Seed: 11})
		cfg := defaultConfig()
		if err := st.CreateQueue(ctx, engine.Queue{Name: "q", Config: cfg, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		const n = 3600
		tk, err := st.Take(ctx, engine.TakeRequest{Queue: "q", N: n, Line: n, Interval: cfg.Interval, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		jobs := make([]job.Job, n)
		for i := range jobs {
			jobs[i] = job.Job{Queue: "q", ID: fmt.Sprint(i), Kind: "k", Status: job.Queued, Ticket: tk.First + int64(i),
				SlotAt: tk.Slots[i], Attempt: 1}
		}
		if _, err := st.CreateJobs(ctx, jobs); err != nil {
			t.Fatal(err)
		}

		var mu sync.Mutex
		var starts []time.Time
		var passed atomic.Int64
		reticket := func(ctx context.Context, e job.Envelope) error {
			j, err := st.GetJob(ctx, e.Ref())
			if err != nil || j.Status != job.Queued || j.Ticket != e.Ticket {
				return err // a stale copy
			}
			tk, err := st.Take(ctx, engine.TakeRequest{Queue: j.Queue, N: 1, Line: 1, Interval: cfg.Interval, Now: time.Now()})
			if err != nil {
				return err
			}
			from := j.Version()
			j.Ticket, j.SlotAt, j.Retickets = tk.First, tk.Slots[0], j.Retickets+1
			if err := st.UpdateJob(ctx, j, from); errors.Is(err, engine.ErrConflict) {
				return nil
			} else if err != nil {
				return err
			}
			return tr.Send(ctx, []engine.Message{{Envelope: j.Envelope(), Delay: min(max(0, time.Until(j.SlotAt)), tr.MaxDelay())}})
		}
		handle := func(ctx context.Context, e job.Envelope) error {
			if d := time.Until(e.SlotAt); d > time.Second {
				// Further than a transport hop: hop again (a toy park).
				return tr.Send(ctx, []engine.Message{{Envelope: e, Delay: min(d, tr.MaxDelay())}})
			}
			time.Sleep(time.Until(e.SlotAt))
			if j, err := st.GetJob(ctx, e.Ref()); err != nil || j.Status != job.Queued || j.Ticket != e.Ticket {
				// A stale copy (its job started, or moved to a new
				// ticket): the engine reads the job first, too. The gate
				// passes nobody for a higher ticket having started, so
				// it would only call the copy early, again and again.
				return err
			}
			now := time.Now()
			if q, err := st.GetQueue(ctx, e.Queue); err != nil {
				return err
			} else if slot.Missed(q.State, e.SlotAt, now, cfg.LimitList(), cfg.Skew) {
				// Late beyond its room, with slots booked behind it: a
				// start now would move them all (the engine's rule).
				passed.Add(1)
				return reticket(ctx, e)
			}
			_, err := st.Gate(ctx, engine.GateRequest{Queue: e.Queue, Ticket: e.Ticket, Interval: cfg.Interval, Skew: cfg.Skew, Now: now, SlotAt: e.SlotAt})
			if err == nil {
				// The claim: of duplicate deliveries that passed, one wins.
				j, gerr := st.GetJob(ctx, e.Ref())
				if gerr != nil {
					return gerr
				}
				from := job.Version{Status: job.Queued, Ticket: e.Ticket, Attempt: e.Attempt, Gen: e.Gen}
				j.Status, j.StartedAt = job.Running, now
				err = st.UpdateJob(ctx, j, from)
			}
			var ge *engine.GateError
			switch {
			case err == nil:
				mu.Lock()
				starts = append(starts, now)
				mu.Unlock()
			case errors.As(err, &ge) && ge.Verdict == slot.Early:
				return tr.Send(ctx, []engine.Message{{Envelope: e, Delay: time.Until(ge.OpenAt)}})
			case errors.As(err, &ge) && ge.Verdict == slot.Passed:
				// Jitter let a later ticket through first: re-ticket.
				passed.Add(1)
				return reticket(ctx, e)
			case errors.Is(err, engine.ErrConflict):
				// A duplicate of an envelope that started or moved already.
			default:
				return err
			}
			return nil
		}
		stop := run(t, tr, 16, handle)
		go func() {
			// Release envelopes no more than MaxDelay ahead, as the resume
			// function would.
			for i := 0; i < n; {
				var msgs []engine.Message
				for ; i < n && time.Until(jobs[i].SlotAt) <= tr.MaxDelay(); i++ {
					msgs = append(msgs, engine.Message{Envelope: jobs[i].Envelope(), Delay: max(0, time.Until(jobs[i].SlotAt))})
				}
				if err := tr.Send(ctx, msgs); err != nil {
					t.Error(err)
				}
				time.Sleep(time.Minute)
			}
		}()
		time.Sleep(6 * time.Hour)
		stop()

		t.Logf("%d re-tickets; transport %+v", passed.Load(), tr.Stats())
		if len(starts) != n {
			t.Errorf("%d starts, want %d", len(starts), n)
		}
		slices.SortFunc(starts, time.Time.Compare)
		for i := 1; i < len(starts); i++ {
			if gap := starts[i].Sub(starts[i-1]); gap < cfg.Interval {
				t.Fatalf("starts %d and %d are %s apart", i-1, i, gap)
			}
		}
		if passed.Load() == 0 {
			t.Errorf("no job was passed; the test does not exercise re-tickets")
		}
		if s := tr.Stats(); s.Duplicated == 0 {
			t.Errorf("no duplicates injected: %+v", s)
		}
		running := 0
		for _, j := range st.Jobs("q") {
			if j.Status == job.Running {
				running++
			}
		}
		if running != n {
			t.Errorf("%d jobs running, want %d", running, n)
		}
	})
}
