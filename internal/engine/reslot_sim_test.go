package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// Reconfigure passes through the chaos wrapper: a configure books the
// line again, so the slot clock it stores may lie before the one seen
// (docs/guarantees.md §7); the rest only moves forward, as always.
func (c *chaosState) Reconfigure(ctx context.Context, r engine.ReconfigureRequest) (slot.State, error) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	q, err := c.State.GetQueue(ctx, r.Queue)
	if err != nil {
		return slot.State{}, err
	}
	st, err := c.State.Reconfigure(ctx, r)
	if err == nil {
		c.mu.Lock()
		reconfiguredAt.Store(c, change{at: time.Now(), passes: len(c.passes)})
		name := fmt.Sprintf("%s (generation %d)", r.Queue, q.Gen)
		prev := c.seen[name]
		prev.Clock = st.Clock
		c.seen[name] = prev
		c.mu.Unlock()
		c.observe(r.Queue, q.Gen, st)
	}
	return st, err
}

// reconfiguredAt holds, per chaosState, its last Reconfigure that
// landed (a change).
var reconfiguredAt sync.Map

// change is a Reconfigure that landed: when, and how many gate passes
// came before it.
type change struct {
	at     time.Time
	passes int
}

// changeOf is s's last Reconfigure that landed.
func changeOf(t *testing.T, s *sim) change {
	t.Helper()
	c, ok := reconfiguredAt.Load(s.chaos)
	if !ok {
		t.Fatal("no Reconfigure landed")
	}
	return c.(change)
}

// gatedBefore reports whether st's start passed the gate before the
// change c: its ticket's last pass before the start came before it.
func gatedBefore(t *testing.T, s *sim, st start, c change) bool {
	t.Helper()
	s.chaos.mu.Lock()
	defer s.chaos.mu.Unlock()
	last := -1
	for i, p := range s.chaos.passes {
		if p.Queue == st.Queue && p.Gen == st.Gen && p.Ticket == st.Ticket && !p.At.After(st.At) {
			last = i
		}
	}
	if last < 0 {
		t.Fatalf("ticket %d started at %v without passing the gate", st.Ticket, st.At)
	}
	return last < c.passes
}

// reslotCase is a limit change mid-backlog, or, with idle, right after
// a run of starts, with the next jobs enqueued at once after it (so the
// first of them starts where the gate opens).
type reslotCase struct {
	name      string
	old, next slot.Config
	idle      bool
}

var reslotCases = []reslotCase{
	{"interval faster", slot.Config{Interval: time.Second}, slot.Config{Interval: 300 * time.Millisecond}, false},
	{"rate slower", slot.Config{Rate: api.Rate{N: 4, Per: time.Second}, Burst: 2}, slot.Config{Interval: 1500 * time.Millisecond}, false},
	{"window to rate", slot.Config{Window: api.Rate{N: 4, Per: 2 * time.Second}}, slot.Config{Rate: api.Rate{N: 3, Per: time.Second}, Burst: 3}, false},
	{"rate to two limits", slot.Config{Rate: api.Rate{N: 2, Per: time.Second}}, slot.Config{Limits: []api.Limit{
		{Rate: api.Rate{N: 5, Per: time.Second}, Burst: 1}, {Window: api.Rate{N: 8, Per: 4 * time.Second}}}}, false},
	{"idle, faster", slot.Config{Interval: 2 * time.Second}, slot.Config{Rate: api.Rate{N: 5, Per: time.Second}, Burst: 2}, true},
	{"idle, slower", slot.Config{Rate: api.Rate{N: 4, Per: time.Second}, Burst: 3}, slot.Config{Interval: 2 * time.Second}, true},
	{"idle, to a window", slot.Config{Interval: 300 * time.Millisecond}, slot.Config{Window: api.Rate{N: 3, Per: 3 * time.Second}}, true},
}

// reach is the simulated transport's longest delay: jobs booked further
// out than it are parked (and listed), the ones within it queued.
const reach = 10 * time.Second

// §5.16 (a) A limit changed while jobs wait, on the simulation of
// TestGuaranteeSpacingEveryForm (many workers; jitter, duplicates and
// crashes between gate, claim, run and record): a backlog starts under
// one limit, configure changes it midway, and
//
//   - configure says how many booked jobs moved, and every waiting job's
//     record shows its new slot_at: the waiting line's slots keep the new
//     limit and follow it tightly (the next slot where the new limit
//     opens, not the old one);
//   - an enqueue after the change is answered by the new arithmetic;
//   - the starts before the change and the first after it keep the old
//     limit; the starts after it, with the starts before it that the new
//     limit's period holds, keep the new one (slot.Breaches, the skew the
//     one allowance);
//   - no attempt begins twice, no line ticket starts after a higher one,
//     every job succeeds, and without faults no job misses its slot
//     after the change (a job the change moved earlier while its message
//     was on its way is not late for it).
func TestGuaranteeReslotMidBacklog(t *testing.T) {
	runs := faultRuns(12, 16, 3*time.Second, 0.05, 9, func(o *simOptions) {
		o.ResumeEvery, o.Transport.MaxDelay = 2*time.Second, reach
	})
	for _, c := range reslotCases {
		for _, r := range runs {
			t.Run(c.name+"/"+r.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { runReslot(t, c, r.opts, r.clean()) })
			})
		}
	}
}

