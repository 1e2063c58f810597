package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// stallState stalls the worker of chosen gates: it sleeps before the gate
// write lands (the worker was descheduled on its way to the gate, or the
// write was slow to get there) and after it (the answer was slow, or the
// worker was descheduled after it). It records the tickets it stalled.
type stallState struct {
	engine.State
	// stall says how long to sleep before and after the gate of r.
	stall func(r engine.GateRequest) (before, after time.Duration)

	// readAt, if set, stalls the first read of the queue at or after it
	// by readStall: the worker that woke then (before it knows the start
	// it will ask for) is descheduled.
	readAt    time.Time
	readStall time.Duration

	mu      sync.Mutex
	stalled map[int64]bool
}

func (s *stallState) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	s.mu.Lock()
	stall := !s.readAt.IsZero() && !time.Now().Before(s.readAt)
	if stall {
		s.readAt = time.Time{}
	}
	s.mu.Unlock()
	if stall {
		time.Sleep(s.readStall)
	}
	return s.State.GetQueue(ctx, name)
}

func (s *stallState) Gate(ctx context.Context, r engine.GateRequest) (st slot.State, err error) {
	s.around(ctx, r, func() { st, err = s.State.Gate(ctx, r) })
	return st, err
}

// Admit is the gate of a booked start: a read, stalled as the queue's
// first read at readAt is, and as the gate of its ticket is.
func (s *stallState) Admit(ctx context.Context, r engine.AdmitRequest) (q engine.Queue, err error) {
	s.around(ctx, engine.GateRequest{Queue: r.Queue, Ticket: r.Ticket, At: r.At, Gen: r.Gen}, func() {
		if _, err = s.GetQueue(ctx, r.Queue); err == nil {
			q, err = s.State.Admit(ctx, r)
		}
	})
	return q, err
}

// around runs the gate call for r between the stalls s.stall gives it,
// on the bubble's clock, and records the ticket it stalled.
func (s *stallState) around(ctx context.Context, r engine.GateRequest, call func()) {
	before, after := s.stall(r)
	if before+after > 0 {
		s.mu.Lock()
		s.stalled[r.Ticket] = true
		s.mu.Unlock()
	}
	_ = clock.Sleep(ctx, before)
	call()
	_ = clock.Sleep(ctx, after)
}

func (s *stallState) wasStalled(ticket int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled[ticket]
}

