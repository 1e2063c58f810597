package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/schedule"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// TestScheduleMissedPolicy pauses a schedule of one occurrence a minute
// for ten minutes and resumes it: the pause cancelled the two made ahead
// and went back to the first of them, so the ten occurrences of the
// pause were missed: none makes none of them, latest the last, all every
// one (the two cancelled made again); then each goes on with the
// occurrences ahead.
func TestScheduleMissedPolicy(t *testing.T) {
	for _, c := range []struct {
		policy schedule.Missed
		missed int // occurrences made of those missed while paused
	}{{schedule.MissedNone, 0}, {schedule.MissedLatest, 1}, {schedule.MissedAll, 10}} {
		t.Run(string(c.policy), func(t *testing.T) {
			inSim(t, simOptions{Workers: 2, Seed: 5}, func(t *testing.T, s *sim) {
				ctx := context.Background()
				s.createQueue("m", slot.Config{Interval: time.Second})
				// Occurrences on the minute, half a minute from now.
				time.Sleep(30 * time.Second)
				every := slot.Duration(time.Minute)
				sc, err := s.eng.CreateSchedule(ctx, "m", "tick", schedule.Spec{Every: &every, Missed: c.policy, Job: schedule.Job{Kind: "sim"}})
				if err != nil {
					t.Fatal(err)
				}
				// The create made the occurrences within the lead.
				if sc.Made != 2 || !sc.Next.Equal(time.Now().Add(150*time.Second)) {
					t.Fatalf("after create: made %d, next %s (now %s); want 2 made, next 2m30s ahead", sc.Made, sc.Next, time.Now())
				}
				time.Sleep(5 * time.Minute) // 4:30 after the create: 5 occurrences so far
				paused, cancelled, err := s.eng.PauseSchedule(ctx, "m", "tick")
				if err != nil || !paused.Paused {
					t.Fatalf("pause: %+v %v", paused, err)
				}
				if cancelled != 2 {
					t.Errorf("pause cancelled %d occurrences made ahead; want 2", cancelled)
				}
				time.Sleep(10 * time.Minute)
				before := len(s.startsOf("m"))
				if before != 5 {
					t.Errorf("%d starts by the end of the pause; want the 5 before it (none of the 2 cancelled)", before)
				}
				if _, err := s.eng.ResumeSchedule(ctx, "m", "tick"); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Second) // the queue starts one a second
				got := len(s.startsOf("m")) - before
				if got != c.missed {
					t.Errorf("%s: %d missed occurrences started after the resume; want %d", c.policy, got, c.missed)
				}
				sc, err = s.eng.Schedule(ctx, "m", "tick")
				if err != nil {
					t.Fatal(err)
				}
				if want := int64(10 - c.missed); sc.Skipped != want {
					t.Errorf("skipped %d; want %d", sc.Skipped, want)
				}
				time.Sleep(3 * time.Minute)
				if after := len(s.startsOf("m")) - before - got; after != 3 {
					t.Errorf("%d starts in the 3 minutes after; want 3", after)
				}
			})
		})
	}
}

