package timeline

import (
	"encoding/json"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"reflect"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2024, 11, 21, 14, 40, 0, 123_000_000, time.UTC)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// at builds starts of tickets 1.. at the given offsets (ms) from t0, each
// with its slot at t0 + (ticket−1)·10ms.
func at(offsets ...float64) []Start {
	s := make([]Start, len(offsets))
	for i, o := range offsets {
		s[i] = Start{Queue: "q", Ticket: int64(i + 1), SlotAt: t0.Add(time.Duration(i) * 10 * time.Millisecond), At: t0.Add(ms(o))}
	}
	return s
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", []time.Duration{7}, 99, 7},
		{"p0 is min", []time.Duration{3, 1, 2}, 0, 1},
		{"p50 odd", []time.Duration{5, 1, 3}, 50, 3},
		{"p50 even takes lower", []time.Duration{4, 1, 3, 2}, 50, 2},
		{"p99 of 100 is 99th", seq(100), 99, 99},
		{"p99 of 10 is max", seq(10), 99, 10},
		{"p100 is max", []time.Duration{2, 9, 4}, 100, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.ds)
			if got := Percentile(tt.ds, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.ds, tt.p, got, tt.want)
			}
			if !slices.Equal(in, tt.ds) {
				t.Errorf("Percentile reordered its input")
			}
		})
	}
}

func seq(n int) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = time.Duration(n - i) // descending, to test sorting
	}
	return s
}

func TestInversions(t *testing.T) {
	tests := []struct {
		name    string
		tickets []int64
		want    int
	}{
		{"none", []int64{1, 2, 3}, 0},
		{"empty", nil, 0},
		{"gaps are fine", []int64{1, 5, 9}, 0},
		{"one late low ticket", []int64{1, 3, 2, 4}, 1},
		{"each start below the high mark counts", []int64{5, 1, 2, 3, 6}, 3},
		{"equal tickets are not inversions", []int64{2, 2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := make([]Start, len(tt.tickets))
			for i, tk := range tt.tickets {
				s[i] = Start{Ticket: tk}
			}
			if got := Inversions(s); got != tt.want {
				t.Errorf("Inversions(%v) = %d, want %d", tt.tickets, got, tt.want)
			}
		})
	}
}

func TestViolations(t *testing.T) {
	// starts turns offsets in ms into times.
	starts := func(offs ...float64) []time.Time {
		out := make([]time.Time, len(offs))
		for i, o := range offs {
			out[i] = t0.Add(ms(o))
		}
		return out
	}
	tests := []struct {
		name           string
		at             []time.Time
		interval, skew time.Duration
		want           int
	}{
		{"exact interval is fine", starts(0, 10, 20), ms(10), 0, 0},
		{"one short", starts(0, 10, 19.999), ms(10), 0, 1},
		{"skew allows a little", starts(0, 9.5, 19), ms(10), ms(1), 0},
		{"beyond skew", starts(0, 8.9), ms(10), ms(1), 1},
		{"a late start, then on time again", starts(0, 25, 35, 45), ms(10), 0, 0},
		// Each gap is within skew of the interval, but the run is a
		// burst: four starts in 27 ms where 30 − skew = 29 is the least.
		{"a burst of neighbours each within skew", starts(0, 9, 18, 27), ms(10), ms(1), 2},
		{"none", nil, ms(10), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Violations(tt.at, tt.interval, tt.skew); got != tt.want {
				t.Errorf("Violations = %d, want %d", got, tt.want)
			}
		})
	}
}