// One late worker makes one late job: a backlog at 10ms intervals where
// one worker stalls 30ms once (before its gate, or between its gate and
// its start), or where 1% of gate writes take 20–50ms. Every job whose
// gate was not stalled starts at its slot_at (the bubble's clock has no
// wake-up latency, so within skew means within skew of it), on the
// ticket its enqueue answered; the stalled jobs alone are late, and say
// so in their history. The spacing holds at the targets' starts in window
// form; every job runs once.
//
// With the gate of before (the start at the gate write, last_start moved
// to a late start) it fails: every job after the stall starts 28ms late.
func TestOneStallMakesOneLateJob(t *testing.T) {
	const jobs = 400
	tests := []struct {
		name  string
		iv    time.Duration
		stall func(rnd *rand.Rand, r engine.GateRequest) (before, after time.Duration)
		// stalls is how many gates stall (0: any number).
		stalls int
		// readStall stalls the worker of ticket 100 as it reads the
		// queue on waking, before it asks the gate for a start.
		readStall time.Duration
		// callStall stalls the worker of ticket 100 after it woke for
		// its start, on its way to the target's call.
		callStall time.Duration
		// keys spreads the jobs over this many keys of a queue whose
		// keys run many jobs at once (key_max_running 100): they wait
		// for their key's meter before the gate, and a late one is
		// passed by the same rule as a job without a key.
		keys int
	}{
		{name: "stall before the gate", iv: 10 * time.Millisecond, stalls: 1, stall: func(_ *rand.Rand, r engine.GateRequest) (time.Duration, time.Duration) {
			if r.Ticket == 100 {
				return 30 * time.Millisecond, 0
			}
			return 0, 0
		}},
		{name: "stall on waking, shorter than an interval", iv: 100 * time.Millisecond, stalls: 1, readStall: 30 * time.Millisecond},
		{name: "stall on waking, keys running many at once", iv: 10 * time.Millisecond, stalls: 1, keys: 5, readStall: 6 * time.Millisecond},
		{name: "stall between the gate and the start", iv: 10 * time.Millisecond, stalls: 1, stall: func(_ *rand.Rand, r engine.GateRequest) (time.Duration, time.Duration) {
			if r.Ticket == 100 {
				return 0, 30 * time.Millisecond
			}
			return 0, 0
		}},
		{name: "stall between waking and calling the target", iv: 10 * time.Millisecond, stalls: 1, callStall: 30 * time.Millisecond},
		{name: "1% of gate writes take 20-50ms", iv: 10 * time.Millisecond, stall: func(rnd *rand.Rand, _ engine.GateRequest) (time.Duration, time.Duration) {
			if rnd.Float64() >= 0.01 {
				return 0, 0
			}
			d := 20*time.Millisecond + time.Duration(rnd.Int64N(int64(30*time.Millisecond)))
			landed := time.Duration(rnd.Int64N(int64(d)))
			return landed, d - landed
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rmu sync.Mutex
				rnd := rand.New(rand.NewPCG(22, 7))
				st := &stallState{stalled: map[int64]bool{}, stall: func(r engine.GateRequest) (time.Duration, time.Duration) {
					if tt.stall == nil {
						return 0, 0
					}
					rmu.Lock()
					defer rmu.Unlock()
					return tt.stall(rnd, r)
				}}
				var tracer trace.TracerProvider
				if tt.callStall > 0 {
					tracer = &callStaller{ticket: 100, d: tt.callStall}
					st.stalled[100] = true
				}
				s := newSim(t, simOptions{Workers: 4, Tracer: tracer, Wrap: func(in engine.State) engine.State {
					st.State = in
					return st
				}})
				defer s.stop()
				iv := tt.iv
				cfg := slot.Config{Interval: iv}
				var keyed func(i int, sp *job.Spec)
				if tt.keys > 0 {
					cfg.KeyMaxRunning = 100
					keyed = func(i int, sp *job.Spec) { sp.Key = fmt.Sprintf("k%d", i%tt.keys) }
				}
				s.createQueue("st", cfg)
				res := s.enqueue("st", jobs, keyed)
				if tt.readStall > 0 {
					// Ticket 100's worker wakes a lead before its slot.
					st.mu.Lock()
					st.readAt, st.readStall = res.Jobs[99].SlotAt.Add(-slot.DefaultLead), tt.readStall
					st.stalled[100] = true
					st.mu.Unlock()
				}
				s.waitFinished("st", time.Minute)

				skew := min(slot.DefaultSkew, iv/4)
				starts := s.startsOf("st")
				checkSingleStart(t, starts)
				checkSpacing(t, starts, iv, skew)
				first := map[string]start{}
				for _, x := range starts {
					if _, ok := first[x.ID]; !ok {
						first[x.ID] = x
					}
				}
				late, stalled := 0, 0
				for _, a := range res.Jobs {
					x, ok := first[a.JobID]
					if !ok {
						t.Fatalf("job %s never started", a.JobID)
					}
					if st.wasStalled(a.Ticket) {
						stalled++
						if x.At.Sub(a.SlotAt) > skew {
							late++
							j, err := s.eng.Job(context.Background(), job.Ref{Queue: "st", ID: a.JobID})
							if err != nil {
								t.Fatal(err)
							}
							if !hasEvent(j, job.SlotMissed) {
								t.Errorf("job %s started %v late, and its history does not say it missed its slot: %+v", a.JobID, x.At.Sub(a.SlotAt), j.History)
							}
						}
						continue
					}
					if d := x.At.Sub(a.SlotAt); d > skew || d < -skew || x.Ticket != a.Ticket {
						t.Fatalf("job %s (ticket %d) started %v after its slot_at, on ticket %d; only stalled jobs may be late (%d of %d stalled so far)",
							a.JobID, a.Ticket, d, x.Ticket, stalled, jobs)
					}
				}
				if tt.stalls > 0 && stalled != tt.stalls {
					t.Fatalf("%d gates stalled, want %d", stalled, tt.stalls)
				}
				if late == 0 {
					t.Fatalf("no stalled job started late: the test stalled nothing that mattered")
				}
				t.Logf("%d jobs, %d stalled, %d of them late", jobs, stalled, late)
			})
		})
	}
}