// TestScheduleRefusesBadInput: each bad request is a typed error naming
// the full path of its field, and writes nothing.
func TestScheduleRefusesBadInput(t *testing.T) {
	st := memstore.New(memstore.Options{})
	eng := engine.New(engine.Options{State: st, Transport: memstore.NewTransport(memstore.TransportOptions{})})
	ctx := context.Background()
	if _, err := eng.CreateQueue(ctx, "q", slot.Config{Interval: time.Second, Targets: []string{"https://api.example.com/"}}); err != nil {
		t.Fatal(err)
	}
	sec := slot.Duration(time.Second)
	echo := schedule.Job{Kind: "echo"}
	for _, c := range []struct {
		name, queue, sched string
		spec               schedule.Spec
		field              string
	}{
		{"bad name", "q", "a b", schedule.Spec{Every: &sec, Job: echo}, "name"},
		{"unknown zone", "q", "s", schedule.Spec{Cron: "0 8 * * *", TZ: "Nowhere/City", Job: echo}, "schedule.tz"},
		{"never fires", "q", "s", schedule.Spec{Cron: "0 0 31 4 *", Job: echo}, "schedule.cron"},
		{"target not allowed", "q", "s", schedule.Spec{Every: &sec, Job: schedule.Job{Target: "https://evil.example.net/x"}}, "schedule.job.target"},
		{"no queue", "nope", "s", schedule.Spec{Every: &sec, Job: echo}, "queue"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := eng.CreateSchedule(ctx, c.queue, c.sched, c.spec)
			var ie *input.Error
			switch {
			case errors.As(err, &ie):
				if ie.Field != c.field {
					t.Fatalf("field %q, want %q (%v)", ie.Field, c.field, err)
				}
			case c.field == "queue" && errors.Is(err, engine.ErrQueueNotFound):
			default:
				t.Fatalf("want a typed error on %s, got %v", c.field, err)
			}
		})
	}
	if got, _ := st.ListSchedules(ctx, "q"); len(got) != 0 {
		t.Fatalf("refused creates wrote %d schedules", len(got))
	}
	if jobs := st.Jobs("q"); len(jobs) != 0 {
		t.Fatalf("refused creates wrote %d jobs", len(jobs))
	}
	// A duplicate name is refused on name.
	if _, err := eng.CreateSchedule(ctx, "q", "s", schedule.Spec{Every: &sec, Job: echo}); err != nil {
		t.Fatal(err)
	}
	_, err := eng.CreateSchedule(ctx, "q", "s", schedule.Spec{Every: &sec, Job: echo})
	var ie *input.Error
	if !errors.As(err, &ie) || ie.Field != "name" || ie.Code != "schedule_exists" {
		t.Fatalf("a second create of s: %v; want schedule_exists on name", err)
	}
	// Deleting the queue takes its schedules: one created again has none.
	if _, err := eng.DeleteQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CreateQueue(ctx, "q", slot.Config{Interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	if got, err := eng.Schedules(ctx, "q"); err != nil || len(got) != 0 {
		t.Fatalf("the queue created again lists %d schedules (%v); want none", len(got), err)
	}
	if _, err := eng.CreateSchedule(ctx, "q", "s", schedule.Spec{Every: &sec, Job: echo}); err != nil {
		t.Fatalf("a schedule of the old queue's name stands in the way: %v", err)
	}
	_ = job.MaxBatch
}

// countingSchedules counts the schedule calls and the queue and job
// calls a resume run makes.
type countingSchedules struct {
	engine.State
	sched engine.ScheduleState
	mu    sync.Mutex // a run acts on schedules at once
	calls map[string]int
}

func (c *countingSchedules) count(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[call]++
}

func (c *countingSchedules) CreateSchedule(ctx context.Context, s engine.Schedule) error {
	c.count("CreateSchedule")
	return c.sched.CreateSchedule(ctx, s)
}

func (c *countingSchedules) GetSchedule(ctx context.Context, q, n string) (engine.Schedule, error) {
	c.count("GetSchedule")
	return c.sched.GetSchedule(ctx, q, n)
}

func (c *countingSchedules) ListSchedules(ctx context.Context, q string) ([]engine.Schedule, error) {
	c.count("ListSchedules")
	return c.sched.ListSchedules(ctx, q)
}

func (c *countingSchedules) PutSchedule(ctx context.Context, s engine.Schedule, from int64) (engine.Schedule, error) {
	c.count("PutSchedule")
	return c.sched.PutSchedule(ctx, s, from)
}

func (c *countingSchedules) DeleteSchedule(ctx context.Context, q, n string) error {
	c.count("DeleteSchedule")
	return c.sched.DeleteSchedule(ctx, q, n)
}

func (c *countingSchedules) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	c.count("GetQueue")
	return c.State.GetQueue(ctx, name)
}

func (c *countingSchedules) ListDue(ctx context.Context, before time.Time, limit int) ([]engine.DueEntry, error) {
	c.count("ListDue")
	return c.State.ListDue(ctx, before, limit)
}

