package storetest

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

func testQueue(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("CreateGet", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		cfg := slot.Config{Interval: 2 * time.Second, Skew: 100 * time.Millisecond, MaxAttempts: 5,
			Targets: []string{"https://api.example.com/*", "lambda:report"}}.WithDefaults()
		if err := st.CreateQueue(t.Context(), engine.Queue{Name: name, Gen: 1<<50 + 3, Config: cfg, CreatedAt: base}); err != nil {
			t.Fatalf("CreateQueue: %v", err)
		}
		q := getQueue(t, st, name)
		if q.Name != name {
			t.Errorf("Name = %q, want %q", q.Name, name)
		}
		if q.Gen != 1<<50+3 {
			t.Errorf("Gen = %d, want %d", q.Gen, int64(1<<50+3))
		}
		if !sameConfig(q.Config, cfg) {
			t.Errorf("Config = %+v, want %+v", q.Config, cfg)
		}
		wantState(t, "new queue state", q.State, slot.State{})
		if !q.CreatedAt.Equal(base) {
			t.Errorf("CreatedAt = %v, want %v", q.CreatedAt, base)
		}
	})

	t.Run("CreateExists", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		take(t, st, name, 1, 1, base)
		err := st.CreateQueue(t.Context(), engine.Queue{Name: name, Config: testConfig(5 * time.Second), CreatedAt: at(time.Hour)})
		wantErr(t, "second CreateQueue", err, engine.ErrQueueExists)
		q := getQueue(t, st, name)
		if q.Config.Interval != interval || q.State.Ticket != 1 || !q.CreatedAt.Equal(base) {
			t.Errorf("queue changed by a failed CreateQueue: %+v", q)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		ctx := t.Context()
		_, err := st.GetQueue(ctx, name)
		wantErr(t, "GetQueue", err, engine.ErrQueueNotFound)
		wantErr(t, "SetConfig", st.SetConfig(ctx, name, testConfig(interval)), engine.ErrQueueNotFound)
		_, err = st.Pause(ctx, name, time.Time{})
		wantErr(t, "Pause", err, engine.ErrQueueNotFound)
		_, err = st.Unpause(ctx, name, time.Time{})
		wantErr(t, "Unpause", err, engine.ErrQueueNotFound)
		wantErr(t, "DeleteQueue", st.DeleteQueue(ctx, name), engine.ErrQueueNotFound)
		_, err = st.Take(ctx, engine.TakeRequest{Queue: name, N: 1, Line: 1, Interval: interval, Now: base})
		wantErr(t, "Take", err, engine.ErrQueueNotFound)
		if _, err := st.GetQueue(ctx, name); !errors.Is(err, engine.ErrQueueNotFound) {
			t.Errorf("a call on a missing queue created it: GetQueue = %v", err)
		}
	})

	t.Run("List", func(t *testing.T) {
		st := newState(t)
		prefix := queueName(t)
		for _, s := range []string{"-b", "-c", "-a"} {
			if err := st.CreateQueue(t.Context(), engine.Queue{Name: prefix + s, Config: testConfig(interval), CreatedAt: base}); err != nil {
				t.Fatal(err)
			}
		}
		qs, err := st.ListQueues(t.Context())
		if err != nil {
			t.Fatalf("ListQueues: %v", err)
		}
		var all, ours []string
		for _, q := range qs {
			all = append(all, q.Name)
			if strings.HasPrefix(q.Name, prefix) {
				ours = append(ours, q.Name)
				if q.Config.Interval != interval {
					t.Errorf("%s: interval %s, want %s", q.Name, q.Config.Interval, interval)
				}
			}
		}
		if want := []string{prefix + "-a", prefix + "-b", prefix + "-c"}; !slices.Equal(ours, want) {
			t.Errorf("ListQueues gave %v, want %v", ours, want)
		}
		if !slices.IsSorted(all) {
			t.Errorf("ListQueues not in name order: %v", all)
		}
	})

	t.Run("SetConfig", func(t *testing.T) {
		st := newState(t)
		name := newQueue(t, st, interval)
		tk := take(t, st, name, 2, 2, base)
		cfg := slot.Config{Interval: 3 * time.Second, MaxAttempts: 7, Targets: []string{"lambda:x"}}.WithDefaults()
		if err := st.SetConfig(t.Context(), name, cfg); err != nil {
			t.Fatalf("SetConfig: %v", err)
		}
		q := getQueue(t, st, name)
		if !sameConfig(q.Config, cfg) {
			t.Errorf("Config = %+v, want %+v", q.Config, cfg)
		}
		wantState(t, "state after SetConfig", q.State, tk.State)
	})

	t.Run("Delete", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := newQueue(t, st, interval)
		take(t, st, name, 3, 3, base)
		if _, err := st.Lease(ctx, name, "h", at(time.Hour), base); err != nil {
			t.Fatal(err)
		}
		if err := st.ReleaseLease(ctx, name, "h", engine.Cursor{Round: at(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteQueue(ctx, name); err != nil {
			t.Fatalf("DeleteQueue: %v", err)
		}
		_, err := st.GetQueue(ctx, name)
		wantErr(t, "GetQueue after delete", err, engine.ErrQueueNotFound)
		qs, err := st.ListQueues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Name == name {
				t.Errorf("ListQueues still lists deleted %s", name)
			}
		}
		wantErr(t, "second DeleteQueue", st.DeleteQueue(ctx, name), engine.ErrQueueNotFound)
		if err := st.CreateQueue(ctx, engine.Queue{Name: name, Config: testConfig(interval), CreatedAt: base}); err != nil {
			t.Fatalf("CreateQueue after delete: %v", err)
		}
		wantState(t, "recreated queue", getQueue(t, st, name).State, slot.State{})
		// The resume cursor went with the queue: the new one's first pass
		// starts from its first parked job.
		if c, err := st.Lease(ctx, name, "h2", at(time.Hour), base); err != nil || c != (engine.Cursor{}) {
			t.Errorf("Lease of the recreated queue = %+v, %v; want an empty cursor", c, err)
		}
	})

	// Take and Gate of a generation the queue no longer has (it was
	// deleted and created again) hand out nothing and start nothing:
	// ErrQueueNotFound, and the new queue's state is untouched. Gen 0 in
	// a request skips the check.
	t.Run("Generation", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := queueOfGen(t, st, 7)
		take(t, st, name, 2, 2, base)
		generation(t, st, name, 1<<40)
		before := getQueue(t, st, name).State
		_, err := st.Take(ctx, engine.TakeRequest{Queue: name, N: 1, Line: 1, Interval: interval, Now: at(time.Hour), Gen: 7})
		wantErr(t, "Take of generation 7 on generation 2^40", err, engine.ErrQueueNotFound)
		g := gateReq(name, 1, at(time.Hour))
		g.Gen = 7
		_, err = st.Gate(ctx, g)
		wantErr(t, "Gate of generation 7 on generation 2^40", err, engine.ErrQueueNotFound)
		wantState(t, "the new queue after the old generation's take and gate", getQueue(t, st, name).State, before)

		tk, err := st.Take(ctx, engine.TakeRequest{Queue: name, N: 1, Line: 1, Interval: interval, Now: at(time.Hour), Gen: 1 << 40})
		if err != nil || tk.First != 1 {
			t.Fatalf("Take of the queue's own generation = %+v, %v; want ticket 1", tk, err)
		}
		g = gateReq(name, 1, at(time.Hour))
		g.Gen = 1 << 40
		if _, err := st.Gate(ctx, g); err != nil {
			t.Fatalf("Gate of the queue's own generation: %v", err)
		}
	})

	t.Run("Pause", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := newQueue(t, st, interval)
		tk := take(t, st, name, 1, 1, base)
		s, err := st.Pause(ctx, name, time.Time{})
		if err != nil {
			t.Fatalf("Pause: %v", err)
		}
		want := tk.State
		want.Paused = true
		wantState(t, "Pause's state", s, want)
		wantState(t, "stored state after Pause", getQueue(t, st, name).State, want)

		ok, err := st.Unpause(ctx, name, time.Time{})
		if err != nil || !ok {
			t.Fatalf("Unpause = %v, %v; want true, nil", ok, err)
		}
		wantState(t, "state after Unpause", getQueue(t, st, name).State, tk.State)
	})

	t.Run("UnpauseIfUntil", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := newQueue(t, st, interval)
		t1, t2 := at(time.Hour), at(2*time.Hour)

		if ok, err := st.Unpause(ctx, name, t1); err != nil || ok {
			t.Errorf("Unpause(ifUntil) of a running queue = %v, %v; want false, nil", ok, err)
		}
		if _, err := st.Pause(ctx, name, t1); err != nil {
			t.Fatal(err)
		}
		s, err := st.Pause(ctx, name, t2)
		if err != nil {
			t.Fatal(err)
		}
		wantState(t, "second Pause", s, slot.State{Paused: true, PausedUntil: t2})

		// The schedule of the first pause fires late: the newer pause wins.
		if ok, err := st.Unpause(ctx, name, t1); err != nil || ok {
			t.Errorf("Unpause(older until) = %v, %v; want false, nil", ok, err)
		}
		wantState(t, "after Unpause(older until)", getQueue(t, st, name).State, slot.State{Paused: true, PausedUntil: t2})

		if ok, err := st.Unpause(ctx, name, t2); err != nil || !ok {
			t.Errorf("Unpause(its until) = %v, %v; want true, nil", ok, err)
		}
		wantState(t, "after Unpause(its until)", getQueue(t, st, name).State, slot.State{})

		// An indefinite pause is not lifted by any schedule.
		if _, err := st.Pause(ctx, name, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if ok, err := st.Unpause(ctx, name, t2); err != nil || ok {
			t.Errorf("Unpause(until) of an indefinite pause = %v, %v; want false, nil", ok, err)
		}
		wantState(t, "indefinite pause", getQueue(t, st, name).State, slot.State{Paused: true})
	})
}