func runReslot(t *testing.T, c reslotCase, opts simOptions, clean bool) {
	s := newSim(t, opts)
	defer s.stop()
	old, next := withSkew(c.old), withSkew(c.next)
	s.createQueue("reslot", old)
	if c.idle {
		s.enqueue("reslot", 10, nil)
		s.waitFinished("reslot", time.Hour)
	} else {
		s.enqueue("reslot", 60, nil)
	}
	s.waitStarts("reslot", 10, time.Hour)
	changed, pre := time.Now(), waitingLine(s)
	q, rep, err := s.eng.Reconfigure(context.Background(), "reslot", next)
	if err != nil {
		t.Fatalf("configure: %v", err)
	}
	moment := changeOf(t, s)
	if q.Config.LimitList().Signature() != next.LimitList().Signature() {
		t.Fatalf("configured limits %s, want %s", q.Config.LimitList(), next.LimitList())
	}
	waiting := checkWaitingSlots(t, s, pre, next, rep, clean)
	if c.idle {
		s.enqueue("reslot", 20, nil)
	}
	added := s.enqueue("reslot", 1, nil).Jobs[0]
	if len(waiting) > 0 && clean {
		// (With faults, re-tickets add queued jobs to the line's end, which
		// take places after the waiting ones.)
		slots := append(slices.Clone(waiting), added.SlotAt)
		// Within a tick of the line's last (a window's period, which
		// may hold the next start back that long), give or take a
		// second: the old arithmetic of the slower changes would answer
		// later.
		room := next.Tick()
		for _, l := range next.LimitList() {
			if !l.Window.IsZero() {
				room = max(room, l.Window.Per)
			}
		}
		if b := slot.Breaches(next.LimitList(), next.Skew, slots); len(b) > 0 || added.SlotAt.After(waiting[len(waiting)-1].Add(room+time.Second)) {
			t.Fatalf("an enqueue after the change got slot +%v after the waiting line's last +%v: not the new arithmetic (%v)",
				added.SlotAt.Sub(changed), waiting[len(waiting)-1].Sub(changed), b)
		}
	}
	s.waitFinished("reslot", 6*time.Hour)
	starts := s.startsOf("reslot")
	checkAcross(t, s, starts, moment, old, next)
	checkSingleStart(t, starts)
	if opts.CrashRate == 0 {
		checkLineOrder(t, starts) // a crashed attempt runs again under its ticket
	}
	s.checkNoneFailed("reslot")
	if clean {
		for _, j := range s.jobs("reslot", job.Succeeded) {
			for _, ev := range j.History {
				if ev.Kind == job.SlotMissed && !ev.At.Before(changed) {
					t.Fatalf("job %s missed its slot without a fault (changed at %v): %+v", j.ID, changed, j.History)
				}
			}
		}
	}
}

func withSkew(c slot.Config) slot.Config {
	c.Skew, c.MaxAttempts = 100*time.Millisecond, 10
	return c
}

// waitingLine is the queue's line jobs that wait (queued or parked), by
// ticket.
func waitingLine(s *sim) []job.Job {
	var line []job.Job
	for _, j := range s.store.Jobs("reslot") {
		if j.Status.Waiting() && !j.Scheduled && !j.Detached {
			line = append(line, j)
		}
	}
	return line
}