// A schedule with nothing due costs no call of a resume run: a day of
// runs, once a minute, before its first occurrence reads the due index
// (once a run, whatever the number of schedules) and nothing else; the
// run a lead before it makes it with one read of the schedule, one of
// the queue, and one write of the schedule besides the job's enqueue.
func TestScheduleIdleCostsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		c := &countingSchedules{State: st, sched: st, calls: map[string]int{}}
		eng := engine.New(engine.Options{State: c, Transport: memstore.NewTransport(memstore.TransportOptions{})})
		ctx := context.Background()
		if _, err := eng.CreateQueue(ctx, "q", slot.Config{Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
		day := slot.Duration(24 * time.Hour)
		start := time.Now().Add(24 * time.Hour)
		for _, name := range []string{"a", "b", "c"} {
			if _, err := eng.CreateSchedule(ctx, "q", name, schedule.Spec{Every: &day, Start: &start, Job: schedule.Job{Kind: "k"}}); err != nil {
				t.Fatal(err)
			}
		}
		clear(c.calls)
		runs := 0
		for time.Now().Before(start.Add(-engine.DefaultScheduleLead - time.Minute)) {
			time.Sleep(time.Minute)
			if _, err := eng.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			runs++
		}
		if len(c.calls) != 1 || c.calls["ListDue"] != runs {
			t.Fatalf("%d idle runs made calls %v; want only one ListDue a run", runs, c.calls)
		}
		clear(c.calls)
		time.Sleep(2 * time.Minute)
		rep, err := eng.Resume(ctx)
		if err != nil || rep.Occurrences != 3 {
			t.Fatalf("the run a lead before made %d occurrences (%v); want 3", rep.Occurrences, err)
		}
		if c.calls["GetSchedule"] != 3 || c.calls["PutSchedule"] != 3 {
			t.Fatalf("the run that made 3 occurrences made calls %v; want a read and a write of each schedule", c.calls)
		}
	})
}

// An occurrence on a queue whose line is booked past its time waits its
// turn: its job takes the line's next slot (its record keeps the
// occurrence as not_before, and the later slot_at), starts at that slot
// and not before, and keeps the schedule's key.
func TestOccurrenceWaitsItsTurn(t *testing.T) {
	inSim(t, simOptions{Workers: 2, Seed: 8}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("busy", slot.Config{Interval: time.Second})
		s.enqueue("busy", 300, nil) // the line is booked five minutes ahead
		every := slot.Duration(time.Minute)
		sc, err := s.eng.CreateSchedule(ctx, "busy", "m", schedule.Spec{Every: &every, Job: schedule.Job{Kind: "sim", Key: "report"}})
		if err != nil {
			t.Fatal(err)
		}
		first := sc.Next.Add(-time.Minute) // the first occurrence the create made
		id := schedule.OccurrenceID("m", first)
		j, err := s.store.GetJob(ctx, job.Ref{Queue: "busy", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if !j.NotBefore.Equal(first) || !j.SlotAt.After(first) || j.Key != "report" {
			t.Fatalf("occurrence %s: not_before %s, slot_at %s, key %q; want its time, a later slot, the key", id, j.NotBefore, j.SlotAt, j.Key)
		}
		time.Sleep(6 * time.Minute)
		var at time.Time
		for _, st := range s.startsOf("busy") {
			if st.ID == id {
				at = st.At
			}
		}
		if at.IsZero() || at.Before(j.SlotAt) {
			t.Fatalf("occurrence %s started at %s; want at its slot %s, after the line", id, at, j.SlotAt)
		}
	})
}

// pauseInPut runs hook once, inside the first PutSchedule that advances a
// schedule past occurrences it made, before that write lands.
type pauseInPut struct {
	engine.State
	sched engine.ScheduleState
	hook  func()
	once  bool
}

func (p *pauseInPut) CreateSchedule(ctx context.Context, s engine.Schedule) error {
	return p.sched.CreateSchedule(ctx, s)
}

func (p *pauseInPut) GetSchedule(ctx context.Context, q, n string) (engine.Schedule, error) {
	return p.sched.GetSchedule(ctx, q, n)
}

func (p *pauseInPut) ListSchedules(ctx context.Context, q string) ([]engine.Schedule, error) {
	return p.sched.ListSchedules(ctx, q)
}

func (p *pauseInPut) PutSchedule(ctx context.Context, s engine.Schedule, from int64) (engine.Schedule, error) {
	if !p.once && s.Made > 0 && !s.Paused && p.hook != nil {
		p.once = true
		p.hook()
	}
	return p.sched.PutSchedule(ctx, s, from)
}

func (p *pauseInPut) DeleteSchedule(ctx context.Context, q, n string) error {
	return p.sched.DeleteSchedule(ctx, q, n)
}

// A pause that lands while a resume pass is making occurrences (after
// its enqueue, before it advances the schedule) still wins: once the pause
// returned, none of the occurrences starts, those the pass made included.
func TestPauseRacingAPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w *pauseInPut
		s := newSim(t, simOptions{Workers: 2, Seed: 4, Wrap: func(st engine.State) engine.State {
			w = &pauseInPut{State: st}
			return w
		}})
		defer s.stop()
		w.sched = s.store
		ctx := context.Background()
		s.createQueue("p", slot.Config{Interval: time.Second})
		var pausedAt time.Time
		w.hook = func() {
			if _, _, err := s.eng.PauseSchedule(ctx, "p", "tick"); err != nil {
				t.Errorf("pause: %v", err)
			}
			pausedAt = time.Now()
		}
		sec := slot.Duration(time.Second)
		if _, err := s.eng.CreateSchedule(ctx, "p", "tick", schedule.Spec{Every: &sec, Job: schedule.Job{Kind: "sim"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Minute)
		if pausedAt.IsZero() {
			t.Fatal("the pause never ran inside the pass")
		}
		for _, st := range s.startsOf("p") {
			if st.At.After(pausedAt) {
				t.Errorf("occurrence %s started at %s, after the pause returned at %s", st.ID, st.At, pausedAt)
			}
		}
	})
}

