package slot

import (
	"encoding/json"
	"github.com/slotq/slotq/pkg/api"
	"reflect"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/input"
)

var t0 = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

func TestNextSlot(t *testing.T) {
	tests := []struct {
		name string
		st   State
		now  time.Time
		want time.Time
	}{
		{"fresh queue starts now", State{}, t0, t0},
		{"idle line starts now", State{Clock: t0.Add(-time.Minute)}, t0, t0},
		{"busy line goes one interval after the clock", State{Clock: t0.Add(3 * time.Second)}, t0, t0.Add(4 * time.Second)},
		{"clock exactly one interval ago", State{Clock: t0.Add(-time.Second)}, t0, t0},
		{"a start after the line ran dry holds the next slot back", State{Clock: t0.Add(-time.Minute), LastStart: t0.Add(500 * time.Millisecond)}, t0, t0.Add(1500 * time.Millisecond)},
		{"the line beyond the last start wins", State{Clock: t0.Add(3 * time.Second), LastStart: t0}, t0, t0.Add(4 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NextSlot(tt.st, Every(time.Second), 0, tt.now); !got.Equal(tt.want) {
				t.Fatalf("NextSlot = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTake(t *testing.T) {
	tests := []struct {
		name      string
		st        State
		n, line   int
		wantFirst int64
		wantSlot  time.Time
		wantClock time.Time
	}{
		{"first batch on a fresh queue", State{}, 3, 3, 1, t0, t0.Add(2 * time.Second)},
		{"batch behind a backlog", State{Ticket: 9, Clock: t0.Add(time.Minute)}, 2, 2, 10, t0.Add(61 * time.Second), t0.Add(62 * time.Second)},
		{"scheduled jobs keep the clock", State{Ticket: 4, Clock: t0}, 2, 0, 5, time.Time{}, t0},
		{"mixed batch moves the clock by its line jobs", State{Ticket: 1, Clock: t0}, 5, 2, 2, t0.Add(time.Second), t0.Add(2 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, first, slots := Take(tt.st, tt.n, tt.line, Every(time.Second), 0, t0)
			var slot time.Time
			if len(slots) > 0 {
				slot = slots[0]
			}
			if len(slots) != tt.line {
				t.Fatalf("Take gave %d slots, want %d", len(slots), tt.line)
			}
			for k := range slots {
				if want := slot.Add(time.Duration(k) * time.Second); !slots[k].Equal(want) {
					t.Fatalf("line slot %d = %v, want %v (one interval apart)", k, slots[k], want)
				}
			}
			if first != tt.wantFirst || !slot.Equal(tt.wantSlot) || !next.Clock.Equal(tt.wantClock) {
				t.Fatalf("Take = first %d slot %v clock %v, want %d %v %v", first, slot, next.Clock, tt.wantFirst, tt.wantSlot, tt.wantClock)
			}
			if next.Ticket != tt.st.Ticket+int64(tt.n) {
				t.Fatalf("ticket = %d, want %d", next.Ticket, tt.st.Ticket+int64(tt.n))
			}
		})
	}
}

// gateCase is one row of a gate's table: a ticket at the gate at now,
// the verdict, and when the gate opens for an early one.
type gateCase struct {
	name   string
	st     State
	ticket int64
	skew   time.Duration
	now    time.Time
	want   Verdict
	openAt time.Time
}

// testGate runs gate (Gate or GateScheduled) over the rows, for a queue
// of one start a second.
func testGate(t *testing.T, name string, gate func(State, int64, Limits, time.Duration, time.Time) (Verdict, time.Time), tests []gateCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, open := gate(tt.st, tt.ticket, Every(time.Second), tt.skew, tt.now)
			if v != tt.want || !open.Equal(tt.openAt) {
				t.Fatalf("%s = %v %v, want %v %v", name, v, open, tt.want, tt.openAt)
			}
		})
	}
}

func TestGate(t *testing.T) {
	base := State{Ticket: 10, Current: 4, LastStart: t0}
	testGate(t, "Gate", Gate, []gateCase{
		{"next ticket after an interval starts", base, 5, 0, t0.Add(time.Second), Start, time.Time{}},
		{"a later ticket may start (lower ones are passed later)", base, 7, 0, t0.Add(2 * time.Second), Start, time.Time{}},
		{"too soon after the last start", base, 5, 0, t0.Add(900 * time.Millisecond), Early, t0.Add(time.Second)},
		{"the skew is no early allowance: it goes to the deadline", base, 5, 200 * time.Millisecond, t0.Add(900 * time.Millisecond), Early, t0.Add(time.Second)},
		{"the current ticket passes again (a start whose claim was lost)", base, 4, 0, t0.Add(time.Second), Start, time.Time{}},
		{"the current ticket waits for the gate like any other", base, 4, 0, t0.Add(500 * time.Millisecond), Early, t0.Add(time.Second)},
		{"a lower ticket is not passed by a later one (slot order, not ticket order)", base, 2, 0, t0.Add(time.Hour), Start, time.Time{}},
		{"paused beats the rest", State{Paused: true, Current: 4}, 5, 0, t0.Add(time.Hour), Paused, time.Time{}},
		{"purged beats everything", State{Paused: true, Current: 4, Purged: 9}, 5, 0, t0.Add(time.Hour), Purged, time.Time{}},
		{"a ticket after the purge goes on", State{Ticket: 10, Current: 4, LastStart: t0, Purged: 9}, 10, 0, t0.Add(time.Second), Start, time.Time{}},
		{"first start of a queue", State{Ticket: 1}, 1, 0, t0, Start, time.Time{}},
	})
}

// A scheduled ticket starts by its slot, not its ticket: below current it
// is not passed, and its start leaves current alone; pause, purge and the
// spacing hold for it as for any ticket.
func TestGateScheduled(t *testing.T) {
	base := State{Ticket: 10, Current: 8, LastStart: t0}
	testGate(t, "GateScheduled", GateScheduled, []gateCase{
		{"below current, not passed", base, 3, 0, t0.Add(time.Second), Start, time.Time{}},
		{"spaced from the last start", base, 3, 0, t0.Add(400 * time.Millisecond), Early, t0.Add(time.Second)},
		{"paused", State{Paused: true, Current: 8}, 3, 0, t0, Paused, time.Time{}},
		{"purged", State{Current: 8, Purged: 5}, 3, 0, t0, Purged, time.Time{}},
	})
	s := StartedScheduled(base, Every(time.Second), t0.Add(1500*time.Millisecond))
	if s.Current != 8 || !s.LastStart.Equal(t0.Add(1500*time.Millisecond)) {
		t.Fatalf("StartedScheduled = %+v, want current 8 and last start at now", s)
	}
}

func TestStarted(t *testing.T) {
	tests := []struct {
		name string
		st   State
		now  time.Time
		want State
	}{
		{"first start of a queue", State{Ticket: 1}, t0, State{Ticket: 1, Current: 1, LastStart: t0}},
		{"on time: one interval after the last", State{Ticket: 9, Current: 1, LastStart: t0}, t0.Add(time.Second), State{Ticket: 9, Current: 2, LastStart: t0.Add(time.Second)}},
		{"early within skew: the theoretical time, not now", State{Ticket: 9, Current: 1, LastStart: t0}, t0.Add(990 * time.Millisecond), State{Ticket: 9, Current: 2, LastStart: t0.Add(time.Second)}},
		{"late: now", State{Ticket: 9, Current: 1, LastStart: t0}, t0.Add(5 * time.Second), State{Ticket: 9, Current: 2, LastStart: t0.Add(5 * time.Second)}},
		{"the clock is left alone", State{Ticket: 9, Current: 1, Clock: t0.Add(-time.Hour), LastStart: t0}, t0.Add(time.Minute), State{Ticket: 9, Current: 2, Clock: t0.Add(-time.Hour), LastStart: t0.Add(time.Minute)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Started(tt.st, tt.st.Current+1, Every(time.Second), tt.now); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Started = %+v, want %+v", got, tt.want)
			}
		})
	}
	// Never back: a lower ticket or an earlier now keep what was there.
	st := State{Current: 9, LastStart: t0.Add(time.Minute), Clock: t0.Add(time.Hour)}
	if got := Started(st, 5, Every(time.Second), t0); got.Current != 9 || got.LastStart.Before(st.LastStart) || !got.Clock.Equal(st.Clock) {
		t.Fatalf("Started moved state back: %+v", got)
	}
}

// TestGateWindow checks docs/guarantees.md §3 in its window form on the pure
// rule: whatever the arrival times (late runs, early tries within skew),
// any two starts i < j are at least (j−i)·interval − skew apart.
// The window form of the spacing (docs/guarantees.md §3) over any mix of line
// and scheduled starts.
func TestGateWindow(t *testing.T) {
	const iv, skew = 100 * time.Millisecond, 5 * time.Millisecond
	for seed := range 200 {
		st := State{}
		now := t0
		var starts []time.Time
		scheduled := 0
		x := uint32(seed*2654435761 + 1)
		for ticket := int64(1); len(starts) < 60; {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			// Mostly small steps (a backlog trying the gate), now and then
			// a long gap (a late job), so runs of late starts follow.
			step := time.Duration(x%30) * time.Millisecond
			if x%11 == 0 {
				step = time.Duration(x%700) * time.Millisecond
			}
			now = now.Add(step)
			if x%5 == 0 {
				// A scheduled job, its ticket below current once the
				// line has started, tries the gate between the line's.
				if v, _ := GateScheduled(st, 1, Every(iv), skew, now); v == Start {
					scheduled++
					st = StartedScheduled(st, Every(iv), now)
					starts = append(starts, now)
				}
				continue
			}
			v, _ := Gate(st, ticket, Every(iv), skew, now)
			if v != Start {
				continue
			}
			st = Started(st, ticket, Every(iv), now)
			starts = append(starts, now)
			ticket++
		}
		if scheduled == 0 {
			t.Fatalf("seed %d: no scheduled start", seed)
		}
		for i := range starts {
			for j := i + 1; j < len(starts); j++ {
				if gap, min := starts[j].Sub(starts[i]), time.Duration(j-i)*iv-skew; gap < min {
					t.Fatalf("seed %d: starts %d and %d are %v apart, want ≥ %v", seed, i, j, gap, min)
				}
			}
		}
	}
}

func TestPosition(t *testing.T) {
	tests := []struct {
		name   string
		s      State
		ticket int64
		want   int64
	}{
		{"behind current", State{Ticket: 7, Current: 3}, 7, 3},
		{"passed", State{Ticket: 9, Current: 9}, 7, 0},
		{"next", State{Ticket: 4, Current: 3}, 4, 0},
		// Purged tickets never start: they are not ahead of anyone.
		{"after a purge", State{Ticket: 12, Current: 3, Purged: 10}, 12, 1},
		{"purge behind current", State{Ticket: 12, Current: 8, Purged: 5}, 12, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p := Position(tt.s, tt.ticket); p != tt.want {
				t.Errorf("Position(%+v, %d) = %d, want %d", tt.s, tt.ticket, p, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Interval: time.Second}.WithDefaults()
	tests := []struct {
		name  string
		mod   func(*Config)
		field string
	}{
		{"zero interval", func(c *Config) { c.Interval = 0 }, "interval"},
		{"negative interval", func(c *Config) { c.Interval = -time.Second }, "interval"},
		{"huge interval", func(c *Config) { c.Interval = 48 * time.Hour }, "interval"},
		{"skew as large as the interval", func(c *Config) { c.Skew = time.Second }, "skew"},
		{"no attempts", func(c *Config) { c.MaxAttempts = -1 }, "max_attempts"},
		{"max backoff below backoff", func(c *Config) { c.MaxBackoff = time.Millisecond }, "max_backoff"},
		{"short retention", func(c *Config) { c.Retention = time.Second }, "retention"},
		{"blank target", func(c *Config) { c.Targets = []string{"https://x", ""} }, "targets[1]"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			ie, isInput := err.(*input.Error)
			if !isInput || ie.Field != tt.field {
				t.Fatalf("Validate = %v, want an input.Error on %s", err, tt.field)
			}
		})
	}
}

func TestValidateName(t *testing.T) {
	for _, name := range []string{"q", "emails.eu-west_1", "A-Z.0_9"} {
		if err := ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v", name, err)
		}
	}
	long := make([]byte, 81)
	for i := range long {
		long[i] = 'a'
	}
	for _, name := range []string{"", "has space", "slash/q", "ü", string(long)} {
		if err := ValidateName(name); err == nil {
			t.Errorf("ValidateName(%q) accepted a bad name", name)
		}
	}
}

func TestAllowsAndRetryDelay(t *testing.T) {
	c := Config{Targets: []string{"https://api.example.com/*", "lambda:mailer"}, Backoff: time.Second, MaxBackoff: 5 * time.Second}
	cases := map[string]bool{
		"https://api.example.com/hook": true, "https://api.example.org/": false,
		"lambda:mailer": true, "lambda:mailer2": false,
	}
	for target, want := range cases {
		if c.Allows(target) != want {
			t.Errorf("Allows(%q) = %v, want %v", target, !want, want)
		}
	}
	for next, want := range map[int]time.Duration{2: time.Second, 3: 2 * time.Second, 4: 4 * time.Second, 5: 5 * time.Second, 30: 5 * time.Second} {
		if got := c.RetryDelay(next); got != want {
			t.Errorf("RetryDelay(%d) = %v, want %v", next, got, want)
		}
	}
}

// FuzzTake checks the slot invariants over any sequence of takes and
// starts: tickets are contiguous and increasing, the clock never moves
// back, line slots are an interval apart and never before now.
func FuzzTake(f *testing.F) {
	f.Add(int64(1000), []byte{3, 3, 1, 0, 200, 5})
	f.Add(int64(1), []byte{1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, ivMs int64, ops []byte) {
		if ivMs <= 0 || ivMs > 1e7 {
			t.Skip()
		}
		iv := time.Duration(ivMs) * time.Millisecond
		st := State{}
		now := t0
		for i := 0; i+1 < len(ops); i += 2 {
			n := int(ops[i]%20) + 1
			line := int(ops[i+1]) % (n + 1)
			now = now.Add(time.Duration(ops[i+1]) * time.Millisecond * 7)
			prev := st
			next, first, slots := Take(st, n, line, Every(iv), 0, now)
			if first != prev.Ticket+1 || next.Ticket != prev.Ticket+int64(n) {
				t.Fatalf("tickets not contiguous: %+v -> %+v first %d", prev, next, first)
			}
			if next.Clock.Before(prev.Clock) {
				t.Fatalf("clock moved back: %v -> %v", prev.Clock, next.Clock)
			}
			if line > 0 {
				firstSlot := slots[0]
				if firstSlot.Before(now) {
					t.Fatalf("slot %v before now %v", firstSlot, now)
				}
				if !prev.Clock.IsZero() && firstSlot.Sub(prev.Clock) < iv {
					t.Fatalf("slot %v closer than %v to clock %v", firstSlot, iv, prev.Clock)
				}
				if got := next.Clock.Sub(firstSlot); got != time.Duration(line-1)*iv {
					t.Fatalf("line spans %v, want %v", got, time.Duration(line-1)*iv)
				}
			}
			st = next
			if ops[i]%3 == 0 {
				started := Started(st, st.Ticket, Every(iv), now)
				if started.Current < st.Current || started.LastStart.Before(st.LastStart) || started.Clock.Before(st.Clock) {
					t.Fatalf("Started moved back: %+v -> %+v", st, started)
				}
				st = started
			}
		}
	})
}

func TestConfigJSON(t *testing.T) {
	var c Config
	if err := c.UnmarshalJSON([]byte(`{"interval":"250ms","max_attempts":5,"targets":["https://x/*"]}`)); err != nil {
		t.Fatal(err)
	}
	if c.Interval != 250*time.Millisecond || c.MaxAttempts != 5 || len(c.Targets) != 1 {
		t.Fatalf("decoded %+v", c)
	}
	for body, field := range map[string]string{
		`{"intervall":"1s"}`:  "intervall",
		`{"interval":"0s"}`:   "interval",
		`{"interval":"-2ms"}`: "interval",
	} {
		err := c.UnmarshalJSON([]byte(body))
		ie, ok := err.(*input.Error)
		if !ok || ie.Field != field {
			t.Errorf("UnmarshalJSON(%s) = %v; want an input.Error on %s", body, err, field)
		}
	}
	if got := (Config{}).Or(Config{Interval: time.Minute, Targets: []string{"lambda:x"}}); got.Interval != time.Minute || got.Targets[0] != "lambda:x" {
		t.Fatalf("Or = %+v", got)
	}
}

// A configuration that leaves its interval to the default round-trips:
// the zero interval is left out, not written as "0s" (which reads as an
// error).
func TestConfigJSONZeroInterval(t *testing.T) {
	b, err := Config{MaxAttempts: 4}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	if err := c.UnmarshalJSON(b); err != nil {
		t.Fatalf("UnmarshalJSON(%s): %v", b, err)
	}
	if c.Interval != 0 || c.MaxAttempts != 4 {
		t.Fatalf("round trip of %s = %+v", b, c)
	}
}

// Every field of Config survives its JSON, the form the stores keep it in:
// a field left out of the wire form would be dropped silently on the way
// to DynamoDB.
func TestConfigJSONRoundTripsEveryField(t *testing.T) {
	want := Config{
		Interval: 2 * time.Second, Skew: 3 * time.Millisecond, MaxAttempts: 4, Backoff: 5 * time.Second,
		MaxBackoff: 6 * time.Minute, Retention: 7 * time.Hour, Targets: []string{"https://x/*"},
		AllowNetworks: []string{"10.0.0.0/8"}, TargetTimeout: 8 * time.Second, MaxRunning: 9,
		// Not a valid limit (one form only), but every field must travel.
		Rate: api.Rate{N: 100, Per: time.Minute}, Burst: 10, Window: api.Rate{N: 5000, Per: time.Hour},
		Limits:        []api.Limit{{Interval: time.Second}, {Rate: api.Rate{N: 3, Per: 90 * time.Second}, Burst: 2}, {Window: api.Rate{N: 7, Per: 1500 * time.Millisecond}}},
		KeyLimits:     []api.Limit{{Rate: api.Rate{N: 5, Per: time.Second}, Burst: 1}, {Window: api.Rate{N: 100, Per: time.Hour}}},
		KeyMaxRunning: NoKeyCap,
		MaxSlowDowns:  11, RetryAfterDefault: 1500 * time.Millisecond,
		BookAhead: 12, KeyBookAhead: 13, BatchMax: 14, BatchWait: 15 * time.Millisecond,
	}
	v := reflect.ValueOf(want)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test leaves Config.%s zero: give it a value", v.Type().Field(i).Name)
		}
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got Config
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip through %s:\n got %+v\nwant %+v", b, got, want)
	}
}
