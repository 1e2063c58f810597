package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// The worker's contract for one message (docs/guarantees.md, what slotq designs against: a worker budgets
// each message against the time it has left). Each test drives Work
// directly with the envelope a job's record gives.

// runFunc is a Runner made of a function.
type runFunc func(ctx context.Context, j *job.Job, cfg slot.Config) error

func (f runFunc) Run(ctx context.Context, j *job.Job, cfg slot.Config) error { return f(ctx, j, cfg) }

// logIDs is a runner that appends the id of each job it runs to ran.
func logIDs(ran *[]string) runFunc {
	return func(_ context.Context, j *job.Job, _ slot.Config) error {
		*ran = append(*ran, j.ID)
		return nil
	}
}

type workBench struct {
	t     *testing.T
	store *memstore.Store
	tr    *memstore.Transport
	eng   *engine.Engine
}

// newWorkBench builds an engine on memstore that nothing runs: the test
// calls Work itself. o's State and Transport are filled in, and a Lead of
// none unless o sets one; a non-nil wrap wraps the store.
func newWorkBench(t *testing.T, o engine.Options, wrap func(engine.State) engine.State) *workBench {
	t.Helper()
	b := &workBench{t: t, store: memstore.New(memstore.Options{}), tr: memstore.NewTransport(memstore.TransportOptions{})}
	o.State, o.Transport = b.store, b.tr
	if o.Lead == 0 {
		// The test calls Work itself, at once, on real clocks: no sleep
		// before the start, which a loaded host (and -race) could make
		// overrun a queue's 2ms skew and miss the slot.
		o.Lead = -1
	}
	if wrap != nil {
		o.State = wrap(b.store)
	}
	b.eng = engine.New(o)
	return b
}

// newCountingBench is newWorkBench with a target that succeeds and
// counts its runs in the int it returns.
func newCountingBench(t *testing.T, o engine.Options, wrap func(engine.State) engine.State) (*workBench, *int) {
	t.Helper()
	ran := 0
	o.Runner = runFunc(func(context.Context, *job.Job, slot.Config) error {
		ran++
		return nil
	})
	return newWorkBench(t, o, wrap), &ran
}

// enqueue creates queue q with cfg and enqueues one job of kind "k",
// returning the envelope its message carries.
// A queue without a skew of its own gets a generous one: the worker is
// judged as it calls its target, and on a busy host (-race) it may come
// more than the default 2 ms after its start and give the start up,
// which these tests are not about.
func (b *workBench) enqueue(q string, cfg slot.Config) job.Envelope {
	b.t.Helper()
	ctx := context.Background()
	if cfg.Skew == 0 {
		cfg.Skew = 200 * time.Millisecond
	}
	if _, err := b.eng.CreateQueue(ctx, q, cfg); err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.eng.Enqueue(ctx, job.EnqueueRequest{Queue: q, Job: &job.Spec{ID: "j1", Kind: "k"}}); err != nil {
		b.t.Fatal(err)
	}
	j := b.job(q, "j1")
	return j.Envelope()
}

func (b *workBench) job(q, id string) job.Job {
	b.t.Helper()
	j, err := b.store.GetJob(context.Background(), job.Ref{Queue: q, ID: id})
	if err != nil {
		b.t.Fatal(err)
	}
	return j
}