// callStaller is a tracer that stalls the worker of one ticket's first
// attempt once, as the engine starts the span of its target's call: after
// the worker woke for its start, before it calls the target (a worker
// descheduled there). The attempt's span carries the ticket; the call's
// span is its child.
type callStaller struct {
	noop.TracerProvider
	ticket int64
	d      time.Duration
	once   sync.Once
}

type stallTicketKey struct{}

func (c *callStaller) Tracer(string, ...trace.TracerOption) trace.Tracer { return stallTracer{c: c} }

type stallTracer struct {
	noop.Tracer
	c *callStaller
}

func (s stallTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	for _, kv := range cfg.Attributes() {
		if kv.Key == "slotq.ticket" {
			ctx = context.WithValue(ctx, stallTicketKey{}, kv.Value.AsInt64())
		}
	}
	if strings.HasPrefix(name, "call ") && ctx.Value(stallTicketKey{}) == s.c.ticket {
		s.c.once.Do(func() { time.Sleep(s.c.d) })
	}
	return s.Tracer.Start(ctx, name, opts...)
}

func hasEvent(j job.Job, k job.EventKind) bool {
	for _, ev := range j.History {
		if ev.Kind == k {
			return true
		}
	}
	return false
}

// slowCreate makes CreateJobs take d: an enqueue still writing its
// batch's records after it sent their messages.
type slowCreate struct {
	engine.State
	d time.Duration
}

func (s slowCreate) CreateJobs(ctx context.Context, jobs []job.Job) ([]bool, error) {
	time.Sleep(s.d)
	return s.State.CreateJobs(ctx, jobs)
}

// runBatch enqueues n jobs in one call on a new queue at interval iv,
// waits until they are final and returns the answer and the starts, each
// job started once.
func runBatch(t *testing.T, s *sim, queue string, iv time.Duration, n int) (engine.EnqueueResult, []start) {
	t.Helper()
	s.createQueue(queue, slot.Config{Interval: iv})
	res := s.enqueue(queue, n, nil)
	s.waitFinished(queue, time.Minute)
	starts := s.startsOf(queue)
	checkSingleStart(t, starts)
	if len(starts) != len(res.Jobs) {
		t.Fatalf("%d starts, want %d", len(starts), len(res.Jobs))
	}
	return res, starts
}

// A record written a few milliseconds after its message is seen soon
// after: the first job of a batch on an idle queue is due a lead after
// the take, its message comes at once, and its worker looks for the
// record again at short waits, so it goes to the gate within the skew of
// its slot. Every job of the batch starts within the skew of its slot_at
// on its first ticket. With the worker's looks 1, 2, 4 ms apart, a record
// written 3 ms after its message was seen 7 ms after the take, and every
// start of the batch was 7 ms late.
func TestRecordJustAfterItsMessage(t *testing.T) {
	inSim(t, simOptions{Lead: slot.DefaultLead, Wrap: func(in engine.State) engine.State { return slowCreate{in, 3 * time.Millisecond} }}, func(t *testing.T, s *sim) {
		const iv = 10 * time.Millisecond
		res, starts := runBatch(t, s, "r", iv, 20)
		skew := min(slot.DefaultSkew, iv/4)
		for i, x := range starts {
			a := res.Jobs[i]
			if late := x.At.Sub(a.SlotAt); x.Ticket != a.Ticket || late > skew {
				t.Errorf("start %d: ticket %d %v after its slot_at, want ticket %d within %v", i, x.Ticket, late, a.Ticket, skew)
			}
		}
	})
}

