package slot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration that travels in JSON as a Go duration string
// ("500ms", "2s", "1h30m"). A bare number is read as milliseconds.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration: %q", s)
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("want a duration such as \"500ms\" or a number of milliseconds")
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}

type configJSON struct {
	Interval      *Duration `json:"interval,omitempty"`
	Skew          Duration  `json:"skew,omitempty"`
	MaxAttempts   int       `json:"max_attempts,omitempty"`
	Backoff       Duration  `json:"backoff,omitempty"`
	MaxBackoff    Duration  `json:"max_backoff,omitempty"`
	Retention     Duration  `json:"retention,omitempty"`
	Targets       []string  `json:"targets,omitempty"`
	TargetTimeout Duration  `json:"target_timeout,omitempty"`
}

// MarshalJSON writes durations as strings.
func (c Config) MarshalJSON() ([]byte, error) {
	iv := Duration(c.Interval)
	return json.Marshal(configJSON{
		Interval: &iv, Skew: Duration(c.Skew), MaxAttempts: c.MaxAttempts,
		Backoff: Duration(c.Backoff), MaxBackoff: Duration(c.MaxBackoff), Retention: Duration(c.Retention),
		Targets: c.Targets, TargetTimeout: Duration(c.TargetTimeout),
	})
}

// UnmarshalJSON reads durations as strings (or milliseconds). Unknown
// fields are errors, and so is an interval given as zero or less (an
// absent one means the default).
func (c *Config) UnmarshalJSON(b []byte) error {
	var w configJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name = strings.Trim(name, `"`)
			return Invalid("unknown_field", name, fmt.Sprintf("unknown queue setting %q", name))
		}
		return err
	}
	var iv time.Duration
	if w.Interval != nil {
		if iv = time.Duration(*w.Interval); iv <= 0 {
			return Invalid("invalid_interval", "interval", "interval must be greater than 0")
		}
	}
	*c = Config{
		Interval: iv, Skew: time.Duration(w.Skew), MaxAttempts: w.MaxAttempts,
		Backoff: time.Duration(w.Backoff), MaxBackoff: time.Duration(w.MaxBackoff), Retention: time.Duration(w.Retention),
		Targets: w.Targets, TargetTimeout: time.Duration(w.TargetTimeout),
	}
	return nil
}
