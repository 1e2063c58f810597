package slot

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

func TestStartAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }
	const lead = 2 * time.Millisecond
	tests := []struct {
		name string
		now  time.Time
		want time.Time
	}{
		{"a lead ahead: the start wanted", ms(-2), ms(0)},
		{"just in time: the start wanted", ms(0), ms(0)},
		{"late: a lead from now, never the start wanted plus the skew", ms(0.5), ms(2.5)},
		{"later: a lead from now", ms(2.5), ms(4.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StartAt(t0, tt.now, lead); !got.Equal(tt.want) {
				t.Errorf("StartAt(%v) = %v, want %v", tt.now.Sub(t0), got.Sub(t0), tt.want.Sub(t0))
			}
		})
	}
}

func TestMissedAndOverslept(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	iv, skew := time.Second, 10*time.Millisecond
	booked := State{Ticket: 5, Current: 2, Clock: t0.Add(3 * iv), LastStart: t0.Add(-iv)}
	last := State{Ticket: 3, Current: 2, Clock: t0, LastStart: t0.Add(-iv)}
	behind := State{Ticket: 5, Current: 2, Clock: t0.Add(3 * iv), LastStart: t0.Add(iv)} // the queue runs a second behind
	tests := []struct {
		name string
		s    State
		at   time.Time
		want bool
	}{
		{"on time", booked, t0, false},
		{"late within skew", booked, t0.Add(skew), false},
		{"late past skew, slots booked behind", booked, t0.Add(skew + time.Millisecond), true},
		{"late past skew, nothing booked behind", last, t0.Add(time.Minute), false},
		{"queue runs behind: due is its next start", behind, t0.Add(2 * iv), false},
		{"queue runs behind, late past it", behind, t0.Add(2*iv + skew + time.Millisecond), true},
		{"first start of a queue", State{Ticket: 3, Clock: t0.Add(2 * iv)}, t0.Add(skew + time.Millisecond), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := Reserve(tt.s, Every(iv), t0, tt.at, tt.at, t0, skew, false)
			if got := Missed(tt.s, t0, d, Every(iv), skew); got != tt.want {
				t.Errorf("Missed = %v, want %v (deadline %v)", got, tt.want, d.Sub(t0))
			}
		})
	}
	if Overslept(t0, t0) || !Overslept(t0, t0.Add(1)) {
		t.Error("Overslept: a call at the deadline is on time, one past it is not")
	}
}

// rate500 is 500 starts a second with a burst of 5: T = 2 ms, B·T = 10
// ms, room 2 ms.
var rate500 = Limits{{Rate: api.Rate{N: 500, Per: time.Second}, Burst: 5}}

// TestRoomAbsorbsLateness: under a rate, a worker late by up to its
// burst's room keeps its start, and the next booked ticket still starts at
// its own slot (the line did not move); a worker later than that would
// move the line and is passed.
func TestRoomAbsorbsLateness(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	skew := 500 * time.Microsecond
	if got := rate500.Room(); got != Room {
		t.Fatalf("room of %s = %v, want %v", rate500, got, Room)
	}
	// A backlog: 40 line tickets booked at t0.
	s, _, slots := Take(State{}, 40, 40, rate500, skew, t0)
	// The first 20 start on time, each at its slot.
	for k := range 20 {
		s = StartedBy(s, int64(k+1), rate500, slots[k], slots[k], Deadline(s, rate500, slots[k], skew, false), skew)
	}
	k := 20
	for _, tt := range []struct {
		late   time.Duration
		missed bool
	}{{0, false}, {ms(1), false}, {ms(5), false}, {ms(8) + skew, false}, {ms(9) + skew, true}} {
		at := slots[k].Add(tt.late)
		if v, _ := Gate(s, int64(k+1), rate500, skew, at); v != Start {
			t.Fatalf("late %v: gate %v, want start", tt.late, v)
		}
		d := Deadline(s, rate500, at, skew, false)
		if d.Sub(at) < Room && !tt.missed {
			t.Errorf("late %v: room %v, want at least %v", tt.late, d.Sub(at), Room)
		}
		if got := Missed(s, slots[k], d, rate500, skew); got != tt.missed {
			t.Errorf("late %v: Missed = %v, want %v", tt.late, got, tt.missed)
		}
		if tt.missed {
			continue
		}
		// Started late within the room: the next ticket passes at its
		// own slot.
		next := StartedBy(s, int64(k+1), rate500, slots[k], at, d, skew)
		if v, open := Gate(next, int64(k+2), rate500, skew, slots[k+1]); v != Start {
			t.Errorf("late %v within the room moved the line: the next ticket's gate is %v until %v after its slot", tt.late, v, open.Sub(slots[k+1]))
		}
	}
}

