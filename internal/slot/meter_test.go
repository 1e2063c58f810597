package slot

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/pkg/api"
)

// KeyGate keeps a key's limit on the starts the queue's gate reserved,
// in ticket order: a start too soon is early (with the key's opening), a
// lower ticket after a higher one is overtaken, and the ticket that
// started last may start again (a crash between the key's record and the
// claim).
func TestKeyGate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ls := Limits{{Rate: api.Rate{N: 2, Per: time.Second}, Burst: 1}} // T = 500ms
	skew := 10 * time.Millisecond
	m := Meter{Queue: "q", Key: "k"}
	var v KeyVerdict
	if m, v, _ = KeyGate(m, 1, ls, skew, t0); v != KeyStart {
		t.Fatalf("first start: %v", v)
	}
	// Burst 1: a second start at once passes, a third waits a period.
	if m, v, _ = KeyGate(m, 2, ls, skew, t0); v != KeyStart {
		t.Fatalf("burst start: %v", v)
	}
	_, v, open := KeyGate(m, 3, ls, skew, t0.Add(100*time.Millisecond))
	if want := t0.Add(500 * time.Millisecond); v != KeyEarly || !open.Equal(want) {
		t.Fatalf("third start at +100ms: %v, opens %v; want early, opens %v", v, open, want)
	}
	if _, v, _ = KeyGate(m, 1, ls, skew, t0.Add(time.Hour)); v != KeyOvertaken {
		t.Fatalf("ticket 1 after ticket 2: %v, want overtaken", v)
	}
	if _, v, _ = KeyGate(m, 2, ls, skew, t0.Add(time.Hour)); v != KeyStart {
		t.Fatalf("ticket 2 again: %v, want start", v)
	}
	if got := KeyOpen(m, ls, skew); !got.Equal(open) {
		t.Fatalf("KeyOpen = %v, want %v", got, open)
	}
}

// KeySlot is the key's own clock: the job with k jobs of its key ahead
// starts after theirs, each at its opening.
func TestKeySlot(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ls := Limits{{Rate: api.Rate{N: 2, Per: time.Second}}}
	m := Meter{}
	for k, want := range []time.Duration{0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond} {
		if got := KeySlot(m, ls, int64(k), t0); !got.Equal(t0.Add(want)) {
			t.Errorf("KeySlot with %d ahead = +%v, want +%v", k, got.Sub(t0), want)
		}
	}
	m, _, _ = KeyGate(m, 1, ls, 0, t0)
	if got := KeySlot(m, ls, 0, t0); !got.Equal(t0.Add(500 * time.Millisecond)) {
		t.Errorf("KeySlot after a start = +%v, want +500ms", got.Sub(t0))
	}
	w := Limits{{Window: api.Rate{N: 2, Per: time.Second}}}
	for k, want := range []time.Duration{0, 0, time.Second, time.Second, 2 * time.Second} {
		if got := KeySlot(Meter{}, w, int64(k), t0); !got.Equal(t0.Add(want)) {
			t.Errorf("window: KeySlot with %d ahead = +%v, want +%v", k, got.Sub(t0), want)
		}
	}
}

// Bad keyed limits are typed errors naming the field.
func TestKeyLimitValidation(t *testing.T) {
	for _, c := range []struct {
		json, field string
	}{
		{`{"key_limits": [{"rate": "0/1s"}]}`, "key_limits[0].rate"},
		{`{"key_limits": [{"rate": "5/1s"}, {"window": "fast"}]}`, "key_limits[1].window"},
		{`{"key_limits": [{"interval": "1s", "rate": "1/1s"}]}`, "key_limits[0]"},
		{`{"key_limits": [{"burst": 3}]}`, "key_limits[0]"},
		{`{"key_limits": [{"rate": "1/1s"}, {"rate": "2/1s"}, {"rate": "3/1s"}, {"rate": "4/1s"}]}`, "key_limits"},
		{`{"key_limits": [{"interval": "1ms"}], "skew": "5ms"}`, "key_limits[0]"},
		{`{"key_max_running": 101, "key_limits": [{"rate": "1/1s"}]}`, "key_max_running"},
		{`{"key_max_running": -1}`, "key_max_running"},
		{`{"key_max_running": 0}`, "key_max_running"},
	} {
		var cfg Config
		err := json.Unmarshal([]byte(c.json), &cfg)
		if err == nil {
			err = cfg.WithDefaults().Validate()
		}
		var ie *input.Error
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: error %v, want one naming %q", c.json, err, c.field)
		}
	}
	var ok Config
	if err := json.Unmarshal([]byte(`{"rate": "200/1s", "key_limits": [{"rate": "2/1s", "burst": 1}], "key_max_running": 0}`), &ok); err != nil {
		t.Fatal(err)
	}
	if err := ok.WithDefaults().Validate(); err != nil || ok.KeyCap() != 0 || !ok.Keyed() {
		t.Fatalf("valid keyed config: %v, cap %d, keyed %v", err, ok.KeyCap(), ok.Keyed())
	}
}
