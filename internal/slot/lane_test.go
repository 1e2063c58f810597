package slot

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestArrive(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const lease = time.Minute
	a, b, c := Waiter{1, "a"}, Waiter{2, "b"}, Waiter{3, "c"}
	held := func(h Waiter, last int64, waiting ...Waiter) Lane {
		return Lane{Holder: h, Until: t0.Add(30 * time.Second), Last: last, Waiting: waiting}
	}
	tests := []struct {
		name   string
		l      Lane
		w      Waiter
		want   Lane
		v      LaneVerdict
		handed []Waiter
	}{
		{"free: takes it", Lane{}, a, Lane{Holder: a, Until: t0.Add(lease), Last: 1}, Acquired, nil},
		{"held: waits, in ticket order", held(a, 1), b, held(a, 2, b), Wait, nil},
		{"held: a waiter waits again without a change", held(a, 2, b), b, held(a, 2, b), Wait, nil},
		{"the holder again: keeps it, lease renewed", held(a, 1), a, Lane{Holder: a, Until: t0.Add(lease), Last: 1}, Acquired, nil},
		{"a later ticket came first: overtaken", held(b, 2), a, held(b, 2), Overtaken, nil},
		{"free but a later ticket came first: overtaken", Lane{Last: 2}, a, Lane{Last: 2}, Overtaken, nil},
		{"expired holder, waiter arrives: it is the first, takes it", Lane{Holder: a, Until: t0, Last: 2, Waiting: []Waiter{b}}, b,
			Lane{Holder: b, Until: t0.Add(lease), Last: 2}, Acquired, nil},
		{"expired holder, new job: the first waiter is handed it, the new one waits", Lane{Holder: a, Until: t0, Last: 2, Waiting: []Waiter{b}}, c,
			Lane{Holder: b, Until: t0.Add(lease), Last: 3, Waiting: []Waiter{c}}, Wait, []Waiter{b}},
		{"expired holder, nobody waits: the new job takes it", Lane{Holder: a, Until: t0, Last: 1}, b,
			Lane{Holder: b, Until: t0.Add(lease), Last: 2}, Acquired, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, v, handed := Arrive(tt.l, tt.w, t0, 1, lease)
			if v != tt.v || !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(handed, tt.handed) {
				t.Fatalf("Arrive = %+v, %v, %v; want %+v, %v, %v", got, v, handed, tt.want, tt.v, tt.handed)
			}
		})
	}
	full := held(a, 1)
	for i := range MaxLaneWaiting {
		full.Waiting = append(full.Waiting, Waiter{int64(i + 2), "w"})
	}
	full.Last = int64(MaxLaneWaiting + 1)
	if _, v, _ := Arrive(full, Waiter{full.Last + 1, "x"}, t0, 1, lease); v != LaneFull {
		t.Fatalf("a full lane: %v", v)
	}
}

func TestLeave(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const lease = time.Minute
	a, b, c := Waiter{1, "a"}, Waiter{2, "b"}, Waiter{3, "c"}
	l := Lane{Holder: a, Until: t0.Add(time.Second), Last: 3, Waiting: []Waiter{b, c}}
	got, handed := Leave(l, a, t0, 1, lease)
	if !reflect.DeepEqual(handed, []Waiter{b}) || got.Holder != b || !got.Until.Equal(t0.Add(lease)) || !reflect.DeepEqual(got.Waiting, []Waiter{c}) {
		t.Fatalf("holder leaves: %+v, handed %v", got, handed)
	}
	if !reflect.DeepEqual(l.Waiting, []Waiter{b, c}) {
		t.Fatalf("Leave changed its argument: %+v", l)
	}
	got, handed = Leave(l, c, t0, 1, lease)
	if handed != nil || got.Holder != a || !reflect.DeepEqual(got.Waiting, []Waiter{b}) {
		t.Fatalf("a waiter leaves: %+v, handed %v", got, handed)
	}
	got, handed = Leave(Lane{Holder: a, Until: t0.Add(time.Second), Last: 1}, a, t0, 1, lease)
	if handed != nil || !got.Idle() {
		t.Fatalf("the last holder leaves: %+v", got)
	}
	// Nobody leaves, but the holder's lease ran out: the key goes on.
	got, handed = Leave(Lane{Holder: a, Until: t0, Last: 2, Waiting: []Waiter{b}}, Waiter{}, t0, 1, lease)
	if !reflect.DeepEqual(handed, []Waiter{b}) || got.Holder != b {
		t.Fatalf("expired holder: %+v, handed %v", got, handed)
	}
}