// checkWaitingSlots checks the records of the jobs that waited in line
// (pre, read right before a configure to cfg that answered rep) right
// after it. The ones that were parked (booked beyond the transport's
// reach) and still wait at their ticket show their new slots: in ticket
// order they keep cfg's limits (within the skew: a move smaller than it
// is not written) and follow them tightly (each no later
// than where cfg's limits open after the one before it, give or take a
// tick), none before a queued job ahead of it, and rep counted no more
// than waited. The queued ones (their messages on their way) keep theirs.
// It returns the new slots.
func checkWaitingSlots(t *testing.T, s *sim, pre []job.Job, cfg slot.Config, rep engine.Reslot, tight bool) []time.Time {
	t.Helper()
	now := map[string]job.Job{}
	for _, j := range waitingLine(s) {
		now[j.ID] = j
	}
	var slots []time.Time
	var lastQueued time.Time
	for _, was := range pre {
		j, ok := now[was.ID]
		if !ok || j.Ticket != was.Ticket {
			continue // started, or took a new ticket, meanwhile
		}
		if was.Status == job.Queued || j.Status == job.Queued && !releasedBy(j, "configure") {
			// Queued before (or released by a resume pass before the
			// configure took the queue's lease): its message is on its
			// way for its slot.
			if !j.SlotAt.Equal(was.SlotAt) {
				t.Fatalf("queued job %s moved from %v to %v", j.ID, was.SlotAt, j.SlotAt)
			}
			lastQueued = laterOf(lastQueued, j.SlotAt)
			continue
		}
		if j.SlotAt.Before(lastQueued) {
			t.Fatalf("parked job %s (ticket %d) shows slot_at %v, before a queued job ahead of it (%v)", j.ID, j.Ticket, j.SlotAt, lastQueued)
		}
		slots = append(slots, j.SlotAt)
	}
	if rep.Moved > len(pre) {
		t.Fatalf("configure moved %d booked jobs (max %dms); %d waited in line", rep.Moved, rep.MaxShiftMs, len(pre))
	}
	if b := slot.Breaches(cfg.LimitList(), cfg.Skew, slots); len(b) > 0 {
		t.Fatalf("the waiting jobs' slot_at break the new limit: %+v", b[0])
	}
	// A window's bookings count the starts before the change, which st
	// does not hold: only the other forms are judged for tightness.
	tight = tight && !slices.ContainsFunc(cfg.LimitList(), func(l api.Limit) bool { return !l.Window.IsZero() })
	var st slot.State
	for i := range slots {
		if tight && i > 0 && slots[i].After(slot.NextSlot(st, cfg.LimitList(), 0, slots[i-1]).Add(cfg.Tick())) {
			t.Fatalf("parked job %d shows slot_at %v after the one before it: not the new limit's arithmetic", i, slots[i].Sub(slots[i-1]))
		}
		st, _, _ = slot.Take(st, 1, 1, cfg.LimitList(), 0, slots[i])
	}
	t.Logf("configure moved %d of %d waiting jobs (%d parked), at most %dms", rep.Moved, len(pre), len(slots), rep.MaxShiftMs)
	return slots
}

// releasedBy reports whether j's history has a release for reason.
func releasedBy(j job.Job, reason string) bool {
	return slices.ContainsFunc(j.History, func(ev job.Event) bool { return ev.Kind == job.Released && ev.Reason == reason })
}

// checkAcross judges the starts of a queue whose limits changed from old
// to next at changed: the starts before and the first after keep old;
// the starts after, with the starts before that each limit of next holds
// in its period, keep next.
func checkAcross(t *testing.T, s *sim, starts []start, changed change, old, next slot.Config) {
	t.Helper()
	var before, after []time.Time
	for _, st := range starts {
		// A start is the old limit's if the gate passed it before the
		// change: the gate reserves a start up to a lead ahead.
		if gatedBefore(t, s, st, changed) {
			before = append(before, st.At)
		} else {
			after = append(after, st.At)
		}
	}
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("%d starts before the change, %d after", len(before), len(after))
	}
	if b := slot.Breaches(old.LimitList(), old.Skew, append(slices.Clone(before), after[0])); len(b) > 0 {
		t.Fatalf("the old limit breaks across the change: %+v", b[0])
	}
	last := before[len(before)-1]
	for _, l := range next.LimitList() {
		per := slot.Config{Limits: []api.Limit{l}}.Tick()
		switch {
		case !l.Window.IsZero():
			per = l.Window.Per
		case !l.Rate.IsZero():
			per = l.Rate.Per
		}
		var held []time.Time
		for _, s := range before {
			if s.After(last.Add(-per)) {
				held = append(held, s)
			}
		}
		for _, b := range slot.Breaches(slot.Limits{l}, next.Skew, append(held, after...)) {
			if b.J >= len(held) {
				t.Fatalf("the new limit %s breaks across the change at %v: %+v (%d held before, %d after)\nheld %v\nafter %v", l, changed.at, b, len(held), len(after), held, after[:min(len(after), 8)])
			}
		}
	}
}

// checkLineOrder fails if a line job started before its slot
// (checkSlotOrder).
func checkLineOrder(t *testing.T, starts []start) {
	t.Helper()
	checkSlotOrder(t, starts, nil)
}