var every10 = slot.Every(10 * time.Millisecond)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name  string
		start []Start
		want  Summary
	}{
		{
			name:  "empty",
			start: nil,
			want:  Summary{Limits: every10},
		},
		{
			name:  "one start",
			start: at(0.5),
			want:  Summary{Starts: 1, Limits: every10, LatenessP50: ms(0.5), LatenessP99: ms(0.5), LatenessMax: ms(0.5)},
		},
		{
			name:  "on time",
			start: at(0, 10, 20, 30),
			want:  Summary{Starts: 4, Limits: every10, SpacingMin: ms(10), SpacingP50: ms(10), Makespan: ms(30), Ideal: ms(30)},
		},
		{
			name:  "late and spread",
			start: at(1, 12, 25, 31),
			want: Summary{
				Starts: 4, Limits: every10, SpacingMin: ms(6), SpacingP50: ms(11),
				LatenessP50: ms(1), LatenessP99: ms(5), LatenessMax: ms(5),
				Violations: 1, Makespan: ms(30), Ideal: ms(30),
			},
		},
		{
			name: "given out of order, inverted",
			// Ticket 2 starts after ticket 3.
			start: func() []Start { s := at(0, 25, 10); return []Start{s[2], s[0], s[1]} }(),
			want: Summary{
				Starts: 3, Limits: every10, SpacingMin: ms(10), SpacingP50: ms(10),
				LatenessP50: ms(0), LatenessP99: ms(15), LatenessMax: ms(15),
				Inversions: 1, Makespan: ms(25), Ideal: ms(20),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.start, every10, 0)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Summarize:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	if r := (Summary{Makespan: ms(33), Ideal: ms(30)}).Ratio(); r < 1.0999 || r > 1.1001 {
		t.Errorf("Ratio = %v, want 1.1", r)
	}
	if r := (Summary{}).Ratio(); r != 0 {
		t.Errorf("Ratio of nothing = %v, want 0", r)
	}
}

func TestStartJSON(t *testing.T) {
	s := Start{
		Queue: "q", Ticket: 17, JobID: "abc", Producer: "p3", Worker: "w1",
		SlotAt:    time.UnixMilli(1732200000123).Add(456 * time.Microsecond).UTC(),
		Gate:      time.UnixMilli(1732200000123).Add(456 * time.Microsecond).UTC(),
		At:        time.UnixMilli(1732200000124).Add(370 * time.Microsecond).UTC(),
		Retickets: 2,
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"queue":"q","ticket":17,"job_id":"abc","producer":"p3","worker":"w1","slot_at_ms":1732200000123.456,"gate_ms":1732200000123.456,"start_ms":1732200000124.370,"retickets":2}`
	if string(b) != want {
		t.Fatalf("Marshal:\n got %s\nwant %s", b, want)
	}
	var back Start
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	wantBack := s // microseconds on the wire, as here
	if back != wantBack {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, wantBack)
	}
}

func TestParseMS(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"1732200000124", time.UnixMilli(1732200000124), false},
		{"1732200000124.37", time.UnixMilli(1732200000124).Add(370 * time.Microsecond), false},
		{"1732200000124.0000019", time.UnixMilli(1732200000124).Add(1 * time.Nanosecond), false},
		{"-1.5", time.Unix(0, -1_500_000), false},
		{"1.5e3", time.Unix(0, 1_500_000_000), false},
		{"", time.Time{}, true},
		{"abc", time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseMS(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseMS(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if err == nil && !got.Equal(tt.want) {
				t.Errorf("parseMS(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestAtGateAndDelays(t *testing.T) {
	s := at(1, 12)
	s[0].Gate = t0
	got := AtGate(s)
	if !got[0].At.Equal(t0) || !got[1].At.Equal(s[1].At) {
		t.Errorf("AtGate: got At %v, %v; want %v and the handler time %v", got[0].At, got[1].At, t0, s[1].At)
	}
	if !s[0].At.Equal(t0.Add(ms(1))) {
		t.Errorf("AtGate changed its input")
	}
	if d := Delays(s); len(d) != 1 || d[0] != ms(1) {
		t.Errorf("Delays = %v, want [1ms] (only starts with a gate time)", d)
	}
}

func TestMostAtOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// Two at once through 1–4 (a run that ends as another begins is not
	// two at once), three from 3 to 4.
	spans := []Span{{at(0), at(4)}, {at(1), at(2)}, {at(2), at(3)}, {at(3), at(6)}, {at(3), at(4)}, {at(4), at(5)}}
	if got := MostAtOnce(spans); got != 3 {
		t.Fatalf("MostAtOnce = %d, want 3", got)
	}
	if got := MostAtOnce(nil); got != 0 {
		t.Fatalf("MostAtOnce(nil) = %d", got)
	}
}

// A rate with a burst: its burst at once is no violation, one more is;
// the ideal makespan is the form's.
func TestSummarizeRate(t *testing.T) {
	ls := slot.Limits{{Rate: api.Rate{N: 100, Per: time.Second}, Burst: 2}}
	sum := Summarize(at(0, 0, 0, 10, 20, 30), ls, 0)
	if sum.Violations != 0 || sum.Ideal != ms(30) || sum.Makespan != ms(30) {
		t.Errorf("burst then paced: %+v", sum)
	}
	if sum := Summarize(at(0, 0, 0, 0), ls, 0); sum.Violations != 1 {
		t.Errorf("one over the burst: %d violations, want 1", sum.Violations)
	}
	w := slot.Limits{{Window: api.Rate{N: 3, Per: time.Second}}}
	if got := Ideal(w, 7); got != 2*time.Second {
		t.Errorf("ideal of 7 starts at 3 per 1s = %v, want 2s", got)
	}
}
