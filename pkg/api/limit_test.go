package api

import (
	"strings"
	"testing"
	"time"
)

// ParseLimit reads what Limit.String writes, and refuses what is not a
// limit with an error that says what to write.
func TestParseLimit(t *testing.T) {
	tests := []struct {
		in      string
		want    Limit
		wantErr string
	}{
		{in: "interval 1s", want: Limit{Interval: time.Second}},
		{in: "  rate 100/1m ", want: Limit{Rate: Rate{N: 100, Per: time.Minute}}},
		{in: "rate 100/1m burst 10", want: Limit{Rate: Rate{N: 100, Per: time.Minute}, Burst: 10}},
		{in: "window 5000/1h", want: Limit{Window: Rate{N: 5000, Per: time.Hour}}},
		{in: "", wantErr: "no limit"},
		{in: "rate", wantErr: "is not a limit"},
		{in: "rate 100/1m burst", wantErr: "is not a limit"},
		{in: "rate 100/1m bursts 10", wantErr: "is not a limit"},
		{in: "rate 100/1m burst -1", wantErr: "burst must be a whole number"},
		{in: "rate 100/1m burst ten", wantErr: "burst must be a whole number"},
		{in: "window 5000/1h burst 2", wantErr: "is not a limit"},
		{in: "rate 100", wantErr: "is not a rate"},
		{in: "window 100/60", wantErr: "period after the slash"},
		{in: "interval soon", wantErr: "interval must be a duration"},
		{in: "interval 1s1s", wantErr: "gives the unit s twice"},
		{in: "rate 100/1h1h", wantErr: "gives the unit h twice"},
		{in: "window 100/30m1h", wantErr: "gives h after m"},
		{in: "interval -1s", wantErr: "interval must be a duration"},
		{in: "every 1s", wantErr: "is not a limit"},
		{in: "100/1m", wantErr: "is not a limit"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLimit(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if back, err := ParseLimit(got.String()); err != nil || back != got {
				t.Errorf("%q read back as %+v, %v", got.String(), back, err)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	ls, err := ParseLimits("rate 10/1s burst 2; window 1000/1h")
	want := []Limit{{Rate: Rate{N: 10, Per: time.Second}, Burst: 2}, {Window: Rate{N: 1000, Per: time.Hour}}}
	if err != nil || len(ls) != 2 || ls[0] != want[0] || ls[1] != want[1] {
		t.Errorf("got %+v, %v; want %+v", ls, err, want)
	}
	if _, err := ParseLimits("rate 10/1s;"); err == nil || !strings.Contains(err.Error(), "no limit") {
		t.Errorf("a trailing semicolon: %v", err)
	}
}
