package slot

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/pkg/api"
)

var forms = map[string]Limits{
	"interval":          Every(10 * time.Millisecond),
	"rate burst 0":      {{Rate: api.Rate{N: 100, Per: time.Second}}},
	"rate burst 4":      {{Rate: api.Rate{N: 100, Per: time.Second}, Burst: 4}},
	"window":            {{Window: api.Rate{N: 5, Per: 100 * time.Millisecond}}},
	"rate and window":   {{Rate: api.Rate{N: 200, Per: time.Second}, Burst: 3}, {Window: api.Rate{N: 20, Per: 200 * time.Millisecond}}},
	"three limits":      {{Interval: 2 * time.Millisecond}, {Rate: api.Rate{N: 100, Per: time.Second}, Burst: 9}, {Window: api.Rate{N: 30, Per: 500 * time.Millisecond}}},
	"window then burst": {{Window: api.Rate{N: 8, Per: 50 * time.Millisecond}}, {Rate: api.Rate{N: 1, Per: 2 * time.Millisecond}, Burst: 2}},
}

// The gate keeps every form whatever the order and timing of the
// workers that come to it: each of many jobs comes at its slot give or
// take a random jitter (early, late, duplicated), a job the gate calls
// early comes back when it opens, a job whose start would move the line
// (Missed) takes a new ticket, and each worker calls its target anywhere
// up to its deadline; the starts break no limit (Breaches) and keep slot
// order: none comes before its slot.
func TestGateKeepsEveryForm(t *testing.T) {
	const skew = time.Millisecond
	for name, ls := range forms {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(20) {
				starts, early := simulateGate(t, ls, skew, seed)
				if b := Breaches(ls, skew, starts); len(b) > 0 {
					t.Fatalf("seed %d: %d breaches, first %+v (of %d starts)", seed, len(b), b[0], len(starts))
				}
				if early != "" {
					t.Fatalf("seed %d: %s", seed, early)
				}
			}
		})
	}
}

type try struct {
	at     time.Time
	ticket int64
	slot   time.Time
	dup    bool
}

// simulateGate runs 200 jobs through the gate, one attempt at a time in
// the order of the times they come, and returns the starts it let
// through (each at a random moment up to its deadline) and, if a start
// came before its slot, what.
func simulateGate(t *testing.T, ls Limits, skew time.Duration, seed uint64) ([]time.Time, string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	var st State
	now := t0
	var queue []try
	jitter := func() time.Duration { return time.Duration(rng.IntN(4000)-1000) * time.Microsecond }
	for b := 0; b < 200; {
		n := 1 + rng.IntN(10)
		var first int64
		var slots []time.Time
		st, first, slots = Take(st, n, n, ls, 0, now)
		for k, at := range slots {
			queue = append(queue, try{at: at.Add(jitter()), ticket: first + int64(k), slot: at})
			if rng.IntN(10) == 0 {
				queue = append(queue, try{at: at.Add(jitter()), ticket: first + int64(k), slot: at, dup: true})
			}
		}
		b += n
		now = now.Add(time.Duration(rng.IntN(30)) * time.Millisecond)
	}
	done := map[int64]bool{}
	var starts []time.Time
	var early string
	for len(queue) > 0 {
		slices.SortStableFunc(queue, func(a, b try) int { return a.at.Compare(b.at) })
		x := queue[0]
		queue = queue[1:]
		if done[x.ticket] {
			continue
		}
		at := x.at
		if at.Before(x.slot) {
			at = x.slot // a worker asks for its slot, not before
		}
		v, open := Gate(st, x.ticket, ls, skew, at)
		d := Deadline(st, ls, at, skew, false)
		if v == Start && (Missed(st, x.slot, d, ls, skew) || Behind(st, x.slot, ls, skew)) {
			v = Passed
		}
		switch v {
		case Start:
			st = StartedBy(st, x.ticket, ls, x.slot, at, d, skew)
			done[x.ticket] = true
			s := at.Add(time.Duration(rng.Int64N(int64(d.Sub(at)) + 1)))
			starts = append(starts, s)
			if s.Before(x.slot) && early == "" {
				early = fmt.Sprintf("ticket %d started %v before its slot", x.ticket, x.slot.Sub(s))
			}
		case Early:
			x.at = open
			queue = append(queue, x)
		case Passed:
			var first int64
			var slots []time.Time
			st, first, slots = Take(st, 1, 1, ls, 0, at)
			done[x.ticket] = true
			queue = append(queue, try{at: slots[0].Add(jitter()), ticket: first, slot: slots[0]})
		default:
			t.Fatalf("gate said %v", v)
		}
	}
	return starts, early
}