// A job is started only when its whole budget (slot wait + target timeout
// + the writes after it) fits before the invocation's deadline; otherwise
// it is handed back, unstarted, with the delay its slot still needs.
func TestWorkBudget(t *testing.T) {
	tests := []struct {
		name    string
		slotIn  time.Duration // slot distance from now
		left    time.Duration // time left in the invocation
		wantRun bool
	}{
		{name: "slot now, a second left", slotIn: 0, left: time.Second},
		{name: "slot now, less than the target timeout left", slotIn: 0, left: 20 * time.Second},
		{name: "slot now, target and record fit", slotIn: 0, left: time.Minute, wantRun: true},
		{name: "wait fits but target does not", slotIn: 10 * time.Second, left: 40 * time.Second},
		{name: "wait and target fit", slotIn: 10 * time.Second, left: 50 * time.Second, wantRun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ran := false
				b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error {
					ran = true
					return nil
				})}, nil)
				env := b.enqueue("budget", slot.Config{Interval: time.Second, TargetTimeout: 30 * time.Second})
				// Move the job's slot to where the case wants it.
				j := b.job("budget", "j1")
				from := j.Version()
				j.SlotAt = time.Now().Add(tt.slotIn)
				if err := b.store.UpdateJob(context.Background(), j, from); err != nil {
					t.Fatal(err)
				}
				env.SlotAt = j.SlotAt
				sent := b.tr.Stats().Sent

				ctx, cancel := context.WithTimeout(context.Background(), tt.left)
				defer cancel()
				if err := b.eng.Work(ctx, env); err != nil {
					t.Fatalf("Work: %v", err)
				}
				got := b.job("budget", "j1")
				if ran != tt.wantRun {
					t.Fatalf("target ran: %v, want %v (job %s)", ran, tt.wantRun, got.Status)
				}
				if tt.wantRun {
					if got.Status != job.Succeeded {
						t.Errorf("status %s, want succeeded", got.Status)
					}
					return
				}
				if got.Status != job.Queued || got.Ticket != env.Ticket {
					t.Errorf("job %s at ticket %d, want queued at %d (handed back)", got.Status, got.Ticket, env.Ticket)
				}
				if n := b.tr.Stats().Sent - sent; n != 1 {
					t.Fatalf("%d messages sent, want the job handed back once", n)
				}
			})
		})
	}
}

// The lease after which a running attempt counts as lost follows the
// worker's timeout, not a fixed 16 minutes.
func TestWorkLeaseFromWorkerTimeout(t *testing.T) {
	tests := []struct {
		name      string
		ago       time.Duration
		wantStill bool
	}{
		{name: "within the invocation", ago: 90 * time.Second, wantStill: true},
		{name: "within the margin", ago: 170 * time.Second, wantStill: true},
		{name: "past the worker timeout and the margin", ago: 4 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newWorkBench(t, engine.Options{WorkerTimeout: 2 * time.Minute}, nil)
				env := b.enqueue("lease", slot.Config{Interval: time.Second, TargetTimeout: 30 * time.Second})
				j := b.job("lease", "j1")
				from := j.Version()
				j.Status, j.StartedAt = job.Running, time.Now().Add(-tt.ago)
				if err := b.store.UpdateJob(context.Background(), j, from); err != nil {
					t.Fatal(err)
				}
				err := b.eng.Work(context.Background(), env)
				if tt.wantStill {
					if !errors.Is(err, engine.ErrStillRunning) {
						t.Fatalf("Work: %v, want ErrStillRunning", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Work: %v, want the lost attempt recovered", err)
				}
				got := b.job("lease", "j1")
				if got.Attempt != 2 || !strings.Contains(got.LastError, "attempt lost") {
					t.Errorf("job %s attempt %d (%q), want attempt 2 after a lost attempt", got.Status, got.Attempt, got.LastError)
				}
			})
		})
	}
}

// ctxState refuses writes on a done context, as DynamoDB's client does.
type ctxState struct{ engine.State }

func (s ctxState) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.State.UpdateJob(ctx, j, from)
}

// A target that uses up the invocation's context (its deadline comes, or
// it is cancelled, as the target returns) still gets its outcome
// recorded: the writes after it have a context of their own.
func TestWorkRecordsOutcomeOnItsOwnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error {
		cancel() // the invocation's time is up as the target returns
		return nil
	})}, func(s engine.State) engine.State { return ctxState{s} })
	env := b.enqueue("record", slot.Config{Interval: time.Second})
	if err := b.eng.Work(ctx, env); err != nil {
		t.Fatalf("Work: %v", err)
	}
	if got := b.job("record", "j1"); got.Status != job.Succeeded {
		t.Errorf("status %s, want succeeded: the outcome was not recorded", got.Status)
	}
}

// A panicking target fails its attempt (retried like any failure), with
// the panic's value and stack, bounded, in the job's last error; the
// worker goes on.
func TestWorkRecoversPanic(t *testing.T) {
	tests := []struct {
		name  string
		value any
		want  string
	}{
		{name: "string", value: "boom", want: "panic: boom"},
		{name: "error", value: errors.New("nil map"), want: "panic: nil map"},
		{name: "huge value", value: strings.Repeat("x", 100_000), want: "panic: xxx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error {
				panic(tt.value)
			})}, nil)
			env := b.enqueue("panic", slot.Config{Interval: time.Second, MaxAttempts: 2})
			if err := b.eng.Work(context.Background(), env); err != nil {
				t.Fatalf("Work: %v", err)
			}
			got := b.job("panic", "j1")
			if got.Attempt != 2 || got.Status.Final() {
				t.Errorf("job %s attempt %d, want a retry", got.Status, got.Attempt)
			}
			if !strings.HasPrefix(got.LastError, tt.want) || !strings.Contains(got.LastError, "TestWorkRecoversPanic") {
				t.Errorf("last error %.300q, want %q and the stack", got.LastError, tt.want)
			}
			if len(got.LastError) > 4100 {
				t.Errorf("last error is %d bytes, want it bounded", len(got.LastError))
			}
		})
	}
}