// TestScheduleOffTheMillisecond: an every schedule whose start carries a
// fraction of a millisecond (what a client's time.Now().Add(90s) sends),
// or whose period is not a whole number of milliseconds, makes one job
// per occurrence, each starting at its own time, and skips none.
func TestScheduleOffTheMillisecond(t *testing.T) {
	for _, c := range []struct {
		name  string
		start time.Duration
		every time.Duration
	}{
		{"start", 90*time.Second + 123456789, 10 * time.Second},
		{"period", 0, 10*time.Second + 500*time.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			inSim(t, simOptions{Workers: 2, Seed: 3}, func(t *testing.T, s *sim) {
				ctx := context.Background()
				s.createQueue("b", slot.Config{Interval: time.Second})
				every := slot.Duration(c.every)
				spec := schedule.Spec{Every: &every, Job: schedule.Job{Kind: "sim"}}
				if c.start != 0 {
					start := time.Now().Add(c.start)
					spec.Start = &start
				}
				begin := time.Now()
				if _, err := s.eng.CreateSchedule(ctx, "b", "beat", spec); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Minute)
				sc, err := s.eng.Schedule(ctx, "b", "beat")
				if err != nil {
					t.Fatal(err)
				}
				// The occurrences in the 5 minutes, after the start.
				want := int((5*time.Minute - c.start) / c.every)
				starts := s.startsOf("b")
				if len(starts) < want-1 || len(starts) > want+1 || sc.Skipped != 0 || sc.Error != "" {
					t.Fatalf("%d starts in 5m (made %d, skipped %d, error %q); want about %d", len(starts), sc.Made, sc.Skipped, sc.Error, want)
				}
				ids := map[string]bool{}
				for _, st := range starts {
					if ids[st.ID] {
						t.Fatalf("occurrence %s started twice", st.ID)
					}
					ids[st.ID] = true
					if st.At.Before(begin.Add(c.start)) {
						t.Fatalf("%s started at %s, before the start", st.ID, st.At)
					}
				}
			})
		})
	}
}

