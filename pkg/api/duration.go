package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that travels in JSON as a duration string
// with its unit ("500ms", "2s", "1h30m"). The functions refuse a bare
// number: 5 could mean seconds or milliseconds.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string (time.ParseDuration).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(bytes.TrimSpace(b), &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"500ms\", got %.40s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// String is the duration's text, as time.Duration writes it.
func (d Duration) String() string { return time.Duration(d).String() }