// A configure that dies midway (after its atomic step, having moved some
// of the waiting jobs) leaves nothing lost and no limit broken; configure
// run again finishes it: every waiting job's record shows the new slot.
// Two configures at once take their turns: each builds on the settings
// the one before it wrote, the later one's limit holds, and the waiting
// jobs' slots follow it.
func TestReslotCrashAndRace(t *testing.T) {
	t.Run("crash", func(t *testing.T) {
		inDyingReslot(t, func(t *testing.T, s *sim, pre []job.Job, moment change) {
			old, next := withSkew(reslotCases[0].old), withSkew(reslotCases[0].next)
			if q, _ := s.eng.Queue(context.Background(), "reslot"); q.Config.LimitList().Signature() != next.LimitList().Signature() {
				t.Fatalf("after the crash the queue is under %s, want %s (the atomic step came before)", q.Config.LimitList(), next.LimitList())
			}
			_, rep, err := s.eng.Reconfigure(context.Background(), "reslot", next)
			if err != nil {
				t.Fatalf("configure again: %v", err)
			}
			checkWaitingSlots(t, s, pre, next, rep, true)
			checkDyingReslotEnd(t, s, moment, old, next)
		})
	})
	t.Run("race", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// A lease taken slowly: each configure reads the queue before
			// the other has written its change.
			s := newSim(t, simOptions{Workers: 8, ResumeEvery: 2 * time.Second, Transport: memstore.TransportOptions{MaxDelay: reach},
				Wrap: func(st engine.State) engine.State { return slowLease{st} }})
			defer s.stop()
			s.createQueue("reslot", withSkew(slot.Config{Interval: time.Second}))
			s.enqueue("reslot", 60, nil)
			s.waitStarts("reslot", 5, time.Hour)
			pre := waitingLine(s)
			var wg sync.WaitGroup
			for i, iv := range []time.Duration{400 * time.Millisecond, 3 * time.Second} {
				wg.Go(func() {
					u := slot.ConfigUpdate{Interval: &iv}
					if i == 0 {
						attempts := 7
						u.MaxAttempts = &attempts
					} else {
						backoff := 3 * time.Second
						u.Backoff = &backoff
					}
					if _, _, err := s.eng.Change(context.Background(), "reslot", u); err != nil {
						t.Errorf("configure %v: %v", iv, err)
					}
				})
			}
			wg.Wait()
			q, err := s.eng.Queue(context.Background(), "reslot")
			if err != nil {
				t.Fatal(err)
			}
			if q.Config.MaxAttempts != 7 || q.Config.Backoff != 3*time.Second {
				t.Fatalf("max_attempts %d, backoff %v after two changes at once, one to 7, the other to 3s: a change was lost", q.Config.MaxAttempts, q.Config.Backoff)
			}
			// The jobs still parked show the later configure's slots (the
			// ones the earlier sent on their way keep theirs).
			var parked []job.Job
			for _, j := range pre {
				if now := s.jobs("reslot", job.Parked); slices.ContainsFunc(now, func(p job.Job) bool { return p.ID == j.ID && p.Ticket == j.Ticket }) {
					parked = append(parked, j)
				}
			}
			if len(parked) == 0 {
				t.Fatal("no job waits parked after the configures")
			}
			checkWaitingSlots(t, s, parked, q.Config, engine.Reslot{}, false)
			s.waitFinished("reslot", 6*time.Hour)
			checkSingleStart(t, s.startsOf("reslot"))
		})
	})
}

// A configure that dies midway is finished by the resume function's next
// pass over the queue, not only by another configure: once it ran, the
// waiting jobs' records show the new limits' slots (a configure run again
// moves none of them by a tick or more), and every job runs, keeping the
// limits.
func TestReslotCrashFinishedByResume(t *testing.T) {
	inDyingReslot(t, func(t *testing.T, s *sim, _ []job.Job, moment change) {
		old, next := withSkew(reslotCases[0].old), withSkew(reslotCases[0].next)
		time.Sleep(3 * time.Second) // a resume run
		_, rep, err := s.eng.Reconfigure(context.Background(), "reslot", next)
		if err != nil {
			t.Fatalf("configure again: %v", err)
		}
		// Booked again later, the line may shift by less than a tick.
		if shift := time.Duration(rep.MaxShiftMs) * time.Millisecond; shift >= next.Tick() {
			t.Fatalf("a configure after the resume run moved %d waiting jobs, up to %v: the run left the crashed configure unfinished", rep.Moved, shift)
		}
		checkDyingReslotEnd(t, s, moment, old, next)
	})
}