// A job whose record comes after its message, later than its worker's
// time to go to the gate (its enqueue was still writing), is late by its
// writer, not by its worker. Alone in its line it starts late, on its
// ticket: that moves nobody. With starts booked behind it, it gives its
// slot up rather than move each of them by its writer's lag: here the
// records of a burst of 4 on an idle queue at 100ms intervals come 30ms
// after its messages. The first job takes a new ticket; the other three,
// whose records came before their slots, start at the slots their
// enqueue answered. (Excused, the first started 30ms late and every job
// behind it as late.)
func TestWriterLateStartsLate(t *testing.T) {
	inSim(t, simOptions{Wrap: func(in engine.State) engine.State { return slowCreate{in, 30 * time.Millisecond} }}, func(t *testing.T, s *sim) {
		const iv = 100 * time.Millisecond
		res, starts := runBatch(t, s, "w", iv, 4)
		checkSpacing(t, starts, iv, slot.DefaultSkew)
		told := map[string]api.Accepted{}
		for _, a := range res.Jobs {
			told[a.JobID] = a
		}
		for _, x := range starts {
			a := told[x.ID]
			if a.JobID == res.Jobs[0].JobID {
				if x.Ticket == a.Ticket {
					t.Errorf("the first job started on its ticket %v after its slot: its writer's lag moved the line", x.At.Sub(a.SlotAt))
				}
				continue
			}
			if late := x.At.Sub(a.SlotAt); x.Ticket != a.Ticket || late > slot.DefaultSkew {
				t.Errorf("job %s started on ticket %d %v after its slot_at, want ticket %d at it: the first job's writer moved it", x.ID, x.Ticket, late, a.Ticket)
			}
		}
		alone, lone := runBatch(t, s, "a", iv, 1)
		if late := lone[0].At.Sub(alone.Jobs[0].SlotAt); lone[0].Ticket != alone.Jobs[0].Ticket || late < 20*time.Millisecond {
			t.Errorf("a lone job late by its writer started on ticket %d %v after its slot; want its ticket %d, late", lone[0].Ticket, late, alone.Jobs[0].Ticket)
		}
	})
}

// TestSingleJobProducersKeepTheirSlots: four producers each adding one
// job at a time to an idle queue at 20ms intervals, a few milliseconds
// apart, and the first call's record written 15ms after its message (its
// enqueue descheduled between the two, as on a loaded host). Every other
// job starts at the slot its producer was told, within the skew: the
// first job's late writer moves none of them. (Excused whatever was
// booked behind it, the first job started late and the line moved with
// it: every later start came up to an interval after its told slot.)
func TestSingleJobProducersKeepTheirSlots(t *testing.T) {
	var first atomic.Bool
	wrap := func(in engine.State) engine.State {
		return onceSlowCreate{State: in, done: &first, d: 15 * time.Millisecond}
	}
	inSim(t, simOptions{Lead: slot.DefaultLead, Wrap: wrap}, func(t *testing.T, s *sim) {
		const iv = 20 * time.Millisecond
		s.createQueue("p", slot.Config{Interval: iv})
		var mu sync.Mutex
		told := map[string]time.Time{}
		produce(context.Background(), 4, 10, 3, 5, func(p, c int, rnd *rand.Rand) time.Duration {
			res := s.enqueue("p", 1, nil)
			mu.Lock()
			told[res.Jobs[0].JobID] = res.Jobs[0].SlotAt
			mu.Unlock()
			return time.Duration(1+rnd.IntN(4)) * time.Millisecond
		})
		s.waitFinished("p", time.Minute)
		starts := s.startsOf("p")
		checkSingleStart(t, starts)
		checkSpacing(t, starts, iv, slot.DefaultSkew)
		moved, missed := 0, 0
		for _, x := range starts {
			if x.Attempt > 1 || !x.SlotAt.Equal(told[x.ID]) {
				missed++ // re-ticketed: its told slot was given up
				continue
			}
			if late := x.At.Sub(told[x.ID]); late > slot.DefaultSkew {
				moved++
				t.Errorf("job %s (ticket %d) started %v after the slot its producer was told", x.ID, x.Ticket, late)
			}
		}
		if len(starts) != 40 {
			t.Fatalf("%d starts, want 40", len(starts))
		}
		if missed > 1 {
			t.Errorf("%d jobs gave their told slot up, want at most the first", missed)
		}
	})
}

// onceSlowCreate makes the first CreateJobs take d (the others do not
// wait for it: a sync.Once would hold them on a mutex, which the bubble's
// clock does not count as blocked).
type onceSlowCreate struct {
	engine.State
	done *atomic.Bool
	d    time.Duration
}

func (s onceSlowCreate) CreateJobs(ctx context.Context, jobs []job.Job) ([]bool, error) {
	if s.done.CompareAndSwap(false, true) {
		_ = clock.Sleep(ctx, s.d)
	}
	return s.State.CreateJobs(ctx, jobs)
}

