package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

func testMeters(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("Unwritten", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		m, err := st.GetMeter(t.Context(), name, "k1")
		if err != nil || m.Version != 0 || m.Queue != name || m.Key != "k1" {
			t.Fatalf("GetMeter of an unwritten meter = %+v, %v", m, err)
		}
	})

	// A meter is written by compare-and-set on its version, and comes
	// back as it was put: its starts, its highest ticket, its own limits.
	t.Run("CompareAndSet", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		ls := slot.Limits{{Window: api.Rate{N: 2, Per: time.Second}}}
		m := slot.Meter{Queue: name, Key: "k", Gen: 3, Limits: slot.Limits{{Rate: api.Rate{N: 5, Per: time.Second}, Burst: 1}}, Weight: 4}
		m, _, _ = slot.KeyGate(m, 4, ls, 0, at(0))
		m, _, _ = slot.KeyGate(m, 6, ls, 0, at(time.Millisecond))
		put, err := st.PutMeter(t.Context(), m, 0, time.Time{})
		if err != nil || put.Version <= 0 {
			t.Fatalf("PutMeter from 0 = %+v, %v", put, err)
		}
		if _, err := st.PutMeter(t.Context(), m, 0, time.Time{}); !errors.Is(err, engine.ErrConflict) {
			t.Fatalf("second PutMeter from 0: %v, want ErrConflict", err)
		}
		got, err := st.GetMeter(t.Context(), name, "k")
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != put.Version || got.Gen != 3 || got.State.Current != 6 || !got.State.LastStart.Equal(m.State.LastStart) ||
			!slices.Equal(got.Limits, m.Limits) || len(got.State.Marks) != len(m.State.Marks) || got.Weight != 4 {
			t.Fatalf("GetMeter = %+v\nput %+v", got, m)
		}
		if open, want := slot.KeyOpen(got, ls, 0), slot.KeyOpen(m, ls, 0); !open.Equal(want) {
			t.Fatalf("the stored window opens at %v, the put one at %v", open, want)
		}
		next, err := st.PutMeter(t.Context(), got, got.Version, at(time.Hour))
		if err != nil || next.Version != got.Version+1 {
			t.Fatalf("PutMeter from %d = %+v, %v", got.Version, next, err)
		}
		if _, err := st.PutMeter(t.Context(), got, got.Version, time.Time{}); !errors.Is(err, engine.ErrConflict) {
			t.Fatalf("PutMeter from a stale version: %v, want ErrConflict", err)
		}
	})

	// A meter keeps the limits its marks were kept under as they were
	// put: none (empty), some, or not known (nil, a meter written before
	// they were recorded); and its answered tickets.
	t.Run("KeptUnder", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		for _, tc := range []struct {
			key  string
			kept slot.Limits
		}{
			{"unknown", nil},
			{"none", slot.Limits{}},
			{"some", slot.Limits{{Interval: time.Second}, {Window: api.Rate{N: 3, Per: time.Minute}}}},
		} {
			answered := []int64{int64(len(tc.kept)), 7}
			if _, err := st.PutMeter(t.Context(), slot.Meter{Queue: name, Key: tc.key, Gen: 1, KeptUnder: tc.kept, Answered: answered}, 0, time.Time{}); err != nil {
				t.Fatal(err)
			}
			got, err := st.GetMeter(t.Context(), name, tc.key)
			if !slices.Equal(got.Answered, answered) {
				t.Fatalf("meter %s answered %v, read back %v", tc.key, answered, got.Answered)
			}
			if err != nil || (got.KeptUnder == nil) != (tc.kept == nil) || got.KeptUnder.Signature() != tc.kept.Signature() {
				t.Fatalf("meter %s kept under %#v, read back %#v (%v)", tc.key, tc.kept, got.KeptUnder, err)
			}
		}
	})

	// A meter belongs to one generation of its queue: a write of an
	// older generation (a deleted queue's late attempt) never lands on a
	// newer one's meter, whatever version it names, and is told the
	// queue is gone; the newer generation's writes replace an older
	// one's meter.
	t.Run("Generations", func(t *testing.T) {
		st := newState(t)
		name := queueName(t)
		const oldGen, newGen = int64(1000) << 8, int64(2000) << 8
		ls := slot.Limits{{Interval: 10 * time.Second}}
		old, _, _ := slot.KeyGate(slot.Meter{Queue: name, Key: "k", Gen: oldGen}, 1, ls, 0, at(0))
		old, err := st.PutMeter(t.Context(), old, 0, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		cur, _, _ := slot.KeyGate(old.Fresh(newGen), 1, ls, 0, at(time.Minute))
		cur, err = st.PutMeter(t.Context(), cur, old.Version, time.Time{})
		if err != nil || cur.Gen != newGen {
			t.Fatalf("the new generation's PutMeter over the old one's meter = %+v, %v", cur, err)
		}
		// What a late attempt of the old generation writes: the meter it
		// read, as a meter of its own generation, at the version it read.
		late := cur.Fresh(oldGen)
		late.State = slot.SlowDown(late.State, 2, at(time.Minute+time.Second), at(time.Minute+2*time.Second), "2.1.0")
		if _, err := st.PutMeter(t.Context(), late, cur.Version, time.Time{}); !errors.Is(err, engine.ErrQueueNotFound) {
			t.Fatalf("PutMeter of the old generation over the new one's meter: %v, want ErrQueueNotFound", err)
		}
		got, err := st.GetMeter(t.Context(), name, "k")
		if err != nil || got.Gen != newGen || got.Version != cur.Version || !got.State.LastStart.Equal(cur.State.LastStart) || !got.State.SlowUntil.IsZero() {
			t.Fatalf("the new generation's meter after the old one's write = %+v, %v; want %+v", got, err, cur)
		}
	})

	// Workers that race to record starts on one key's meter, each by
	// compare-and-set from what it read (as the engine's key gate does),
	// record starts that keep the key's limit, none lost: the meter's
	// highest ticket is the highest whose write landed.
	t.Run("ConcurrentGate", func(t *testing.T) {
		for _, f := range limitForms {
			t.Run(f.name, func(t *testing.T) {
				st := newState(t)
				name := queueName(t)
				const callers = 12
				var (
					mu     sync.Mutex
					starts []time.Time
					order  []int64
				)
				atOnce(callers, func(i int) {
					ticket := int64(i + 1)
					for try := 0; try < 200; try++ {
						m, err := st.GetMeter(t.Context(), name, "k")
						if err != nil {
							t.Error(err)
							return
						}
						start := slot.KeyOpen(m, f.ls, 0)
						if start.Before(base) {
							start = base
						}
						next, v, _ := slot.KeyGate(m, ticket, f.ls, 0, start)
						if v == slot.KeyOvertaken {
							return
						}
						if v != slot.KeyStart {
							t.Errorf("ticket %d at the key's opening %v: %v", ticket, start, v)
							return
						}
						_, err = st.PutMeter(t.Context(), next, m.Version, time.Time{})
						if errors.Is(err, engine.ErrConflict) {
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						starts, order = append(starts, start), append(order, ticket)
						mu.Unlock()
						return
					}
					t.Errorf("ticket %d: no write landed in 200 tries", ticket)
				})
				if len(starts) == 0 {
					t.Fatal("no start was recorded")
				}
				if b := slot.Breaches(f.ls, 0, starts); len(b) > 0 {
					t.Fatalf("%d breaches of %v among the recorded starts %v", len(b), f.ls, starts)
				}
				m, err := st.GetMeter(t.Context(), name, "k")
				if err != nil {
					t.Fatal(err)
				}
				if top := slices.Max(order); m.State.Current != top {
					t.Fatalf("the meter's highest ticket is %d; the highest recorded was %d", m.State.Current, top)
				}
			})
		}
	})
}
