package slot

import (
	"errors"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/input"
)

func TestSlowDown(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := SlowDown(State{}, 7, at(10*time.Second), at(11*time.Second), "")
	if !s.SlowUntil.Equal(at(10*time.Second)) || s.SlowTicket != 7 || s.SlowDowns != 1 {
		t.Fatalf("first: %+v", s)
	}
	if got := SlowDown(s, 9, at(5*time.Second), at(6*time.Second), ""); !got.SlowUntil.Equal(s.SlowUntil) || got.SlowTicket != 7 || got.SlowDowns != 2 {
		t.Fatalf("a sooner end moved the slow-down: %+v", got)
	}
	for _, tt := range []struct {
		name   string
		ticket int64
		at     time.Time
		want   time.Time
	}{
		{"before the end", 8, at(9 * time.Second), at(10 * time.Second)},
		{"the answered ticket before the end", 7, at(9 * time.Second), at(10 * time.Second)},
		{"the answered ticket at the end", 7, at(10 * time.Second), time.Time{}},
		{"another at the end waits for it", 8, at(10 * time.Second), at(11 * time.Second)},
		{"another at the hold's end", 8, at(11 * time.Second), time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SlowOpen(s, tt.ticket, tt.at); !got.Equal(tt.want) {
				t.Fatalf("SlowOpen(ticket %d, +%v) = %v, want %v", tt.ticket, tt.at.Sub(t0), got, tt.want)
			}
		})
	}
	a := Answered(s, 7)
	if got := SlowOpen(a, 8, at(10*time.Second)); !got.IsZero() {
		t.Fatalf("after the answered ticket started, another at the end is held until %v", got)
	}
	if Answered(s, 8).SlowTicket != 7 {
		t.Fatal("another ticket's start cleared the answered one")
	}
	// A line ticket the slow-down made late is not late by its worker:
	// its due start is the slow-down's end, or the hold's while the
	// answered ticket has not started.
	ls := Every(time.Second)
	st := State{LastStart: at(0), Clock: at(20 * time.Second)}
	st = SlowDown(st, 1, at(10*time.Second), at(11*time.Second), "")
	if d := Due(st, at(2*time.Second), ls); !d.Equal(at(11 * time.Second)) {
		t.Fatalf("Due during the hold = +%v, want +11s", d.Sub(t0))
	}
	if Missed(st, at(2*time.Second), at(11*time.Second), ls, time.Millisecond) {
		t.Fatal("a ticket the slow-down held counts as missed")
	}
	if d := Due(Answered(st, 1), at(2*time.Second), ls); !d.Equal(at(10 * time.Second)) {
		t.Fatalf("Due after the answered start = +%v, want +10s", d.Sub(t0))
	}
}

func TestSlowDownConfig(t *testing.T) {
	for _, tt := range []struct {
		name, json, field string
	}{
		{"max_slow_downs 0", `{"max_slow_downs": 0}`, "max_slow_downs"},
		{"max_slow_downs too many", `{"max_slow_downs": 1001}`, "max_slow_downs"},
		{"max_slow_downs negative", `{"max_slow_downs": -1}`, "max_slow_downs"},
		{"retry_after_default 0", `{"retry_after_default": "0s"}`, "retry_after_default"},
		{"retry_after_default too long", `{"retry_after_default": "13h"}`, "retry_after_default"},
		{"retry_after_default below 1ms", `{"retry_after_default": "10us"}`, "retry_after_default"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			err := c.UnmarshalJSON([]byte(tt.json))
			if err == nil {
				err = c.WithDefaults().Validate()
			}
			var e *input.Error
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Fatalf("%s: %v; want an input error on %s", tt.json, err, tt.field)
			}
		})
	}
	c := Config{}.WithDefaults()
	if c.MaxSlowDowns != DefaultMaxSlowDowns || c.RetryAfterDefault != DefaultRetryAfter || c.Validate() != nil {
		t.Fatalf("defaults %d %v: %v", c.MaxSlowDowns, c.RetryAfterDefault, c.Validate())
	}
}

// An answer is counted once, whatever other tickets' answers came
// between; the tickets of one slot (eight apart) take it in turn.
func TestSlowDownCountsAnAnswerOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := SlowDown(State{}, 3, t0.Add(time.Second), t0.Add(2*time.Second), "3.1.0")
	s = SlowDown(s, 4, t0.Add(time.Second), t0.Add(2*time.Second), "4.1.0")
	s = SlowDown(s, 3, t0.Add(time.Second), t0.Add(2*time.Second), "3.1.0")
	if s.SlowDowns != 2 || !SlowCounted(s, 3, "3.1.0") || SlowCounted(s, 3, "3.1.1") {
		t.Fatalf("%d counted, seen %q; want 2", s.SlowDowns, s.SlowSeen)
	}
	s = SlowDown(s, 3+SlowSeenSlots, t0.Add(time.Second), t0.Add(2*time.Second), "11.1.0")
	if s.SlowDowns != 3 || SlowCounted(s, 3, "3.1.0") {
		t.Fatalf("ticket 11 in ticket 3's slot: %d counted, seen %q", s.SlowDowns, s.SlowSeen)
	}
	if s = SlowDown(s, 5, t0, t0, ""); s.SlowDowns != 4 {
		t.Fatalf("an answer without a name: %d counted; want 4", s.SlowDowns)
	}
}