// inDyingReslot runs body in a simulation whose configure from
// reslotCases[0]'s old limit to its next died after its atomic step,
// having moved 5 of the waiting jobs: 60 jobs were enqueued, and 10 had
// started. pre is the waiting line right before the configure, moment
// the change it made.
func inDyingReslot(t *testing.T, body func(t *testing.T, s *sim, pre []job.Job, moment change)) {
	var dying atomic.Int32
	o := simOptions{Workers: 8, ResumeEvery: 2 * time.Second, Transport: memstore.TransportOptions{MaxDelay: reach},
		Wrap: func(st engine.State) engine.State { return &dieMoving{State: st, left: &dying} }}
	inSim(t, o, func(t *testing.T, s *sim) {
		old, next := withSkew(reslotCases[0].old), withSkew(reslotCases[0].next)
		s.createQueue("reslot", old)
		s.enqueue("reslot", 60, nil)
		s.waitStarts("reslot", 10, time.Hour)
		pre := waitingLine(s)
		dying.Store(5) // the configure dies after moving 5 jobs
		if _, _, err := s.eng.Reconfigure(context.Background(), "reslot", next); !errors.Is(err, errCrash) {
			t.Fatalf("configure: %v, want the crash", err)
		}
		body(t, s, pre, changeOf(t, s))
	})
}

// checkDyingReslotEnd waits until the 60 jobs of inDyingReslot are
// final, and fails unless the limits held across the change moment (old,
// then next), no attempt began twice and every job succeeded.
func checkDyingReslotEnd(t *testing.T, s *sim, moment change, old, next slot.Config) {
	t.Helper()
	s.waitFinished("reslot", 6*time.Hour)
	starts := s.startsOf("reslot")
	checkAcross(t, s, starts, moment, old, next)
	checkSingleStart(t, starts)
	if n := len(s.jobs("reslot", job.Succeeded)); n != 60 {
		t.Fatalf("%d of 60 jobs succeeded", n)
	}
}

// dieMoving fails the configure's job writes (a job write that changes
// the slot of a waiting job and nothing of its version) once left of them
// have landed.
type dieMoving struct {
	engine.State
	left *atomic.Int32
}

func (d *dieMoving) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if j.Version() == from && d.left.Load() > 0 {
		if d.left.Add(-1) == 0 {
			return errCrash
		}
	}
	return d.State.UpdateJob(ctx, j, from)
}

// §5.16 (a) for a key's own limit: set_key_limits gives a key a slower
// limit of its own while 30 of its jobs wait. The key's starts before the
// change and the first after it keep the queue's key limit; the starts
// after it, with those before that the new limit's period holds, keep the
// new one; the queue keeps its own limit, and every job succeeds.
func TestKeyLimitChangedMidBacklog(t *testing.T) {
	inSim(t, simOptions{Workers: 8}, func(t *testing.T, s *sim) {
		cfg := slot.Config{
			Rate: api.Rate{N: 50, Per: time.Second}, Skew: 5 * time.Millisecond,
			KeyLimits: []api.Limit{{Rate: api.Rate{N: 10, Per: time.Second}, Burst: 2}},
		}
		s.createQueue("own", cfg)
		ctx := context.Background()
		req := job.EnqueueRequest{Queue: "own"}
		for range 30 {
			req.Jobs = append(req.Jobs, job.Spec{Kind: "lane", Key: "k", Payload: json.RawMessage(`{"ms":1}`)})
		}
		if _, err := s.eng.Enqueue(ctx, req); err != nil {
			t.Fatal(err)
		}
		for len(s.runsOf("own")) < 8 {
			time.Sleep(time.Millisecond)
		}
		changed := time.Now()
		slow := slot.Limits{{Interval: 400 * time.Millisecond}}
		if _, err := s.eng.SetKeyLimits(ctx, "own", []engine.KeyLimit{{Key: "k", Limits: slow}}); err != nil {
			t.Fatal(err)
		}
		s.waitFinished("own", time.Hour)
		var before, after, all []time.Time
		for _, r := range s.runsOf("own") {
			all = append(all, r.Begin)
			if r.Begin.Before(changed) {
				before = append(before, r.Begin)
			} else {
				after = append(after, r.Begin)
			}
		}
		if len(before) < 8 || len(after) == 0 {
			t.Fatalf("%d starts before the change, %d after", len(before), len(after))
		}
		if b := slot.Breaches(slot.Limits(cfg.KeyLimits), cfg.Skew, append(slices.Clone(before), after[0])); len(b) > 0 {
			t.Fatalf("the key's old limit breaks across the change: %+v", b[0])
		}
		var held []time.Time
		for _, at := range before {
			if at.After(before[len(before)-1].Add(-slow[0].Interval)) {
				held = append(held, at)
			}
		}
		for _, b := range slot.Breaches(slow, cfg.Skew, append(held, after...)) {
			if b.J >= len(held) {
				t.Fatalf("the key's new limit breaks across the change: %+v (%d held before)", b, len(held))
			}
		}
		if b := slot.Breaches(cfg.LimitList(), cfg.Skew, all); len(b) > 0 {
			t.Fatalf("the queue's limit broke: %+v", b[0])
		}
		if failed := s.jobs("own", job.Failed); len(failed) > 0 {
			t.Fatalf("%d jobs failed", len(failed))
		}
	})
}

