package slot

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/input"
)

func TestDurationJSON(t *testing.T) {
	good := map[string]time.Duration{
		`"500ms"`: 500 * time.Millisecond, `"1h30m"`: 90 * time.Minute, `"1.5ms"`: 1500 * time.Microsecond,
		`"-1s"`: -time.Second, `"0"`: 0, `"1h2m3s4ms5us6ns"`: time.Hour + 2*time.Minute + 3*time.Second + 4*time.Millisecond + 5*time.Microsecond + 6,
		`"2µs"`: 2 * time.Microsecond,
	}
	for in, want := range good {
		var d Duration
		if err := d.UnmarshalJSON([]byte(in)); err != nil || time.Duration(d) != want {
			t.Errorf("Duration(%s) = %v, %v; want %v", in, time.Duration(d), err, want)
		}
		// Written, it reads back the same.
		b, err := d.MarshalJSON()
		var back Duration
		if err != nil || back.UnmarshalJSON(b) != nil || back != d {
			t.Errorf("Duration(%s) written as %s, %v; read back as %v", in, b, err, time.Duration(back))
		}
	}
	for _, in := range []string{`true`, `1e309`, `9.3e15`, `-9.3e15`, `"9999999999h"`, `"soon"`, `null`, `{}`, `[]`, `""`,
		`5`, `0`, `-1`, `1.5`, `"1h1h"`, `"1s1s"`, `"30m1h"`, `"1ms1s"`, `"1us2µs"`, `"5"`} {
		var d Duration
		err := d.UnmarshalJSON([]byte(in))
		var ie *input.Error
		if !errors.As(err, &ie) || ie.Code != "invalid_duration" {
			t.Errorf("Duration(%s) = %v, %v; want an invalid_duration Error", in, time.Duration(d), err)
		}
	}
}

