package dynamostore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/schedule"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// Eight resume runs at once, each its own engine on one DynamoDB Local
// table, race for the same occurrences of three schedules: each
// occurrence becomes one job, which starts once, and each schedule
// advances once.
func TestScheduleRaceOnDynamoDB(t *testing.T) {
	st := newStore(t)
	tr := memstore.NewTransport(memstore.TransportOptions{})
	mux, ticks := tickMux()
	const lead = 2 * time.Second
	newEngine := func() *engine.Engine {
		return testenv.NewEngine(t, engine.Options{State: st, Transport: tr, Runner: &dispatch.Dispatcher{Mux: mux}, ScheduleLead: lead, Lead: 20 * time.Millisecond})
	}
	eng := newEngine()
	testenv.RunWorkers(t, tr, 4, eng)
	ctx := t.Context()
	q := fmt.Sprintf("race-%d", time.Now().UnixNano())
	if _, err := eng.CreateQueue(ctx, q, slot.Config{Interval: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// One occurrence an hour from a start far enough ahead that the
	// creates make nothing: the resume runs make the first.
	hour := slot.Duration(time.Hour)
	start := time.Now().Add(lead + 3*time.Second).Truncate(time.Second)
	names := []string{"a", "b", "c"}
	for _, name := range names {
		sc, err := eng.CreateSchedule(ctx, q, name, schedule.Spec{Every: &hour, Start: &start, Job: schedule.Job{Kind: "tick"}})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Made != 0 {
			t.Fatalf("the create of %s made %d occurrences; want 0", name, sc.Made)
		}
	}
	due := start.Add(-lead + 100*time.Millisecond)
	testenv.WaitFor(t, "the occurrences to come within the lead", func() bool { return time.Now().After(due) })
	runs := make([]*engine.Engine, 8)
	for i := range runs {
		runs[i] = newEngine()
	}
	var wg sync.WaitGroup
	reports := make([]engine.ResumeReport, len(runs))
	for i, r := range runs {
		wg.Go(func() {
			rep, err := r.Resume(ctx)
			if err != nil {
				t.Errorf("resume run %d: %v", i, err)
			}
			reports[i] = rep
		})
	}
	wg.Wait()
	made := 0
	for _, rep := range reports {
		made += rep.Occurrences
	}
	for _, name := range names {
		sc, err := st.GetSchedule(ctx, q, name)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Made != 1 || sc.Version != 2 || !sc.Next.Equal(start.Add(time.Hour)) {
			t.Errorf("schedule %s after the race: made %d, version %d, next %s; want made once, advanced once", name, sc.Made, sc.Version, sc.Next)
		}
	}
	id := func(name string) string { return schedule.OccurrenceID(name, start) }
	testenv.WaitFor(t, "each occurrence's start", func() bool {
		return ticks.started(id("a")) > 0 && ticks.started(id("b")) > 0 && ticks.started(id("c")) > 0
	})
	// A duplicate start would come with the winner's: wait for every
	// message, the losers' stale ones too, to be delivered and dropped.
	testenv.WaitFor(t, "no message left to deliver", func() bool { return tr.Pending() == 0 })
	for _, name := range names {
		if n := ticks.started(id(name)); n != 1 {
			t.Errorf("occurrence %s started %d times; want once", id(name), n)
		}
		if _, err := st.GetJob(ctx, job.Ref{Queue: q, ID: id(name)}); err != nil {
			t.Errorf("occurrence %s: %v", id(name), err)
		}
	}
	qq, _ := st.GetQueue(ctx, q)
	t.Logf("8 runs made %d occurrences of 3 (the others found them made); tickets taken %d, messages sent %d", made, qq.State.Ticket, tr.Stats().Sent)
	if made != len(names) {
		t.Errorf("the runs reported %d occurrences made; want %d, one per schedule", made, len(names))
	}
}

// On DynamoDB Local, a pause and a resume at once: the pause cancels the
// occurrences made ahead and goes back to the first of them; the resume
// makes them again (their cancelled jobs wait again under their ids), and
// each starts once.
func TestSchedulePauseResumeOnDynamoDB(t *testing.T) {
	st := newStore(t)
	tr := memstore.NewTransport(memstore.TransportOptions{})
	mux, ticks := tickMux()
	eng := testenv.NewEngine(t, engine.Options{State: st, Transport: tr, Runner: &dispatch.Dispatcher{Mux: mux}, ScheduleLead: 20 * time.Second, Lead: 20 * time.Millisecond})
	testenv.RunWorkers(t, tr, 2, eng)
	ctx := t.Context()
	q := fmt.Sprintf("pause-%d", time.Now().UnixNano())
	if _, err := eng.CreateQueue(ctx, q, slot.Config{Interval: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	every := slot.Duration(2 * time.Second)
	start := time.Now().Add(5 * time.Second)
	sc, err := eng.CreateSchedule(ctx, q, "beat", schedule.Spec{Every: &every, Start: &start, Job: schedule.Job{Kind: "tick"}})
	if err != nil {
		t.Fatal(err)
	}
	made := sc.Made
	paused, cancelled, err := eng.PauseSchedule(ctx, q, "beat")
	if err != nil {
		t.Fatal(err)
	}
	if cancelled == 0 || int64(cancelled) != made || paused.Made != 0 || !paused.Next.Equal(sc.Last.Add(-time.Duration(made-1)*2*time.Second)) {
		t.Fatalf("made %d up to %s; the pause cancelled %d and left made %d, next %s; want all cancelled, the schedule back to the first", made, sc.Last, cancelled, paused.Made, paused.Next)
	}
	resumed, err := eng.ResumeSchedule(ctx, q, "beat")
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Made < made {
		t.Fatalf("the resume made %d; want at least the %d cancelled", resumed.Made, made)
	}
	var ids []string
	for k := range made {
		ids = append(ids, schedule.OccurrenceID("beat", paused.Next.Add(time.Duration(k)*2*time.Second)))
	}
	testenv.WaitFor(t, "the cancelled occurrences' starts", func() bool {
		for _, id := range ids {
			if ticks.started(id) == 0 {
				return false
			}
		}
		return true
	})
	if _, _, err := eng.PauseSchedule(ctx, q, "beat"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "no message left to deliver", func() bool { return tr.Pending() == 0 })
	for _, id := range ids {
		if n := ticks.started(id); n != 1 {
			t.Errorf("occurrence %s started %d times; want once", id, n)
		}
	}
}

// ticks counts the starts of each "tick" job.
type ticks struct {
	mu     sync.Mutex
	starts map[string]int
}

// tickMux is a mux whose "tick" handler counts its starts in the ticks
// it returns.
func tickMux() (*target.Mux, *ticks) {
	c := &ticks{starts: map[string]int{}}
	mux := target.NewMux()
	mux.HandleFunc("tick", func(_ context.Context, j *api.Job) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.starts[j.ID]++
		return nil
	})
	return mux, c
}

// started is how many times job id started.
func (c *ticks) started(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts[id]
}