// slowLease takes a queue's resume lease a second late.
type slowLease struct{ engine.State }

func (s slowLease) Lease(ctx context.Context, queue, holder string, until, now time.Time) (engine.Cursor, error) {
	time.Sleep(time.Second)
	return s.State.Lease(ctx, queue, holder, until, now)
}

// A configure of a queue whose waiting jobs are all on their way (none
// parked) books nothing beyond them: an enqueue after it is answered
// right behind them, not at the transport's reach.
func TestReslotNothingParked(t *testing.T) {
	inSim(t, simOptions{Workers: 4}, func(t *testing.T, s *sim) {
		s.createQueue("reslot", withSkew(slot.Config{Interval: time.Second}))
		s.enqueue("reslot", 5, nil)
		if _, rep, err := s.eng.Reconfigure(context.Background(), "reslot", withSkew(slot.Config{Interval: 500 * time.Millisecond})); err != nil || rep.Moved != 0 {
			t.Fatalf("configure: %+v, %v; want nothing moved", rep, err)
		}
		if at := s.enqueue("reslot", 1, nil).Jobs[0].SlotAt; at.After(time.Now().Add(10 * time.Second)) {
			t.Fatalf("an enqueue after the change got slot +%v: booked beyond the waiting jobs", at.Sub(time.Now()))
		}
		s.waitFinished("reslot", time.Hour)
	})
}

// configure that changes a queue's key_limits carries each key's meter
// over to them, as set_key_limits does for one key: a limit kept through
// the change (here the window of 3 a minute, with an interval added
// before it) still counts the key's starts before the change, and so
// does the new one. Three starts, a configure, three more jobs: the six
// keep "3 a minute" between them.
func TestConfigureKeyLimitsSeedsMeters(t *testing.T) {
	inSim(t, simOptions{Workers: 4}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		window := api.Limit{Window: api.Rate{N: 3, Per: time.Minute}}
		cfg := slot.Config{Interval: 10 * time.Millisecond, Skew: 5 * time.Millisecond,
			KeyLimits: []api.Limit{window}, KeyMaxRunning: slot.NoKeyCap}
		s.createQueue("keyed", cfg)
		spec := func(i int, sp *job.Spec) { sp.Key, sp.ID = "k", fmt.Sprintf("j%d", i) }
		s.enqueue("keyed", 3, spec)
		s.waitStarts("keyed", 3, time.Hour)
		both := []api.Limit{{Interval: time.Second}, window}
		if _, err := s.eng.ChangeConfig(ctx, "keyed", slot.ConfigUpdate{KeyLimits: &both}); err != nil {
			t.Fatal(err)
		}
		s.enqueue("keyed", 3, func(i int, sp *job.Spec) { spec(i+3, sp) })
		s.waitFinished("keyed", time.Hour)
		var at []time.Time
		for _, st := range s.startsOf("keyed") {
			at = append(at, st.At)
		}
		if len(at) != 6 {
			t.Fatalf("%d starts, want 6", len(at))
		}
		if b := slot.Breaches(slot.Limits{window}, cfg.Skew, at); len(b) > 0 {
			t.Fatalf("the key's window %v breaks across the configure: %+v; starts %v", window, b[0], at)
		}
		if b := slot.Breaches(slot.Limits(both), cfg.Skew, at[2:]); len(b) > 0 {
			t.Fatalf("the key's new limits break after the configure: %+v", b[0])
		}
	})
}

// A queued job's record shows when it will really start after a
// configure, though configure writes none of the queued jobs: a queue
// with an interval of 1 s and 12 jobs queued, configured to 2 s; right
// after, the last job's record shows the start the new interval gives
// it, and it starts then.
func TestQueuedSlotAfterConfigure(t *testing.T) {
	inSim(t, simOptions{Workers: 4}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("shown", slot.Config{Interval: time.Second, Skew: 5 * time.Millisecond})
		s.enqueue("shown", 12, func(i int, sp *job.Spec) { sp.ID = fmt.Sprintf("j%d", i) })
		iv := 2 * time.Second
		if _, err := s.eng.ChangeConfig(ctx, "shown", slot.ConfigUpdate{Interval: &iv}); err != nil {
			t.Fatal(err)
		}
		last, err := s.eng.Job(ctx, job.Ref{Queue: "shown", ID: "j11"})
		if err != nil {
			t.Fatal(err)
		}
		if last.Status != job.Queued {
			t.Fatalf("j11 is %s, want queued (its message on its way)", last.Status)
		}
		s.waitFinished("shown", time.Hour)
		var began time.Time
		for _, st := range s.startsOf("shown") {
			if st.ID == "j11" {
				began = st.At
			}
		}
		if d := began.Sub(last.SlotAt).Abs(); d > 100*time.Millisecond {
			t.Fatalf("right after the configure j11's record showed slot_at %v; it started at %v (%v apart)", last.SlotAt, began, d)
		}
	})
}