// TestOccurrenceIDReserved: a producer's job under the id of a schedule's
// occurrence not made yet is refused (a typed error on its id, nothing
// written), so the schedule makes its own job at that time, of its own
// kind, and counts it made once.
func TestOccurrenceIDReserved(t *testing.T) {
	inSim(t, simOptions{Workers: 2, Seed: 4}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("f", slot.Config{Interval: time.Second})
		every := slot.Duration(10 * time.Minute)
		start := time.Now().Add(5 * time.Minute)
		if _, err := s.eng.CreateSchedule(ctx, "f", "beat", schedule.Spec{Every: &every, Start: &start, Job: schedule.Job{Kind: "sim"}}); err != nil {
			t.Fatal(err)
		}
		id := schedule.OccurrenceID("beat", start)
		_, err := s.eng.Enqueue(ctx, job.EnqueueRequest{Queue: "f", Jobs: []job.Spec{{ID: "mine", Kind: "sim"}, {ID: id, Kind: "sim", Payload: []byte(`{"forged":true}`)}}})
		var ie *input.Error
		if !errors.As(err, &ie) || ie.Code != "reserved_id" || ie.Field != "jobs[1].id" {
			t.Fatalf("a producer's job under %s: %v; want reserved_id on jobs[1].id", id, err)
		}
		if _, err := s.eng.Job(ctx, job.Ref{Queue: "f", ID: "mine"}); !errors.Is(err, engine.ErrJobNotFound) {
			t.Fatalf("the refused batch wrote its first job: %v", err)
		}
		time.Sleep(6 * time.Minute)
		j, err := s.eng.Job(ctx, job.Ref{Queue: "f", ID: id})
		if err != nil || j.Kind != "sim" || len(j.Payload) != 0 || j.Status != job.Succeeded {
			t.Fatalf("occurrence %s: %+v, %v; want the schedule's own job, run", id, j, err)
		}
		if sc, err := s.eng.Schedule(ctx, "f", "beat"); err != nil || sc.Made != 1 {
			t.Fatalf("schedule made %d, %v; want 1", sc.Made, err)
		}
	})
}

// TestScheduleFasterThanItsQueue: a schedule that makes jobs faster than
// its queue's limit (or its key's) starts them is refused, naming its
// rule's field and both paces, and writes nothing; one as fast as the
// limit, or slower, is taken.
func TestScheduleFasterThanItsQueue(t *testing.T) {
	st := memstore.New(memstore.Options{})
	eng := engine.New(engine.Options{State: st, Transport: memstore.NewTransport(memstore.TransportOptions{})})
	ctx := context.Background()
	for name, cfg := range map[string]slot.Config{
		"daily":  {Interval: 24 * time.Hour},
		"rate":   {Rate: api.Rate{N: 10, Per: time.Minute}},
		"window": {Limits: []api.Limit{{Interval: time.Millisecond}, {Window: api.Rate{N: 20, Per: 24 * time.Hour}}}},
		"keyed":  {Interval: time.Millisecond, KeyLimits: []api.Limit{{Interval: time.Minute}}},
	} {
		if _, err := eng.CreateQueue(ctx, name, cfg); err != nil {
			t.Fatal(err)
		}
	}
	dur := func(d time.Duration) *slot.Duration { v := slot.Duration(d); return &v }
	sim := schedule.Job{Kind: "sim"}
	for _, c := range []struct {
		name, queue string
		spec        schedule.Spec
		field       string   // "": taken
		says        []string // what the refusal names
	}{
		{"every second, one a day", "daily", schedule.Spec{Every: dur(time.Second), Job: sim}, "schedule.every", []string{"every 1s", "86400 jobs a day", "queue daily", "interval 24h", "(1 a day)"}},
		{"every day, one a day", "daily", schedule.Spec{Every: dur(24 * time.Hour), Job: sim}, "", nil},
		{"cron every second, 10 a minute", "rate", schedule.Spec{Cron: "* * * * * *", Job: sim}, "schedule.cron", []string{`cron "* * * * * *"`, "rate 10/1m", "(14400 a day)"}},
		{"cron every 6s, 10 a minute", "rate", schedule.Spec{Cron: "*/6 * * * * *", Job: sim}, "", nil},
		{"weekday mornings, 20 a day", "window", schedule.Spec{Cron: "*/5 9-10 * * 1-5", Job: sim}, "", nil},
		{"every hour, 20 a day", "window", schedule.Spec{Cron: "*/30 * * * *", Job: sim}, "schedule.cron", []string{"48 jobs a day", "window 20/24h"}},
		{"a key's limit", "keyed", schedule.Spec{Every: dur(time.Second), Job: schedule.Job{Kind: "sim", Key: "k"}}, "schedule.every", []string{"key k of queue keyed", "interval 1m"}},
		{"no key", "keyed", schedule.Spec{Every: dur(time.Second), Job: sim}, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, before := st.Contents()
			_, err := eng.CreateSchedule(ctx, c.queue, "s", c.spec)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if _, err := eng.DeleteSchedule(ctx, c.queue, "s"); err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *input.Error
			if !errors.As(err, &ie) || ie.Code != "schedule_too_fast" || ie.Field != c.field {
				t.Fatalf("got %v; want schedule_too_fast on %s", err, c.field)
			}
			for _, w := range c.says {
				if !strings.Contains(ie.Message, w) {
					t.Errorf("the refusal %q does not say %q", ie.Message, w)
				}
			}
			if got, _ := st.ListSchedules(ctx, c.queue); len(got) != 0 {
				t.Fatalf("the refusal wrote %d schedules", len(got))
			}
			if _, after := st.Contents(); len(after) != len(before) {
				t.Fatalf("the refusal wrote %d jobs", len(after)-len(before))
			}
		})
	}
}