// testReconfigure checks Reconfigure: it writes a queue's new
// configuration with the limit state its Reslot gives, writes nothing when
// Reslot fails or the queue is missing, and loses no ticket taken meanwhile.
func testReconfigure(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("ReplacesConfigAndLimitState", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		old := limitForms[0].ls
		name := newQueueUnder(t, st, old)
		tk, err := st.Take(ctx, engine.TakeRequest{Queue: name, N: 6, Line: 6, Limits: old, Now: base})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Gate(ctx, engine.GateRequest{Queue: name, Ticket: tk.First, Limits: old, Now: tk.Slots[0]}); err != nil {
			t.Fatal(err)
		}
		q := getQueue(t, st, name)
		cfg := q.Config
		cfg.Limits = limitForms[2].ls
		var seen slot.State
		var want slot.State
		var rec engine.Rebooked
		got, err := st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: name, Gen: q.Gen, Config: cfg, Reslot: func(s slot.State) (slot.State, *engine.Rebooked, error) {
			seen = s
			base := slot.Seed(s, old, cfg.Limits, cfg.Skew)
			rec = engine.Rebooked{After: s.Current, Upto: s.Current + 7, At: at(time.Second), Base: base,
				Skip: [][2]int64{{s.Current + 2, s.Current + 3}}}
			line, _ := slot.Book(base, cfg.Limits, 0, 5, at(time.Second))
			rec.First, rec.Last, rec.From, rec.LineBase, rec.Keys = s.Current+6, s.Current+8, at(2*time.Second), line, true
			want, _ = slot.Book(line, cfg.Limits, 0, 3, at(2*time.Second))
			return want, &rec, nil
		}})
		if err != nil {
			t.Fatalf("Reconfigure: %v", err)
		}
		wantState(t, "Reslot's state", seen, q.State)
		wantState(t, "answer", got, want)
		after := getQueue(t, st, name)
		wantState(t, "state after Reconfigure", after.State, want)
		if !sameConfig(after.Config, cfg) {
			t.Errorf("Config = %+v, want %+v", after.Config, cfg)
		}
		// What the change did to the queued jobs is stored with it.
		if r := after.Rebooked; r == nil || r.After != rec.After || r.Upto != rec.Upto || !r.At.Equal(rec.At) {
			t.Errorf("Rebooked = %+v, want %+v", r, rec)
		} else {
			wantState(t, "Rebooked's base", r.Base, rec.Base)
			if !slices.Equal(r.Skip, rec.Skip) {
				t.Errorf("Rebooked's tickets without a place = %v, want %v", r.Skip, rec.Skip)
			}
			if r.First != rec.First || r.Last != rec.Last || !r.From.Equal(rec.From) || r.Keys != rec.Keys {
				t.Errorf("Rebooked's line = %d..%d from %v (keys %t), want %d..%d from %v (keys %t)", r.First, r.Last, r.From, r.Keys, rec.First, rec.Last, rec.From, rec.Keys)
			}
			wantState(t, "Rebooked's line base", r.LineBase, rec.LineBase)
		}
		_, err = st.Take(ctx, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: old, Now: base})
		wantErr(t, "Take under the old limits", err, engine.ErrLimitChanged)
		next, err := st.Take(ctx, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: cfg.Limits, Now: at(time.Second)})
		if err != nil {
			t.Fatalf("Take under the new limits: %v", err)
		}
		if _, _, slots := slot.Take(want, 1, 1, cfg.Limits, 0, at(time.Second)); !next.Slots[0].Equal(slots[0]) {
			t.Errorf("the first take after: slot %s, want %s (the new arithmetic from the stored state)", next.Slots[0].Sub(base), slots[0].Sub(base))
		}
	})

	t.Run("RefusesAndWritesNothing", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		name := newQueueUnder(t, st, limitForms[1].ls)
		q := getQueue(t, st, name)
		cfg := q.Config
		cfg.Limits = limitForms[0].ls
		boom := errors.New("boom")
		_, err := st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: name, Config: cfg, Reslot: func(s slot.State) (slot.State, *engine.Rebooked, error) { return s, nil, boom }})
		wantErr(t, "Reconfigure whose Reslot fails", err, boom)
		if after := getQueue(t, st, name); !sameConfig(after.Config, q.Config) {
			t.Errorf("a refused Reconfigure wrote the config: %+v", after.Config)
		}
		noop := func(s slot.State) (slot.State, *engine.Rebooked, error) { return s, nil, nil }
		_, err = st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: queueName(t), Config: cfg, Reslot: noop})
		wantErr(t, "Reconfigure of a missing queue", err, engine.ErrQueueNotFound)
		if q.Gen != 0 {
			_, err = st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: name, Gen: q.Gen + 1, Config: cfg, Reslot: noop})
			wantErr(t, "Reconfigure of another generation", err, engine.ErrQueueNotFound)
		}
	})

	// Takes that race a Reconfigure all land, each under the limits it
	// met: none is lost, and none under the old limits lands after it.
	t.Run("RacesTakes", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		old, next := limitForms[0].ls, limitForms[1].ls
		name := newQueueUnder(t, st, old)
		q := getQueue(t, st, name)
		cfg := q.Config
		cfg.Limits = next
		const takers = 8
		var wg sync.WaitGroup
		errs := make(chan error, takers)
		for range takers {
			wg.Go(func() {
				for _, ls := range []slot.Limits{old, next, next, next} {
					_, err := st.Take(ctx, engine.TakeRequest{Queue: name, N: 1, Line: 1, Limits: ls, Now: base})
					if err == nil || !errors.Is(err, engine.ErrLimitChanged) {
						errs <- err
						return
					}
				}
				errs <- errors.New("no take landed")
			})
		}
		var calls int
		_, err := st.Reconfigure(ctx, engine.ReconfigureRequest{Queue: name, Config: cfg, Reslot: func(s slot.State) (slot.State, *engine.Rebooked, error) {
			calls++
			out, _ := slot.Reslot(s, old, next, cfg.Skew, int(s.Ticket-s.Current), base)
			return out, nil, nil
		}})
		if err != nil {
			t.Fatalf("Reconfigure: %v", err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("take: %v", err)
			}
		}
		if got := getQueue(t, st, name).State.Ticket; got != takers {
			t.Errorf("ticket = %d after %d takes, want %d", got, takers, takers)
		}
		t.Logf("Reslot called %d times", calls)
	})
}