// TestMomentInAnyOrder: the tickets booked for one moment reach the gate
// in any order, and each starts: none is passed by another of its moment,
// and the starts, each anywhere in its window [reserved, deadline], keep
// every limit.
func TestMomentInAnyOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	skew := 500 * time.Microsecond
	forms := map[string]Limits{
		"rate with burst": rate500,
		"window":          {{Window: api.Rate{N: 10, Per: 50 * time.Millisecond}}},
		"rate and window": {{Rate: api.Rate{N: 500, Per: time.Second}, Burst: 9}, {Window: api.Rate{N: 10, Per: 40 * time.Millisecond}}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for name, ls := range forms {
		t.Run(name, func(t *testing.T) {
			for round := range 50 {
				const n = 60
				s, _, slots := Take(State{}, n, n, ls, skew, t0)
				// Group the tickets by moment and let each moment's
				// tickets come in a random order, each worker a
				// little late within the room.
				order := make([]int, n)
				for i := range order {
					order[i] = i
				}
				slices.SortStableFunc(order, func(a, b int) int { return slots[a].Compare(slots[b]) })
				for i := 0; i < n; {
					j := i
					for j < n && slots[order[j]].Equal(slots[order[i]]) {
						j++
					}
					rng.Shuffle(j-i, func(a, b int) { order[i+a], order[i+b] = order[i+b], order[i+a] })
					i = j
				}
				var starts []time.Time
				for _, k := range order {
					// Its worker is ready up to the skew late and
					// reserves as the engine's does.
					now := slots[k].Add(time.Duration(rng.Int64N(int64(skew))))
					at, d := Reserve(s, ls, slots[k], now, StartAt(slots[k], now, DefaultLead), slots[k], skew, false)
					if v, open := Gate(s, int64(k+1), ls, skew, at); v != Start {
						t.Fatalf("round %d: ticket %d ready at its slot +%v, reserved +%v: %v (open %v after its slot)", round, k+1, now.Sub(slots[k]), at.Sub(slots[k]), v, open.Sub(slots[k]))
					}
					if Missed(s, slots[k], d, ls, skew) || Behind(s, slots[k], ls, skew) {
						t.Fatalf("round %d: ticket %d of its moment, late %v: missed", round, k+1, at.Sub(slots[k]))
					}
					s = StartedBy(s, int64(k+1), ls, slots[k], at, d, skew)
					// The worker calls its target anywhere up to its
					// deadline.
					starts = append(starts, at.Add(time.Duration(rng.Int64N(int64(d.Sub(at))+1))))
				}
				if b := Breaches(ls, skew, starts); len(b) > 0 {
					t.Fatalf("round %d: %d breaches, first %+v", round, len(b), b[0])
				}
			}
		})
	}
}

// FuzzDeadlineKeepsLimits: whatever order and lateness workers come in,
// a start anywhere in [reserved, deadline] of a start the gate passed
// keeps every limit within the skew.
func FuzzDeadlineKeepsLimits(f *testing.F) {
	f.Add(uint64(1), uint8(0))
	f.Add(uint64(7), uint8(1))
	f.Add(uint64(42), uint8(2))
	f.Fuzz(func(t *testing.T, seed uint64, form uint8) {
		lss := []Limits{
			Every(10 * time.Millisecond),
			rate500,
			{{Window: api.Rate{N: 4, Per: 20 * time.Millisecond}}},
			{{Rate: api.Rate{N: 100, Per: time.Second}, Burst: 3}, {Window: api.Rate{N: 3, Per: 25 * time.Millisecond}}},
		}
		ls := lss[int(form)%len(lss)]
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b9))
		t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		skew := time.Duration(rng.Int64N(int64(time.Millisecond))) + 1
		s := State{}
		now := t0
		var starts []time.Time
		for k := range 200 {
			now = now.Add(time.Duration(rng.Int64N(int64(3 * time.Millisecond))))
			v, open := Gate(s, int64(k+1), ls, skew, now)
			if v == Early {
				now = open.Add(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
				if v, _ = Gate(s, int64(k+1), ls, skew, now); v != Start {
					t.Fatalf("gate at its opening: %v", v)
				}
			}
			d := Deadline(s, ls, now, skew, rng.IntN(4) == 0)
			s = StartedBy(s, int64(k+1), ls, time.Time{}, now, d, skew)
			starts = append(starts, now.Add(time.Duration(rng.Int64N(int64(d.Sub(now))+1))))
		}
		if b := Breaches(ls, skew, starts); len(b) > 0 {
			t.Fatalf("%s: %d breaches, first %+v", ls, len(b), b[0])
		}
	})
}

