package engine_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/schedule"
	"github.com/slotq/slotq/internal/slot"
)

// crashSchedules wraps the sim's state with schedules (the memstore's)
// and makes a resume pass "crash" around each of its steps: before or
// after reading a schedule, after taking tickets, before or after writing
// the occurrences' jobs, before or after advancing the schedule.
type crashSchedules struct {
	engine.State
	sched engine.ScheduleState
	rate  float64

	mu      sync.Mutex
	rnd     *rand.Rand
	crashes map[string]int
}

func (c *crashSchedules) roll(step string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rnd.Float64() >= c.rate {
		return false
	}
	c.crashes[step]++
	return true
}

func (c *crashSchedules) CreateSchedule(ctx context.Context, s engine.Schedule) error {
	return c.sched.CreateSchedule(ctx, s)
}

func (c *crashSchedules) GetSchedule(ctx context.Context, queue, name string) (engine.Schedule, error) {
	if c.roll("before reading the schedule") {
		return engine.Schedule{}, errCrash
	}
	return c.sched.GetSchedule(ctx, queue, name)
}

func (c *crashSchedules) ListSchedules(ctx context.Context, queue string) ([]engine.Schedule, error) {
	return c.sched.ListSchedules(ctx, queue)
}

func (c *crashSchedules) PutSchedule(ctx context.Context, s engine.Schedule, from int64) (engine.Schedule, error) {
	if c.roll("before advancing the schedule") {
		return engine.Schedule{}, errCrash
	}
	out, err := c.sched.PutSchedule(ctx, s, from)
	if err == nil && c.roll("after advancing the schedule") {
		return out, errCrash
	}
	return out, err
}

func (c *crashSchedules) DeleteSchedule(ctx context.Context, queue, name string) error {
	return c.sched.DeleteSchedule(ctx, queue, name)
}

func (c *crashSchedules) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	tk, err := c.State.Take(ctx, r)
	if err == nil && c.roll("after taking tickets") {
		return tk, errCrash
	}
	return tk, err
}

func (c *crashSchedules) CreateJobs(ctx context.Context, jobs []job.Job) ([]bool, error) {
	if c.roll("before writing the jobs") {
		return nil, errCrash
	}
	created, err := c.State.CreateJobs(ctx, jobs)
	if err == nil && c.roll("after writing the jobs") {
		return created, errCrash
	}
	return created, err
}

// schedulesOf is st if it keeps schedules (a wrapper of them), else
// the store.
func schedulesOf(st engine.State, store *memstore.Store) engine.ScheduleState {
	if sc, ok := st.(engine.ScheduleState); ok {
		return sc
	}
	return store
}

// schedCase is one schedule of the simulation and the daily occurrences
// the package's daylight-saving rule gives it.
type schedCase struct {
	queue string
	spec  schedule.Spec
	// want, if set, are occurrences that must be among those made: the
	// ones the clock change decides.
	want []string
}

// TestSchedulesWeek runs schedules through simulated spans of time that
// hold the clock changes of Paris and New York (the bubble's clock starts
// in 2000: spring on 2000-03-26 in Paris and 2000-04-02 in New York,
// autumn on 2000-10-29 in both): an every-1s schedule and cron schedules
// in the two zones, with three resume loops at once, crashes around every
// step of a pass, duplicate and late deliveries. Each occurrence becomes
// exactly one job, none is missed, each job starts once, the clock
// changes follow the package's rule, and start − occurrence stays within
// the queue's skew at the 99th percentile. Each span is the 12 hours
// around its change; SLOTQ_SIM_WEEK=1 (make bench) makes the autumn one a
// whole week.
func TestSchedulesWeek(t *testing.T) {
	autumn, autumnSpan := "2000-10-28T20:00:00Z", 12*time.Hour
	if os.Getenv("SLOTQ_SIM_WEEK") != "" {
		autumn, autumnSpan = "2000-10-25T12:00:00Z", 7*24*time.Hour
	}
	for _, season := range []struct {
		name, from string
		span       time.Duration
		// want are occurrences the clock change decides, by schedule.
		want map[string][]string
	}{
		{"autumn", autumn, autumnSpan, map[string][]string{
			// 02:30 comes twice that night in Paris, 01:30 in New
			// York: once each, at its first instant (summer time).
			"paris": {"2000-10-29T00:30:00Z"}, "newyork": {"2000-10-29T05:30:00Z"},
		}},
		{"spring Paris", "2000-03-25T20:00:00Z", 12 * time.Hour, map[string][]string{
			// 02:30 does not come: at the end of the gap, 03:00 CEST.
			"paris": {"2000-03-26T01:00:00Z"},
		}},
		{"spring New York", "2000-04-01T20:00:00Z", 12 * time.Hour, map[string][]string{
			"newyork2": {"2000-04-02T07:00:00Z"},
		}},
	} {
		t.Run(season.name, func(t *testing.T) { schedulesSpan(t, season.from, season.span, season.want) })
	}
}