// A number is refused with a message that says what to give instead, and
// a repeated unit is refused rather than added up.
func TestDurationMessages(t *testing.T) {
	tests := map[string]string{
		`5`:         `5 is a number; a duration is a string with its unit: give a string such as "5s"`,
		`"1h1h"`:    `"1h1h" gives the unit h twice`,
		`"1m30m"`:   `"1m30m" gives the unit m twice`,
		`"30m1h"`:   `"30m1h" gives h after m`,
		`"1µs1us"`:  `"1µs1us" gives the unit us twice`,
		`"1ms1m"`:   `"1ms1m" gives m after ms`,
		`"soon"`:    `"soon" is not a duration`,
		`"1.5h.5h"`: `"1.5h.5h" gives the unit h twice`,
	}
	for in, want := range tests {
		var d Duration
		err := d.UnmarshalJSON([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Duration(%s) = %v; want an error saying %q", in, err, want)
		}
	}
}

// Config errors name the setting by its path; unknown settings are refused
// in any letter case.
func TestDecodeConfigPaths(t *testing.T) {
	tests := []struct{ body, code, field string }{
		{`{"interval":true}`, "invalid_duration", "interval"},
		{`{"interval":"1s","Interval":"2s"}`, "unknown_field", "Interval"},
		{`{"INTERVAL":"1s"}`, "unknown_field", "INTERVAL"},
		{`{"targets":["a",7]}`, "invalid_type", "targets[1]"},
		{`{"targets":"https://x/*"}`, "invalid_type", "targets"},
		{`{"max_attempts":1.5}`, "invalid_type", "max_attempts"},
		{`{"max_attempts":99999999999999999999}`, "invalid_type", "max_attempts"},
		{`{"skew":"1s","skew":"2s"}`, "duplicate_field", "skew"},
		{`{"interval":"0s"}`, "invalid_interval", "interval"},
		{`{"interval":5}`, "invalid_duration", "interval"},
		{`{"interval":"1h1h"}`, "invalid_duration", "interval"},
		{`{"rate":"100/1h1h"}`, "invalid_rate", "rate"},
		{`{"window":"100/30m1h"}`, "invalid_rate", "window"},
		{`{"limits":[{"rate":"5/1s1s"}]}`, "invalid_rate", "limits[0].rate"},
		{`{"limits":[{"interval":"1s1s"}]}`, "invalid_duration", "limits[0].interval"},
		{`{"limits":[]}`, "invalid_limit", "limits"},
		{`{"key_limits":[]}`, "", ""},
		{`{"interval":"-1s"}`, "invalid_interval", "interval"},
		{`{"skew":"0s"}`, "invalid_skew", "skew"},
		{`{"skew":0}`, "invalid_duration", "skew"},
		{`{"max_attempts":0}`, "invalid_max_attempts", "max_attempts"},
		{`{"backoff":"0s"}`, "invalid_backoff", "backoff"},
		{`{"max_backoff":"0ms"}`, "invalid_backoff", "max_backoff"},
		{`{"retention":"0h"}`, "invalid_retention", "retention"},
		{`{"target_timeout":"0"}`, "invalid_target_timeout", "target_timeout"},
		{`{"max_running":0}`, "", ""},
		{`{"a.b":1}`, "unknown_field", `["a.b"]`},
		{`"1s"`, "invalid_type", "body"},
		{`{"interval":null}`, "", ""},
	}
	for _, tt := range tests {
		var c Config
		err := input.Decode([]byte(tt.body), &c)
		if tt.code == "" {
			if err != nil {
				t.Errorf("Decode(%s) = %v; want ok", tt.body, err)
			}
			continue
		}
		var ie *input.Error
		if !errors.As(err, &ie) || ie.Code != tt.code || ie.Field != tt.field {
			t.Errorf("Decode(%s) = %v; want %s on %s", tt.body, err, tt.code, tt.field)
		}
	}
}

// An interval below MinInterval is refused on create and configure (by
// Validate), whatever way it was given; MinInterval itself is kept.
func TestIntervalFloor(t *testing.T) {
	for iv, ok := range map[time.Duration]bool{
		time.Nanosecond: false, MinInterval - 1: false, -time.Second: false,
		MinInterval: true, MaxInterval: true, MaxInterval + 1: false,
	} {
		err := Config{Interval: iv}.WithDefaults().Validate()
		var ie *input.Error
		switch {
		case ok && err != nil:
			t.Errorf("Validate(interval %s) = %v; want ok", iv, err)
		case !ok && (!errors.As(err, &ie) || ie.Code != "invalid_interval" || ie.Field != "interval"):
			t.Errorf("Validate(interval %s) = %v; want invalid_interval on interval", iv, err)
		}
	}
}

// Every setting whose zero would be read as "the default" is refused when
// given as zero, with a typed error naming it; max_running 0 is its own
// setting (no cap).
func TestZeroSetting(t *testing.T) {
	for _, f := range []string{"interval", "skew", "max_attempts", "backoff", "max_backoff", "retention", "target_timeout"} {
		if err := ZeroSetting(f); err == nil || err.Field != f || !strings.HasPrefix(err.Code, "invalid_") {
			t.Errorf("ZeroSetting(%s) = %v; want an error on %s", f, err, f)
		}
	}
	if err := ZeroSetting("max_running"); err != nil {
		t.Errorf("ZeroSetting(max_running) = %v; want nil (0 is no cap)", err)
	}
}

// ParseDuration accepts nothing time.ParseDuration refuses, reads what it
// accepts as time.ParseDuration does, and accepts every duration as
// Duration writes it (time.Duration.String), so no stored configuration
// becomes unreadable.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1h30m", "1h1h", "30m1h", "500ms", "1.5µs", "-2s", "0", "1e3s", ".5h", "1h0.5m"} {
		f.Add(s, int64(0))
	}
	f.Add("", int64(time.Hour+time.Nanosecond))
	f.Add("", int64(-1500))
	f.Fuzz(func(t *testing.T, s string, n int64) {
		got, err := ParseDuration(s)
		want, werr := time.ParseDuration(s)
		if err == nil && (werr != nil || got != want) {
			t.Fatalf("ParseDuration(%q) = %v; time.ParseDuration = %v, %v", s, got, want, werr)
		}
		w := time.Duration(n).String()
		if d, err := ParseDuration(w); err != nil || d != time.Duration(n) {
			t.Fatalf("ParseDuration(%q) = %v, %v; want %v", w, d, err, time.Duration(n))
		}
	})
}