// TestReserveKeepsThePlaceWithinTheRoom: a worker ready up to its room
// after its slot, with slots booked behind it, reserves a start that
// keeps its place (not Missed), though its earliest start with the lead
// added (StartAt) would miss it under a window: the lead is the time its
// writes may take, not lateness. A worker ready beyond the room of a
// window is passed.
func TestReserveKeepsThePlaceWithinTheRoom(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	skew, lead := 500*time.Microsecond, 2*time.Millisecond
	window := Limits{{Window: api.Rate{N: 10, Per: 50 * time.Millisecond}}}
	for name, ls := range map[string]Limits{"rate with burst": rate500, "window": window} {
		s, _, slots := Take(State{}, 30, 30, ls, skew, t0)
		slotAt := slots[len(slots)/2]
		for _, late := range []time.Duration{0, time.Millisecond, Room} {
			now := slotAt.Add(late)
			at, d := Reserve(s, ls, slotAt, now, StartAt(slotAt, now, lead), slotAt, skew, false)
			if Missed(s, slotAt, d, ls, skew) {
				t.Errorf("%s, ready %v late: reserved %v after its slot, deadline %v after it: missed", name, late, at.Sub(slotAt), d.Sub(slotAt))
			}
			if at.Before(slotAt) || d.Before(now) {
				t.Errorf("%s, ready %v late: reserved %v, deadline %v after its slot", name, late, at.Sub(slotAt), d.Sub(slotAt))
			}
		}
	}
	s, _, slots := Take(State{}, 30, 30, window, skew, t0)
	slotAt := slots[len(slots)/2]
	now := slotAt.Add(Room + skew + time.Microsecond)
	if _, d := Reserve(s, window, slotAt, now, StartAt(slotAt, now, lead), slotAt, skew, false); !Missed(s, slotAt, d, window, skew) {
		t.Errorf("window, ready %v late: kept its place beyond the room (deadline %v after its slot)", now.Sub(slotAt), d.Sub(slotAt))
	}
}