// Each form's backlog slots are its arithmetic on the ticket, and a
// gate asked at every slot in turn lets each through: enqueue's slot_at
// is exact for a backlog.
func TestBacklogSlotsPassTheGate(t *testing.T) {
	const skew = time.Millisecond
	for name, ls := range forms {
		t.Run(name, func(t *testing.T) {
			st, first, slots := Take(State{}, 300, 300, ls, 0, t0)
			for k, at := range slots {
				v, open := Gate(st, first+int64(k), ls, skew, at)
				if v != Start {
					t.Fatalf("ticket %d at its slot +%v: %v (opens +%v)", first+int64(k), at.Sub(t0), v, open.Sub(t0))
				}
				st = Started(st, first+int64(k), ls, at)
			}
			if b := Breaches(ls, 0, slots); len(b) > 0 {
				t.Fatalf("the slots themselves break a limit: %+v", b[0])
			}
			// Tight: the last slot is no later than the slowest limit's
			// ideal for that many starts.
			n := len(slots)
			var ideal time.Duration
			for _, l := range ls {
				var d time.Duration
				switch {
				case !l.Window.IsZero():
					d = time.Duration((n-1)/l.Window.N) * l.Window.Per
				default:
					d = time.Duration(max(0, n-1-l.Burst)) * every(l)
				}
				ideal = max(ideal, d)
			}
			if got := slots[n-1].Sub(t0); got > ideal+ideal/10 {
				t.Fatalf("the backlog's last slot is +%v, the form's ideal +%v", got, ideal)
			}
		})
	}
}