// A configure with more parked jobs to move than its budget answers at
// once with what it moved and what remains, and the resume function moves
// the rest from what the configure recorded: right after the configure
// every waiting job's record shows the slot it then starts at, the
// resume runs bring every parked record to it, and every job runs once.
func TestConfigureWithinBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget, total = 7, 60
		s := newSim(t, simOptions{Workers: 4, MoveBudget: budget, ResumeEvery: 5 * time.Second, Transport: memstore.TransportOptions{MaxDelay: reach}})
		defer s.stop()
		ctx := context.Background()
		s.createQueue("budget", slot.Config{Interval: time.Second, Skew: 5 * time.Millisecond})
		s.enqueue("budget", total, func(i int, sp *job.Spec) { sp.ID = fmt.Sprintf("j%02d", i) })
		parked := len(s.jobs("budget", job.Parked))
		iv := 2 * time.Second
		_, rep, err := s.eng.Change(ctx, "budget", slot.ConfigUpdate{Interval: &iv})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Moved != budget || rep.Moved+rep.Remaining != parked {
			t.Fatalf("configure answered %+v with a budget of %d and %d jobs parked: want %d moved and the rest remaining", rep, budget, parked, budget)
		}
		shown := s.shownSlots("budget", "j%02d", total)
		// The resume runs move the rest: every parked record comes to
		// the slot shown for it.
		unmoved := func() (n int) {
			for _, j := range s.jobs("budget", job.Parked) {
				if j.SlotAt.Sub(shown[j.ID]).Abs() > 5*time.Millisecond {
					n++
				}
			}
			return n
		}
		for give := time.Now().Add(time.Minute); unmoved() > 0; time.Sleep(time.Second) {
			if time.Now().After(give) {
				t.Fatalf("a minute of resume runs after the configure, %d parked records are not at the slot shown for them", unmoved())
			}
		}
		s.waitFinished("budget", time.Hour)
		starts := s.startsOf("budget")
		checkSingleStart(t, starts)
		for _, st := range starts {
			if d := st.At.Sub(shown[st.ID]).Abs(); d > 100*time.Millisecond {
				t.Fatalf("right after the configure %s was shown with slot %v; it started at %v (%v apart)", st.ID, shown[st.ID], st.At, d)
			}
		}
		if n := len(s.jobs("budget", job.Succeeded)); n != total {
			t.Fatalf("%d of %d jobs succeeded", n, total)
		}
	})
}

// configure that changes a queue's key_limits moves the keys' parked jobs
// to the slots the new limits give them: a key whose ten jobs are booked
// 10 s apart (most parked, beyond the transport's reach), configured to
// one start a second, runs them a second apart from the change on, each
// at the slot its record shows right after the configure.
func TestConfigureKeyLimitsMovesParkedJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The resume function releases a parked job once its slot comes
		// within the transport's reach: it runs often enough for this
		// reach.
		s := newSim(t, simOptions{Workers: 4, ResumeEvery: time.Second, Transport: memstore.TransportOptions{MaxDelay: reach}})
		defer s.stop()
		ctx := context.Background()
		cfg := slot.Config{Interval: 10 * time.Millisecond, Skew: 5 * time.Millisecond,
			KeyLimits: []api.Limit{{Interval: 10 * time.Second}}}
		s.createQueue("keyed", cfg)
		const total = 10
		s.enqueue("keyed", total, func(i int, sp *job.Spec) { sp.Key, sp.ID = "k", fmt.Sprintf("j%d", i) })
		parked := len(s.jobs("keyed", job.Parked))
		if parked < total/2 {
			t.Fatalf("%d of %d jobs parked; the test needs most beyond the transport's reach", parked, total)
		}
		// The key's first job starts at once: the change comes after it,
		// so the key's meter holds a start to space the moved jobs from.
		s.waitStarts("keyed", 1, time.Minute)
		faster := []api.Limit{{Interval: time.Second}}
		_, rep, err := s.eng.Change(ctx, "keyed", slot.ConfigUpdate{KeyLimits: &faster})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Moved != parked || rep.Remaining != 0 {
			t.Errorf("configure answered %+v; %d of the key's jobs were parked", rep, parked)
		}
		shown := s.shownSlots("keyed", "j%d", total)
		s.waitFinished("keyed", time.Hour)
		starts := s.startsOf("keyed")
		checkSingleStart(t, starts)
		// No pair of starts across the change breaks the old limit: the
		// second job waits out the first's 10 s, and the rest follow a
		// second apart (unmoved, the last would start 90 s after the first).
		bound := starts[0].At.Add(10*time.Second + time.Duration(total-2)*time.Second + time.Second)
		if last := starts[len(starts)-1].At; last.After(bound) {
			t.Errorf("the key's last job started %v after the first, after the change to one start a second: its parked jobs kept their old slots", last.Sub(starts[0].At))
		}
		for _, st := range starts {
			if d := st.At.Sub(shown[st.ID]).Abs(); d > 100*time.Millisecond {
				t.Errorf("right after the configure %s was shown with slot %v; it started at %v (%v apart)", st.ID, shown[st.ID], st.At, d)
			}
		}
	})
}