// Every target gets the queue's target timeout, Go handlers included, and
// one that ignores its context is not waited for past it.
func TestWorkTimesOutEveryTarget(t *testing.T) {
	tests := []struct {
		name    string
		handler func(ctx context.Context, j *api.Job) error
	}{
		{name: "handler that honours its context", handler: func(ctx context.Context, _ *api.Job) error {
			<-ctx.Done()
			return ctx.Err()
		}},
		{name: "handler that ignores its context", handler: func(context.Context, *api.Job) error {
			time.Sleep(time.Hour)
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mux := target.NewMux()
				mux.HandleFunc("k", tt.handler)
				b := newWorkBench(t, engine.Options{Runner: &dispatch.Dispatcher{Mux: mux}}, nil)
				env := b.enqueue("slow", slot.Config{Interval: time.Second, TargetTimeout: 3 * time.Second, MaxAttempts: 1})
				began := b.job("slow", "j1").SlotAt // the target starts at its slot
				// No deadline on the context: only the target timeout
				// can end the attempt.
				if err := b.eng.Work(context.Background(), env); err != nil {
					t.Fatalf("Work: %v", err)
				}
				if took := time.Since(began); took != 3*time.Second {
					t.Errorf("Work took %v from the slot, want the target timeout 3s", took)
				}
				got := b.job("slow", "j1")
				if got.Status != job.Failed || !strings.Contains(got.LastError, "deadline exceeded") {
					t.Errorf("job %s (%q), want failed on its deadline", got.Status, got.LastError)
				}
				time.Sleep(time.Hour) // let an abandoned handler end inside the bubble
			})
		})
	}
}

// A target_timeout that cannot fit in the worker's timeout (with the
// writes after it and the margin) is refused where the configuration is
// checked, naming the field.
func TestTargetTimeoutFitsWorkerTimeout(t *testing.T) {
	b := newWorkBench(t, engine.Options{WorkerTimeout: time.Minute}, nil)
	ctx := context.Background()
	_, err := b.eng.CreateQueue(ctx, "big", slot.Config{Interval: time.Second, TargetTimeout: 55 * time.Second})
	var in *input.Error
	if !errors.As(err, &in) || in.Field != "config.target_timeout" || !strings.Contains(in.Message, "worker") {
		t.Fatalf("create: %v, want an input error on config.target_timeout", err)
	}
	if _, err := b.eng.CreateQueue(ctx, "fits", slot.Config{Interval: time.Second, TargetTimeout: 50 * time.Second}); err != nil {
		t.Fatalf("create with 50s: %v", err)
	}
	_, err = b.eng.Configure(ctx, "fits", slot.Config{Interval: time.Second, TargetTimeout: 15 * time.Minute})
	if !errors.As(err, &in) || in.Field != "config.target_timeout" {
		t.Fatalf("configure: %v, want an input error on config.target_timeout", err)
	}
}

// A message whose record is behind it (its writer is slow, or died and
// the record will never come) waits for the record up to RecordGrace, but
// does not hold up the later messages of its queue in a worker's batch
// meanwhile: it lets them go on (OnGateDone) after a short wait.
func TestRecordWaitReleasesBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error { return nil })}, nil)
		env := b.enqueue("q", slot.Config{Interval: time.Second})
		env.Ticket += 4 // a re-ticket whose record write never landed
		env.SentAt = time.Now()
		begin := time.Now()
		released := time.Duration(-1)
		ctx := engine.OnGateDone(context.Background(), func() {
			if released < 0 {
				released = time.Since(begin)
			}
		})
		if err := b.eng.Work(ctx, env); err != nil {
			t.Fatalf("Work: %v", err)
		}
		if took := time.Since(begin); took < 10*time.Second {
			t.Fatalf("Work returned after %v; want it to wait for the record (RecordGrace)", took)
		}
		if released < 0 || released > time.Second {
			t.Fatalf("the queue's next message could go on after %v, want within a second", released)
		}
	})
}