func TestBreaches(t *testing.T) {
	ms := func(v ...int) []time.Time {
		out := make([]time.Time, len(v))
		for i, x := range v {
			out[i] = t0.Add(time.Duration(x) * time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name  string
		l     Limit
		at    []time.Time
		fails bool
	}{
		{"interval kept", Limit{Interval: 10 * time.Millisecond}, ms(0, 10, 20, 35, 45), false},
		{"interval too close", Limit{Interval: 10 * time.Millisecond}, ms(0, 10, 18), true},
		{"interval catch-up after a late start", Limit{Interval: 10 * time.Millisecond}, ms(0, 30, 31), true},
		{"rate burst taken then paced", Limit{Rate: api.Rate{N: 100, Per: time.Second}, Burst: 2}, ms(0, 0, 0, 10, 20, 30), false},
		{"rate one over the burst", Limit{Rate: api.Rate{N: 100, Per: time.Second}, Burst: 2}, ms(0, 0, 0, 0), true},
		{"rate faster than T on average", Limit{Rate: api.Rate{N: 100, Per: time.Second}, Burst: 2}, ms(0, 0, 0, 5, 10, 15, 20, 25), true},
		{"window kept", Limit{Window: api.Rate{N: 3, Per: time.Second}}, ms(0, 0, 0, 1000, 1000, 1000), false},
		{"window one too many", Limit{Window: api.Rate{N: 3, Per: time.Second}}, ms(0, 0, 0, 999), true},
		{"window sliding", Limit{Window: api.Rate{N: 2, Per: 100 * time.Millisecond}}, ms(0, 60, 110, 150), true},
	}
	for _, tt := range tests {
		if got := len(Breaches(Limits{tt.l}, 0, tt.at)) > 0; got != tt.fails {
			t.Errorf("%s: breaches %v, want %v", tt.name, got, tt.fails)
		}
	}
}

// A window keeps its recent starts as at most MaxRuns runs whatever N
// is: past it the oldest merge into a later time, which only delays.
func TestWindowRunsBounded(t *testing.T) {
	ls := Limits{{Window: api.Rate{N: 1000, Per: time.Hour}}}
	var st State
	at := t0
	var starts []time.Time
	for range 500 {
		at = at.Add(time.Millisecond)
		if v, open := GateScheduled(st, 1, ls, 0, at); v != Start {
			t.Fatalf("gate at +%v: %v (open +%v)", at.Sub(t0), v, open.Sub(t0))
		}
		st = StartedScheduled(st, ls, at)
		starts = append(starts, at)
	}
	if n := len(st.mark(0).Starts); n > MaxRuns {
		t.Fatalf("%d runs kept, want at most %d", n, MaxRuns)
	}
	if total := count(st.mark(0).Starts, time.Time{}); total != 500 {
		t.Fatalf("the runs count %d starts, want 500", total)
	}
}

func TestLimitValidation(t *testing.T) {
	rate := func(n int, per time.Duration) api.Rate { return api.Rate{N: n, Per: per} }
	tests := []struct {
		name  string
		c     Config
		field string
	}{
		{"two forms", Config{Interval: time.Second, Rate: rate(1, time.Second)}, "rate"},
		{"burst without rate", Config{Interval: time.Second, Burst: 2}, "burst"},
		{"negative burst", Config{Rate: rate(1, time.Second), Burst: -1}, "burst"},
		{"burst over the bound", Config{Rate: rate(1, time.Second), Burst: MaxBurst + 1}, "burst"},
		{"period below 1ms", Config{Rate: rate(1, time.Microsecond)}, "rate"},
		{"faster than the item takes", Config{Window: rate(5000, time.Second)}, "window"},
		{"too many limits", Config{Limits: []api.Limit{{Interval: time.Second}, {Interval: time.Second}, {Interval: time.Second}, {Interval: time.Second}}}, "limits"},
		{"limits beside a form", Config{Interval: time.Second, Limits: []api.Limit{{Interval: time.Second}}}, "limits"},
		{"two forms in one limit", Config{Limits: []api.Limit{{Interval: time.Second}, {Rate: rate(1, time.Second), Window: rate(1, time.Second)}}}, "limits[1]"},
		{"bad burst in a list", Config{Limits: []api.Limit{{Interval: time.Second}, {Rate: rate(1, time.Second), Burst: -2}}}, "limits[1].burst"},
		{"window too large", Config{Window: rate(MaxWindowN+1, 1000*time.Hour)}, "window"},
	}
	for _, tt := range tests {
		err := tt.c.WithDefaults().Validate()
		in, ok := err.(*input.Error)
		if !ok || in.Field != tt.field {
			t.Errorf("%s: Validate = %v, want an input.Error on %s", tt.name, err, tt.field)
		}
	}
	for _, c := range []Config{
		{Rate: rate(100, time.Minute), Burst: 10},
		{Window: rate(5000, time.Hour)},
		{Limits: []api.Limit{{Rate: rate(10, time.Second)}, {Window: rate(1000, time.Hour)}}},
	} {
		if err := c.WithDefaults().Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// The JSON forms name a bad value by its full path.
func TestLimitJSONErrors(t *testing.T) {
	tests := []struct{ body, code, field string }{
		{`{"rate":"100"}`, "invalid_rate", "rate"},
		{`{"rate":"100/60"}`, "invalid_rate", "rate"},
		{`{"rate":"0/1s"}`, "invalid_rate", "rate"},
		{`{"rate":"1.5/1s"}`, "invalid_rate", "rate"},
		{`{"window":5}`, "invalid_rate", "window"},
		{`{"limits":[{"rate":"10/1s"},{"rate":"1/1s","burst":"x"}]}`, "invalid_type", "limits[1].burst"},
		{`{"limits":[{"rate":"10/1s","brust":1}]}`, "unknown_field", "limits[0].brust"},
	}
	for _, tt := range tests {
		var c Config
		err := c.UnmarshalJSON([]byte(tt.body))
		in, ok := err.(*input.Error)
		if !ok || in.Code != tt.code || in.Field != tt.field {
			t.Errorf("%s: %v, want %s on %s", tt.body, err, tt.code, tt.field)
		}
	}
	var c Config
	if err := c.UnmarshalJSON([]byte(`{"rate":"100/m","burst":10}`)); err != nil || c.Rate != (api.Rate{N: 100, Per: time.Minute}) || c.Burst != 10 {
		t.Fatalf("rate 100/m burst 10 = %+v, %v", c, err)
	}
	if got := c.LimitList().String(); !strings.Contains(got, "rate 100/1m burst 10") {
		t.Fatalf("limits written %q", got)
	}
}