// A job whose record comes more than a tick after its slot (its store
// answered in seconds) is not excused: its late start would move every
// start booked behind it by its writer's whole lag. Here the records of
// a batch on an idle queue come 250ms after its messages, at 100ms
// intervals: the first two jobs' records come more than a tick late and
// they start after the third, which is excused (64ms) and moves the line
// that much. The last job, whose message comes after the records, starts
// 164ms after its slot_at, less than the writer's 250ms. (Excused
// whatever the lag, the first job started 250ms late and every job behind
// it as late.)
func TestWriterLateByMoreThanATick(t *testing.T) {
	const slow = 250 * time.Millisecond
	inSim(t, simOptions{Lead: slot.DefaultLead, Wrap: func(in engine.State) engine.State { return slowCreate{in, slow} }}, func(t *testing.T, s *sim) {
		const iv = 100 * time.Millisecond
		res, starts := runBatch(t, s, "w", iv, 4)
		checkSpacing(t, starts, iv, slot.DefaultSkew)
		last := res.Jobs[3]
		for _, x := range starts {
			if x.ID != last.JobID {
				continue
			}
			if late := x.At.Sub(last.SlotAt); x.Ticket != last.Ticket || late >= slow {
				t.Errorf("the last job started on ticket %d %v after its slot_at, want ticket %d less than the writer's %v late: the late writer moved the line by its whole lag", x.Ticket, late, last.Ticket, slow)
			}
		}
	})
}

// A job misses its slot at most twice per attempt before the gate: the
// next time its worker comes late, it starts late (a transport that
// delivered every message late would otherwise keep it from starting).
// Every delivery here comes up to 30ms late on a line at 100ms
// intervals: a job misses, goes to the end of the line, may miss there
// once more, and then starts, late.
func TestMissedTwiceThenStartsLate(t *testing.T) {
	inSim(t, simOptions{Lead: slot.DefaultLead, Transport: memstore.TransportOptions{Jitter: 30 * time.Millisecond}}, func(t *testing.T, s *sim) {
		s.createQueue("m", slot.Config{Interval: 100 * time.Millisecond})
		s.enqueue("m", 5, nil)
		s.waitFinished("m", time.Hour)
		starts := s.startsOf("m")
		checkSingleStart(t, starts)
		checkSpacing(t, starts, 100*time.Millisecond, slot.DefaultSkew)
		most := 0
		for _, j := range s.jobs("m", job.Succeeded) {
			n := 0
			for _, ev := range j.History {
				if ev.Kind == job.SlotMissed {
					n++
				}
			}
			most = max(most, n)
			if n > 2 {
				t.Errorf("job %s missed %d slots before the gate in one attempt: %+v", j.ID, n, j.History)
			}
		}
		if most < 2 {
			t.Fatalf("no job missed twice (most: %d): the late deliveries tested nothing", most)
		}
		if len(starts) != 5 {
			t.Fatalf("%d starts, want 5", len(starts))
		}
	})
}

// An idle queue never re-tickets a lone job: three jobs half a second
// apart on a queue at 200 a second, each alone in its line, and the
// worker of the second wakes 5 ms late for its target's call (past its
// deadline). It gives the start up and takes the next opening on its own
// ticket: a lone job's late start moves nobody, and its place is the
// line's end already.
func TestIdleQueueNeverReticketsALoneJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tracer := &callStaller{ticket: 2, d: 5 * time.Millisecond}
		s := newSim(t, simOptions{Workers: 2, Tracer: tracer})
		defer s.stop()
		s.createQueue("ff", slot.Config{Rate: api.Rate{N: 200, Per: time.Second}})
		for range 3 {
			s.enqueue("ff", 1, nil)
			time.Sleep(500 * time.Millisecond)
		}
		s.waitFinished("ff", time.Minute)
		stalled := false
		for _, j := range s.jobs("ff", job.Succeeded) {
			if j.Retickets != 0 || hasEvent(j, job.Reticketed) {
				t.Errorf("lone job %s was re-ticketed: %+v", j.ID, j.History)
			}
			stalled = stalled || hasEvent(j, job.SlotMissed)
		}
		if n := len(s.jobs("ff", job.Succeeded)); n != 3 {
			t.Fatalf("%d of 3 jobs succeeded", n)
		}
		if !stalled {
			t.Fatal("no worker came past its deadline: the stall tested nothing")
		}
	})
}
