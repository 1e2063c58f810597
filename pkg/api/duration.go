package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
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

// UnmarshalJSON reads a duration string (ParseDuration).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(bytes.TrimSpace(b), &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"500ms\", got %.40s", b)
	}
	v, err := ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// String is the duration's text, as time.Duration writes it.
func (d Duration) String() string { return time.Duration(d).String() }

// Units of a duration string, largest first.
var durationUnits = []string{"h", "m", "s", "ms", "us", "ns"}

// ParseDuration reads a duration string as time.ParseDuration does
// ("1h30m", "500ms", "-2s"), more strictly: each unit at most once and the
// largest first, so "1h1h" and "30m1h" are refused rather than added up.
// A bare "0" is the zero duration. "µs" and "μs" are "us".
func ParseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as \"500ms\" or \"1h30m\" (at most %s)", trunc(s), time.Duration(math.MaxInt64))
	}
	last, lastUnit := -1, ""
	for rest := strings.TrimLeft(s, "+-"); rest != ""; {
		rest = strings.TrimLeft(rest, "0123456789.")
		n := strings.IndexAny(rest, "0123456789.")
		if n < 0 {
			n = len(rest)
		}
		unit := rest[:n]
		rest = rest[n:]
		if unit == "" { // "0"
			break
		}
		norm := strings.NewReplacer("µ", "u", "μ", "u").Replace(unit)
		rank := slices.Index(durationUnits, norm)
		switch {
		case rank == last:
			return 0, fmt.Errorf("%q gives the unit %s twice; give each unit once, such as \"1h30m\"", trunc(s), unit)
		case rank < last:
			return 0, fmt.Errorf("%q gives %s after %s; give the largest unit first, such as \"1h30m\"", trunc(s), unit, lastUnit)
		}
		last, lastUnit = rank, unit
	}
	return v, nil
}
