package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/schedule"
	"github.com/slotq/slotq/internal/slot"
)

// testSchedules checks engine.ScheduleState, for a store that keeps
// schedules: a schedule round-trips; a second create of its name fails;
// a put succeeds only from the version stored, one of concurrent puts
// from one version wins; the due index holds an active schedule at
// engine.ScheduleDue and nothing for a paused, ended or deleted one.
func testSchedules(t *testing.T, newState func(t *testing.T) engine.State) {
	schedulesOf := func(t *testing.T) (engine.State, engine.ScheduleState) {
		st := newState(t)
		sc, ok := st.(engine.ScheduleState)
		if !ok {
			t.Skip("the store keeps no schedules")
		}
		return st, sc
	}
	every := slot.Duration(time.Second)
	newSchedule := func(q, name string, next time.Time) engine.Schedule {
		start := next.Add(-time.Hour)
		return engine.Schedule{
			Queue: q, Name: name, Gen: 7, Next: next, DueAt: next.Add(-2 * time.Minute), CreatedAt: base,
			Spec: schedule.Spec{Every: &every, Start: &start, Missed: schedule.MissedAll, Job: schedule.Job{
				Kind: "storetest.noop", Payload: json.RawMessage(`{"a":[1,2]}`), Key: "k"}}.API(),
		}
	}
	t.Run("RoundTrip", func(t *testing.T) {
		st, sc := schedulesOf(t)
		ctx := t.Context()
		q := newQueue(t, st, interval)
		want := newSchedule(q, "b", at(time.Hour))
		if err := sc.CreateSchedule(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := sc.GetSchedule(ctx, q, "b")
		if err != nil {
			t.Fatal(err)
		}
		want.Version = 1
		if !sameSchedule(got, want) {
			t.Fatalf("GetSchedule:\n got  %+v\n want %+v", got, want)
		}
		if err := sc.CreateSchedule(ctx, newSchedule(q, "b", at(2*time.Hour))); !errors.Is(err, engine.ErrScheduleExists) {
			t.Fatalf("second CreateSchedule: %v; want ErrScheduleExists", err)
		}
		if _, err := sc.GetSchedule(ctx, q, "none"); !errors.Is(err, engine.ErrScheduleNotFound) {
			t.Fatalf("GetSchedule of none: %v; want ErrScheduleNotFound", err)
		}
		if err := sc.CreateSchedule(ctx, newSchedule(q, "a", at(time.Hour))); err != nil {
			t.Fatal(err)
		}
		other := newQueue(t, st, interval)
		if err := sc.CreateSchedule(ctx, newSchedule(other, "c", at(time.Hour))); err != nil {
			t.Fatal(err)
		}
		list, err := sc.ListSchedules(ctx, q)
		if err != nil || len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
			t.Fatalf("ListSchedules(%s): %+v, %v; want a, b", q, list, err)
		}
		if err := sc.DeleteSchedule(ctx, q, "b"); err != nil {
			t.Fatal(err)
		}
		if _, err := sc.GetSchedule(ctx, q, "b"); !errors.Is(err, engine.ErrScheduleNotFound) {
			t.Fatalf("GetSchedule after delete: %v; want ErrScheduleNotFound", err)
		}
		if err := sc.DeleteSchedule(ctx, q, "b"); err != nil {
			t.Fatalf("DeleteSchedule of none: %v; want nil", err)
		}
	})
	t.Run("CompareAndSet", func(t *testing.T) {
		st, sc := schedulesOf(t)
		ctx := t.Context()
		q := newQueue(t, st, interval)
		s := newSchedule(q, "s", at(time.Hour))
		if err := sc.CreateSchedule(ctx, s); err != nil {
			t.Fatal(err)
		}
		s.Next, s.Made = at(time.Hour+time.Second), 1
		if _, err := sc.PutSchedule(ctx, s, 2); !errors.Is(err, engine.ErrConflict) {
			t.Fatalf("PutSchedule from a version not stored: %v; want ErrConflict", err)
		}
		out, err := sc.PutSchedule(ctx, s, 1)
		if err != nil || out.Version != 2 {
			t.Fatalf("PutSchedule from 1: version %d, %v; want 2", out.Version, err)
		}
		got, _ := sc.GetSchedule(ctx, q, "s")
		if got.Version != 2 || got.Made != 1 || !got.Next.Equal(s.Next) {
			t.Fatalf("after the put: %+v", got)
		}
		ghost := newSchedule(q, "ghost", at(time.Hour))
		if _, err := sc.PutSchedule(ctx, ghost, 1); !errors.Is(err, engine.ErrScheduleNotFound) {
			t.Fatalf("PutSchedule of none: %v; want ErrScheduleNotFound", err)
		}
		// Racing puts from one version: one wins.
		const n = 16
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := range n {
			wg.Go(func() {
				c := got
				c.Made = int64(100 + i)
				if _, err := sc.PutSchedule(ctx, c, got.Version); err == nil {
					mu.Lock()
					wins++
					mu.Unlock()
				} else if !errors.Is(err, engine.ErrConflict) {
					t.Errorf("racing put: %v", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("%d of %d racing puts from one version won; want 1", wins, n)
		}
		final, _ := sc.GetSchedule(ctx, q, "s")
		if final.Version != got.Version+1 || final.Made < 100 {
			t.Fatalf("after the race: version %d, made %d", final.Version, final.Made)
		}
	})
	t.Run("Due", func(t *testing.T) {
		st, sc := schedulesOf(t)
		ctx := t.Context()
		t0 := dueEpoch(t)
		q := newQueue(t, st, interval)
		s := newSchedule(q, "s", t0.Add(3*time.Minute))
		s.DueAt = t0.Add(time.Minute)
		if err := sc.CreateSchedule(ctx, s); err != nil {
			t.Fatal(err)
		}
		wantDue(t, "created", dueOf(t, st, t0.Add(time.Hour), 100, q), entry(t0.Add(time.Minute), engine.DueSchedule, q, "s"))
		s.Next, s.DueAt = t0.Add(4*time.Minute), t0.Add(2*time.Minute)
		s, err := sc.PutSchedule(ctx, s, 1)
		if err != nil {
			t.Fatal(err)
		}
		wantDue(t, "advanced", dueOf(t, st, t0.Add(time.Hour), 100, q), entry(t0.Add(2*time.Minute), engine.DueSchedule, q, "s"))
		s.Paused = true
		if s, err = sc.PutSchedule(ctx, s, s.Version); err != nil {
			t.Fatal(err)
		}
		wantDue(t, "paused", dueOf(t, st, t0.Add(time.Hour), 100, q))
		s.Paused = false
		if s, err = sc.PutSchedule(ctx, s, s.Version); err != nil {
			t.Fatal(err)
		}
		wantDue(t, "resumed", dueOf(t, st, t0.Add(time.Hour), 100, q), entry(t0.Add(2*time.Minute), engine.DueSchedule, q, "s"))
		s.Next, s.DueAt = time.Time{}, time.Time{}
		if s, err = sc.PutSchedule(ctx, s, s.Version); err != nil {
			t.Fatal(err)
		}
		wantDue(t, "ended", dueOf(t, st, t0.Add(time.Hour), 100, q))
		s.Next, s.DueAt = t0.Add(4*time.Minute), t0.Add(2*time.Minute)
		if _, err = sc.PutSchedule(ctx, s, s.Version); err != nil {
			t.Fatal(err)
		}
		if err := sc.DeleteSchedule(ctx, q, "s"); err != nil {
			t.Fatal(err)
		}
		wantDue(t, "deleted", dueOf(t, st, t0.Add(time.Hour), 100, q))
	})
}

// sameSchedule compares schedules through their JSON (times by instant,
// as the stores keep them).
func sameSchedule(a, b engine.Schedule) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
