package input

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	good := map[string]time.Time{
		"2026-11-21T14:00:00Z":           time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC),
		"2026-11-21t14:00:00z":           time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC),
		"2026-11-21T15:00:00.5+01:00":    time.Date(2026, 11, 21, 14, 0, 0, 5e8, time.UTC),
		"2026-11-21T00:00:00-23:59":      time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC),
		"2028-02-29T00:00:00.000000001Z": time.Date(2028, 2, 29, 0, 0, 0, 1, time.UTC),
	}
	for in, want := range good {
		if got, err := ParseTime(in); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{
		"2027-02-30T00:00:00Z", "2026-11-21", "2026-11-21T14:00:00", "2026-11-21T14:00:00+99:99",
		"2026-11-21T14:00:00+24:00", "2026-11-21T14:00:00+01:60", "tomorrow", "0001-01-01T00:00:00Z",
		"9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z", "2026-11-21 14:00:00Z", "2026-11-21T14:00:00+0100",
		"2026-11-21T25:00:00Z", "2026-11-21T14:00:60Z", "2026-11-21T14:00:00.Z", " 2026-11-21T14:00:00Z",
	} {
		if got, err := ParseTime(in); err == nil {
			t.Errorf("ParseTime(%q) = %v; want an error", in, got)
		}
	}
}