// A key with places for two (key_max_running 2): two jobs hold it at
// once, a third waits; when one leaves, the waiter takes its place; an
// expired holder's place goes on; the holders arriving again keep theirs.
func TestLanePlaces(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const lease = time.Minute
	a, b, c, d := Waiter{1, "a"}, Waiter{2, "b"}, Waiter{3, "c"}, Waiter{4, "d"}
	var l Lane
	for _, w := range []Waiter{a, b} {
		var v LaneVerdict
		if l, v, _ = Arrive(l, w, t0, 2, lease); v != Acquired {
			t.Fatalf("%v arrives at a lane with a free place: %v", w, v)
		}
	}
	if l.Holding(t0) != 2 || !l.Holds(a) || !l.Holds(b) {
		t.Fatalf("two holders: %+v", l)
	}
	l, v, _ := Arrive(l, c, t0, 2, lease)
	if v != Wait || !reflect.DeepEqual(l.Waiting, []Waiter{c}) {
		t.Fatalf("a third job at two places: %v, %+v", v, l)
	}
	if _, v, _ := Arrive(l, b, t0.Add(time.Second), 2, lease); v != Acquired {
		t.Fatalf("a holder arriving again: %v", v)
	}
	got, handed := Leave(l, a, t0.Add(time.Second), 2, lease)
	if !reflect.DeepEqual(handed, []Waiter{c}) || !got.Holds(c) || !got.Holds(b) || got.Holds(a) || len(got.Waiting) != 0 {
		t.Fatalf("a holder leaves: handed %v, %+v", handed, got)
	}
	// b's lease runs out while d waits: d takes b's place, c keeps its own.
	got, _, _ = Arrive(got, d, t0.Add(time.Second), 2, lease)
	later := t0.Add(lease + time.Millisecond)
	got, handed = Leave(got, Waiter{}, later, 2, lease)
	if !reflect.DeepEqual(handed, []Waiter{d}) || got.Holds(b) || !got.Holds(d) || got.Holding(later) != 2 {
		t.Fatalf("an expired holder: handed %v, %+v", handed, got)
	}
	if first := got.FirstUntil(); !first.Equal(t0.Add(time.Second).Add(lease)) {
		t.Fatalf("first lease end %v", first)
	}
	// One place: what a cap of one always did.
	if _, v, _ := Arrive(Lane{Holder: a, Until: t0.Add(lease)}, b, t0, 1, lease); v != Wait {
		t.Fatalf("one place, held: %v", v)
	}
}

func TestEnterRemovePop(t *testing.T) {
	var l Lane
	for _, tk := range []int64{5, 2, 9, 2} {
		l = Enter(l, Waiter{tk, "j"})
	}
	if !reflect.DeepEqual(l.Waiting, []Waiter{{2, "j"}, {5, "j"}, {9, "j"}}) {
		t.Fatalf("Enter: %+v", l.Waiting)
	}
	l = Remove(l, Waiter{5, "j"})
	l, head, ok := Pop(l)
	if !ok || head.Ticket != 2 || len(l.Waiting) != 1 {
		t.Fatalf("Pop: %v %v %+v", head, ok, l)
	}
	if _, _, ok := Pop(Lane{}); ok {
		t.Fatal("Pop of an empty lane")
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"customer:42", "a/b@c.d-e_f", strings.Repeat("k", MaxKeyLen)} {
		if err := ValidateKey("key", k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	for _, k := range []string{"", "a b", "a\nb", "é", strings.Repeat("k", MaxKeyLen+1), "a,b"} {
		if err := ValidateKey("jobs[1].key", k); err == nil || err.Field != "jobs[1].key" {
			t.Errorf("%q: %v", k, err)
		}
	}
}

func TestCappedFor(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := State{Running: map[int64]time.Time{1: now.Add(time.Minute), 2: now.Add(time.Minute), 3: now}}
	if !Capped(s, 2, now) || !CappedFor(s, 2, 9, now) {
		t.Fatal("two live places of two: capped")
	}
	if CappedFor(s, 2, 1, now) {
		t.Fatal("ticket 1 holds one of them: its own place is free to it")
	}
	if CappedFor(s, 3, 9, now) || CappedFor(s, 0, 9, now) {
		t.Fatal("a free place, or no cap: not capped")
	}
}