// TestSchedulePauseKeepsMadeAhead: a pause of one second does not lose
// the occurrences made ahead of it. The pause cancels them (none starts
// while paused), and the resume makes them again: every occurrence from
// the create on starts once, and the schedule counts each made once.
func TestSchedulePauseKeepsMadeAhead(t *testing.T) {
	inSim(t, simOptions{Workers: 2, Seed: 6}, func(t *testing.T, s *sim) {
		ctx := context.Background()
		s.createQueue("p", slot.Config{Interval: time.Second})
		every := slot.Duration(10 * time.Second)
		time.Sleep(5 * time.Second) // occurrences on the 10 s, 5 s from now
		if _, err := s.eng.CreateSchedule(ctx, "p", "beat", schedule.Spec{Every: &every, Job: schedule.Job{Kind: "sim"}}); err != nil {
			t.Fatal(err)
		}
		first := time.Now().Add(5 * time.Second)
		time.Sleep(30 * time.Second)
		_, cancelled, err := s.eng.PauseSchedule(ctx, "p", "beat")
		if err != nil {
			t.Fatal(err)
		}
		if cancelled < 5 {
			t.Fatalf("the pause cancelled %d occurrences made ahead; want those made within the lead", cancelled)
		}
		time.Sleep(time.Second)
		if _, err := s.eng.ResumeSchedule(ctx, "p", "beat"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Minute)
		last := time.Now().Add(-5 * time.Second)
		started := map[string]int{}
		for _, st := range s.startsOf("p") {
			started[st.ID]++
		}
		n := 0
		for at := first; !at.After(last); at = at.Add(10 * time.Second) {
			n++
			if id := schedule.OccurrenceID("beat", at); started[id] != 1 {
				t.Errorf("occurrence %s started %d times; want once", id, started[id])
			}
		}
		sc, err := s.eng.Schedule(ctx, "p", "beat")
		if err != nil {
			t.Fatal(err)
		}
		// Made: every occurrence from the first to the last made (some
		// ahead of now), once.
		if want := int64(sc.Last.Sub(first)/(10*time.Second)) + 1; sc.Made != want || sc.Skipped != 0 || len(started) != n {
			t.Errorf("%d occurrences started (%d by %s); the schedule counts %d made up to %s, %d skipped; want %d made, none skipped",
				len(started), n, last.Format(time.TimeOnly), sc.Made, sc.Last.Format(time.TimeOnly), sc.Skipped, want)
		}
	})
}