func schedulesSpan(t *testing.T, from string, span time.Duration, want map[string][]string) {
	synctest.Test(t, func(t *testing.T) {
		begin, _ := time.Parse(time.RFC3339, from)
		time.Sleep(time.Until(begin)) // nothing runs yet: the bubble's clock jumps
		var crash *crashSchedules
		s := newSim(t, simOptions{
			Workers: 8, Seed: 31,
			Transport: memstore.TransportOptions{Jitter: 5 * time.Millisecond, DuplicateRate: 0.05, WholeSeconds: true},
			Wrap: func(st engine.State) engine.State {
				crash = &crashSchedules{State: st, rate: 0.02, rnd: rand.New(rand.NewPCG(31, 1)), crashes: map[string]int{}}
				return crash
			},
		})
		// The memstore keeps the schedules; the wrapper reaches them.
		crash.sched = s.store
		ctx, cancel := context.WithCancel(context.Background())
		var loops sync.WaitGroup
		defer func() {
			cancel()
			loops.Wait()
			s.stop()
		}()
		// Two more resume loops, at other offsets in the minute: runs
		// race for the same occurrences.
		for _, off := range []time.Duration{20 * time.Second, 41 * time.Second} {
			loops.Go(func() {
				time.Sleep(off)
				resumeEvery(ctx, s.eng, time.Minute)
			})
		}
		sec := slot.Duration(time.Second)
		cases := []schedCase{
			{queue: "every1s", spec: schedule.Spec{Every: &sec, Job: schedule.Job{Kind: "sim"}}},
			{queue: "paris", spec: schedule.Spec{Cron: "30 2 * * *", TZ: "Europe/Paris", Job: schedule.Job{Kind: "sim"}}},
			{queue: "paris5", spec: schedule.Spec{Cron: "0 */5 * * * *", TZ: "Europe/Paris", Job: schedule.Job{Kind: "sim"}}},
			{queue: "newyork", spec: schedule.Spec{Cron: "30 1 * * *", TZ: "America/New_York", Job: schedule.Job{Kind: "sim"}}},
			{queue: "newyork2", spec: schedule.Spec{Cron: "30 2 * * *", TZ: "America/New_York", Job: schedule.Job{Kind: "sim"}}},
			{queue: "newyork1m", spec: schedule.Spec{Cron: "* * * * *", TZ: "America/New_York", Job: schedule.Job{Kind: "sim"}}},
		}
		for i := range cases {
			cases[i].want = want[cases[i].queue]
		}
		created := time.Now()
		for _, c := range cases {
			s.createQueue(c.queue, slot.Config{Interval: 500 * time.Millisecond})
			for {
				// A crash of the create's own first pass is no failure
				// of the create: its occurrences are the resume's.
				if _, err := s.eng.CreateSchedule(context.Background(), c.queue, "s", c.spec); err != nil {
					if errors.Is(err, errCrash) {
						continue
					}
					t.Fatalf("create %s: %v", c.queue, err)
				}
				break
			}
		}
		end := created.Add(span)
		time.Sleep(span + 10*time.Minute)
		// Stop making occurrences at the end of the span, then let the
		// made ones run.
		for _, c := range cases {
			for {
				if _, _, err := s.eng.PauseSchedule(context.Background(), c.queue, "s"); err == nil || !errors.Is(err, errCrash) {
					break
				}
			}
		}
		time.Sleep(5 * time.Minute)

		skew := slot.Config{}.WithDefaults().Skew
		var lateness []time.Duration
		for _, c := range cases {
			rule, err := c.spec.Compile()
			if err != nil {
				t.Fatal(err)
			}
			expected := map[string]time.Time{}
			for at := rule.Next(created); !at.After(end); at = rule.Next(at) {
				expected[schedule.OccurrenceID("s", at)] = at
			}
			for _, w := range c.want {
				at, _ := time.Parse(time.RFC3339, w)
				if _, ok := expected[schedule.OccurrenceID("s", at)]; !ok {
					t.Errorf("%s: the rule gives no occurrence at %s", c.queue, w)
				}
			}
			// Jobs by the occurrence they are for (their not_before),
			// whatever their id: two jobs of one occurrence are a
			// duplicate even under two ids.
			jobs := s.store.Jobs(c.queue)
			byAt := map[time.Time]int{}
			atOf := map[string]time.Time{}
			for _, j := range jobs {
				byAt[j.NotBefore]++
				atOf[j.ID] = j.NotBefore
			}
			startsAt := map[time.Time]int{}
			for _, st := range s.startsOf(c.queue) {
				at := atOf[st.ID]
				startsAt[at]++
				if _, ok := expected[schedule.OccurrenceID("s", at)]; ok {
					lateness = append(lateness, st.At.Sub(at))
				}
			}
			missed, dup, extra, twice := 0, 0, 0, 0
			for id, at := range expected {
				switch byAt[at] {
				case 0:
					missed++
				case 1:
					if atOf[id] != at {
						extra++ // a job for it, under another id
					}
				default:
					dup++
				}
				if startsAt[at] > byAt[at] {
					twice++
				}
				if byAt[at] > 0 && startsAt[at] == 0 {
					missed++
				}
			}
			for at := range byAt {
				if _, ok := expected[schedule.OccurrenceID("s", at)]; !ok && !at.After(end) {
					extra++
				}
			}
			t.Logf("%s: %d occurrences; %d jobs; missed %d, duplicated %d, started twice %d, unexpected %d", c.queue, len(expected), len(jobs), missed, dup, twice, extra)
			if missed+dup+twice+extra > 0 {
				t.Errorf("%s: missed %d, duplicated %d, started twice %d, unexpected %d; want 0", c.queue, missed, dup, twice, extra)
			}
		}
		if len(lateness) == 0 {
			t.Fatal("no start of an occurrence")
		}
		slices.Sort(lateness)
		p := func(q int) time.Duration { return lateness[min(len(lateness)-1, len(lateness)*q/100)] }
		t.Logf("%d starts: start − occurrence p50 %v, p99 %v, max %v (skew %v); crashes %v", len(lateness), p(50), p(99), lateness[len(lateness)-1], skew, crash.crashes)
		if p(99) > skew || lateness[0] < -skew {
			t.Errorf("start − occurrence: min %v, p99 %v; want within the skew %v", lateness[0], p(99), skew)
		}
	})
}