// TestWindowLatenessDoesNotCarryOver: a window books its moments its
// period plus the room apart, a skew after its gate opens past a moment
// that kept its slots. That skew absorbs a moment whose starts came as
// late as Missed allows: the next moment still opens at its slot, so a
// late start never holds every later moment back (booked a skew tighter,
// each such moment would add its lateness to all after it).
func TestWindowLatenessDoesNotCarryOver(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	window := Limits{{Window: api.Rate{N: 10, Per: 50 * time.Millisecond}}}
	skew := 1250 * time.Microsecond
	s, _, slots := Take(State{}, 30, 30, window, skew, t0)
	per := 50*time.Millisecond + Room
	for k, at := range slots {
		// The first ten together (the window is open), the backlog
		// behind them paced one a tenth of the booked period apart.
		want := t0
		if k >= 10 {
			want = t0.Add(per + time.Duration(k-10)*per/10)
		}
		if !at.Equal(want) {
			t.Fatalf("ticket %d booked %v after the first, want %v", k+1, at.Sub(t0), want.Sub(t0))
		}
	}
	// Every start of the first moment reserved as late as it may keep
	// its place: its deadline a skew past the on-time one.
	late := slots[0].Add(skew)
	for k := range 10 {
		d := Deadline(s, window, late, skew, false)
		if Missed(s, slots[k], d, window, skew) {
			t.Fatalf("ticket %d reserved %v late: missed", k+1, late.Sub(slots[k]))
		}
		s = StartedBy(s, int64(k+1), window, slots[k], late, d, skew)
	}
	if open := GateOpen(s, window, skew); open.After(slots[10]) {
		t.Errorf("the second moment opens %v after its slot: the first's lateness carried over", open.Sub(slots[10]))
	}
}

// TestWindowBacklogPaced: a window's backlog is booked at moments of
// ⌈N/PacedMoments⌉ tickets each, a period over its count (times the
// moment's size) apart, so no more workers than that come to the gate
// together; the window still starts N a booked period, and keeps its
// runs within MaxRuns.
func TestWindowBacklogPaced(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, n := range []int{3, PacedMoments, PacedMoments + 1, 100, 5000} {
		window := Limits{{Window: api.Rate{N: n, Per: time.Second}}}
		per := time.Second + Room
		g := (n + PacedMoments - 1) / PacedMoments
		s, _, slots := Take(State{}, 3*n, 3*n, window, Room, t0)
		moments := map[time.Time]int{}
		for k, at := range slots {
			moments[at]++
			if k < n && !at.Equal(t0) {
				t.Fatalf("N=%d: ticket %d of the open window booked %v after the first, want with it", n, k+1, at.Sub(t0))
			}
			if k >= n && moments[at] > g {
				t.Fatalf("N=%d: %d tickets booked at %v, want at most %d together", n, moments[at], at.Sub(t0), g)
			}
			if k >= n && at.After(t0.Add(time.Duration(k/n)*per+per)) {
				t.Fatalf("N=%d: ticket %d booked %v after the first: the window starts fewer than N a period", n, k+1, at.Sub(t0))
			}
		}
		if runs := len(s.mark(0).Booked); runs > MaxRuns {
			t.Errorf("N=%d: %d runs booked, want at most %d", n, runs, MaxRuns)
		}
		if bs := Breaches(window, Room, slots); len(bs) > 0 {
			t.Errorf("N=%d: the booked slots break the window: %v", n, bs[0])
		}
	}
}

// TestLateWorkerKeepsPacedMoment: a worker of a window's paced backlog
// that comes past its room, but not past the room and the skew its
// moment has before the next, keeps its start by calling at once: it
// reserves now, with half its lead for its writes and no room beyond.
func TestLateWorkerKeepsPacedMoment(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	window := Limits{{Window: api.Rate{N: 10, Per: 100 * time.Millisecond}}}
	const lead, skew = 2 * time.Millisecond, 2 * time.Millisecond
	s, _, slots := Take(State{}, 30, 30, window, skew, t0)
	slotAt := slots[15]
	now := slotAt.Add(Room + lead/4)
	at, d := Reserve(s, window, slotAt, now, StartAt(slotAt, now, lead), slotAt, skew, false)
	if Missed(s, slotAt, d, window, skew) || !at.Equal(now) || !d.Equal(now.Add(lead/2)) {
		t.Errorf("ready %v late: reserved %v after its slot with deadline %v after it; want now, deadline half a lead later, kept",
			now.Sub(slotAt), at.Sub(slotAt), d.Sub(slotAt))
	}
}