// A configure books line places for the tickets that will come to the
// gate in line, not for those whose jobs wait elsewhere: in the waiting
// room (they take a new ticket when booked) or held by a pause (they take
// a new ticket when released). Were they booked, the queue would start
// nothing for an interval per such job after the change.
func TestConfigureBooksNoPlaceForJobsOutOfLine(t *testing.T) {
	// firstStartAfter configures the queue at now and returns how long
	// after it the first start came.
	firstStartAfter := func(t *testing.T, s *sim, queue string, cfg slot.Config, before int, resume bool) time.Duration {
		t.Helper()
		ctx := context.Background()
		changed := time.Now()
		if _, _, err := s.eng.Reconfigure(ctx, queue, cfg); err != nil {
			t.Fatal(err)
		}
		if resume {
			if _, err := s.eng.Unpause(ctx, queue); err != nil {
				t.Fatal(err)
			}
		}
		s.waitStarts(queue, before+1, time.Hour)
		return s.startsOf(queue)[before].At.Sub(changed)
	}
	t.Run("WaitingRoom", func(t *testing.T) {
		inSim(t, simOptions{Workers: 4, ResumeEvery: time.Hour}, func(t *testing.T, s *sim) {
			cfg := slot.Config{Interval: 100 * time.Millisecond, BookAhead: 2}
			s.createQueue("room", cfg)
			s.enqueue("room", 30, nil) // 2 booked, 28 waiting
			s.waitStarts("room", 1, time.Minute)
			cfg.BookAhead = 4
			// The next start is an interval or so away, not 28.
			if _, _, err := s.eng.Reconfigure(context.Background(), "room", cfg); err != nil {
				t.Fatal(err)
			}
			s.waitFinished("room", time.Hour)
			// 30 jobs at 100ms take 2.9s: the room books its jobs as the
			// line frees places, not after 28 places booked for nothing.
			starts := s.startsOf("room")
			if span := starts[len(starts)-1].At.Sub(starts[0].At); span > 3500*time.Millisecond {
				t.Fatalf("30 jobs took %v at 100ms, want about 2.9s: the waiting jobs were booked line places", span)
			}
		})
	})
	t.Run("Paused", func(t *testing.T) {
		inSim(t, simOptions{Workers: 4, ResumeEvery: time.Hour}, func(t *testing.T, s *sim) {
			s.createQueue("held", withSkew(slot.Config{Interval: time.Second}))
			if _, err := s.eng.Pause(context.Background(), "held", time.Time{}); err != nil {
				t.Fatal(err)
			}
			s.enqueue("held", 20, nil)
			if d := firstStartAfter(t, s, "held", withSkew(slot.Config{Interval: 500 * time.Millisecond}), 0, true); d > 2*time.Second {
				t.Fatalf("the first start after the change and the resume came %v later: the held jobs were booked line places", d)
			}
			s.waitFinished("held", time.Hour)
		})
	})
}

// shownSlots is the slot the engine shows (Engine.Job) for each of the n
// jobs of queue whose ids are idFormat of 0 to n−1, by id.
func (s *sim) shownSlots(queue, idFormat string, n int) map[string]time.Time {
	s.t.Helper()
	shown := map[string]time.Time{}
	for i := range n {
		id := fmt.Sprintf(idFormat, i)
		j, err := s.eng.Job(context.Background(), job.Ref{Queue: queue, ID: id})
		if err != nil {
			s.t.Fatal(err)
		}
		shown[id] = j.SlotAt
	}
	return shown
}
