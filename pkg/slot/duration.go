package slot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/slotq/slotq/pkg/input"
)

// Duration is a time.Duration that travels in JSON as a Go duration string
// ("500ms", "2s", "1h30m"). A bare number is read as milliseconds.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of milliseconds. Its
// error is an *input.Error (code invalid_duration) whose Field is left for
// the caller to fill: input.Decode puts the path of the value there.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	bad := func(msg string) error { return &input.Error{Code: "invalid_duration", Message: msg} }
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return bad("want a duration such as \"500ms\" or a number of milliseconds")
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return bad(fmt.Sprintf("%q is not a duration such as \"500ms\" or \"1h30m\" (at most %s)", input.Truncate(s, 40), time.Duration(math.MaxInt64)))
		}
		*d = Duration(v)
		return nil
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		ms, err := strconv.ParseFloat(string(b), 64)
		ns := ms * float64(time.Millisecond)
		if err != nil || math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
			return bad(fmt.Sprintf("%s milliseconds is out of range", input.Truncate(string(b), 40)))
		}
		*d = Duration(math.Round(ns))
		return nil
	}
	return bad(fmt.Sprintf("want a duration such as \"500ms\" or a number of milliseconds, got %s", input.JSONKind(b)))
}

type configJSON struct {
	Interval      *Duration `json:"interval,omitempty"`
	Skew          Duration  `json:"skew,omitempty"`
	MaxAttempts   int       `json:"max_attempts,omitempty"`
	Backoff       Duration  `json:"backoff,omitempty"`
	MaxBackoff    Duration  `json:"max_backoff,omitempty"`
	Retention     Duration  `json:"retention,omitempty"`
	Targets       []string  `json:"targets,omitempty"`
	AllowNetworks []string  `json:"allow_networks,omitempty"`
	TargetTimeout Duration  `json:"target_timeout,omitempty"`
	MaxRunning    int       `json:"max_running,omitempty"`
}

// MarshalJSON writes durations as strings.
func (c Config) MarshalJSON() ([]byte, error) {
	var iv *Duration // left out when zero: "the default", as UnmarshalJSON reads it
	if c.Interval != 0 {
		d := Duration(c.Interval)
		iv = &d
	}
	return json.Marshal(configJSON{
		Interval: iv, Skew: Duration(c.Skew), MaxAttempts: c.MaxAttempts,
		Backoff: Duration(c.Backoff), MaxBackoff: Duration(c.MaxBackoff), Retention: Duration(c.Retention),
		Targets: c.Targets, AllowNetworks: c.AllowNetworks, TargetTimeout: Duration(c.TargetTimeout),
		MaxRunning: c.MaxRunning,
	})
}

// UnmarshalJSON reads a configuration strictly, by Decode: unknown fields
// (in any letter case) are errors, durations are strings (or
// milliseconds), and an interval given as zero or less is an error (an
// absent one means the default). Errors name the field relative to the
// configuration ("interval", "targets[2]").
func (c *Config) UnmarshalJSON(b []byte) error {
	var w configJSON
	if err := input.Decode(b, &w); err != nil {
		return err
	}
	var iv time.Duration
	if w.Interval != nil {
		if iv = time.Duration(*w.Interval); iv <= 0 {
			return input.Invalid("invalid_interval", "interval", "interval must be greater than 0")
		}
	}
	*c = Config{
		Interval: iv, Skew: time.Duration(w.Skew), MaxAttempts: w.MaxAttempts,
		Backoff: time.Duration(w.Backoff), MaxBackoff: time.Duration(w.MaxBackoff), Retention: time.Duration(w.Retention),
		Targets: w.Targets, AllowNetworks: w.AllowNetworks, TargetTimeout: time.Duration(w.TargetTimeout),
		MaxRunning: w.MaxRunning,
	}
	return nil
}
