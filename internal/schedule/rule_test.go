package schedule

import (
	"archive/zip"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustRule(t *testing.T, s Spec, now time.Time) Rule {
	t.Helper()
	if s.Job.Kind == "" && s.Job.Target == "" {
		s.Job = Job{Kind: "echo"}
	}
	r, err := s.Validate(now)
	if err != nil {
		t.Fatalf("validate %+v: %v", s, err)
	}
	return r
}

// occurrences lists the first n occurrences after from.
func occurrences(r Rule, from time.Time, n int) []time.Time {
	var out []time.Time
	for t := from; len(out) < n; {
		t = r.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// TestDaylightSaving holds the package's rule in two zones: a wall time a
// spring-forward skips fires once, at the end of the gap; a wall time a
// fall-back repeats fires once, at its first instant.
func TestDaylightSaving(t *testing.T) {
	cases := []struct {
		name, cron, tz, from string
		want                 []string
	}{
		{"paris spring gap", "30 2 * * *", "Europe/Paris", "2026-03-27T12:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"paris autumn repeat", "30 2 * * *", "Europe/Paris", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"new york spring gap", "30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"new york autumn repeat", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"new york half-hourly across the gap", "*/30 * * * *", "America/New_York", "2026-03-08T06:15:00Z",
			// 01:30 EST, then 02:00 and 02:30 (skipped) are one occurrence at 03:00 EDT, which is also 03:00's.
			[]string{"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"}},
		{"new york half-hourly across the repeat", "*/30 * * * *", "America/New_York", "2026-11-01T04:15:00Z",
			// 00:30, 01:00, 01:30 EDT; the second pass of 01:xx fires nothing; 02:00 EST.
			[]string{"2026-11-01T04:30:00Z", "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z"}},
		{"paris seconds field in the gap", "15 30 2 * * *", "Europe/Paris", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:15Z"}},
		{"utc by default", "0 8 * * *", "", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T08:00:00Z", "2026-03-30T08:00:00Z"}},
	}
	now := utc("2026-01-01T00:00:00Z")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustRule(t, Spec{Cron: c.cron, TZ: c.tz}, now)
			got := occurrences(r, utc(c.from), len(c.want))
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if !got[i].Equal(utc(c.want[i])) {
					t.Errorf("occurrence %d: got %s, want %s", i, got[i].UTC().Format(time.RFC3339), c.want[i])
				}
			}
		})
	}
}

// TestRobfigInTheZoneDiffers records why Rule does not ask robfig/cron in
// the zone: its answer for a skipped wall time is not the package's rule.
func TestRobfigInTheZoneDiffers(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	s, err := cron.ParseStandard("30 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	native := s.Next(utc("2026-03-28T12:00:00Z").In(paris))
	ours := mustRule(t, Spec{Cron: "30 2 * * *", TZ: "Europe/Paris"}, utc("2026-01-01T00:00:00Z")).Next(utc("2026-03-28T12:00:00Z"))
	t.Logf("robfig in the zone: %s; the package's rule: %s", native.UTC().Format(time.RFC3339), ours.UTC().Format(time.RFC3339))
	if !ours.Equal(utc("2026-03-29T01:00:00Z")) {
		t.Fatalf("the gap's occurrence is %s, want the end of the gap", ours)
	}
}

func TestEvery(t *testing.T) {
	now := utc("2026-05-01T10:00:00Z")
	sec := slot.Duration(time.Second)
	r := mustRule(t, Spec{Every: &sec}, now)
	got := occurrences(r, now.Add(300*time.Millisecond), 3)
	want := []time.Time{now.Add(time.Second), now.Add(2 * time.Second), now.Add(3 * time.Second)}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("every 1s: %v, want %v", got, want)
		}
	}
	// From a start, counted from it; not past the end.
	start, end := now.Add(1500*time.Millisecond), now.Add(10*time.Second)
	d := slot.Duration(4 * time.Second)
	r = mustRule(t, Spec{Every: &d, Start: &start, End: &end}, now)
	got = occurrences(r, now, 5)
	want = []time.Time{start, start.Add(4 * time.Second), start.Add(8 * time.Second)}
	if len(got) != len(want) {
		t.Fatalf("every 4s from a start: %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("every 4s from a start: %v, want %v", got, want)
		}
	}
	// A cron's start: nothing before it.
	r = mustRule(t, Spec{Cron: "0 * * * *", Start: &start}, now)
	if n := r.Next(now); !n.Equal(utc("2026-05-01T11:00:00Z")) {
		t.Fatalf("hourly after a start: %s", n)
	}
}

// An every schedule whose start or period carries a fraction of a
// millisecond (a start of time.Now().Add(90 * time.Second)) has whole
// millisecond occurrences, each after the one before: Next of an
// occurrence is the one after it, never itself. Missed counts and keeps
// the occurrences Next walks.
func TestEveryOffTheMillisecond(t *testing.T) {
	now := utc("2026-05-01T10:00:00Z")
	for _, c := range []struct {
		name  string
		start time.Duration // after now; 0: none (the epoch)
		every time.Duration
	}{
		{"start with nanoseconds", 90*time.Second + 123456789, time.Second},
		{"start half a millisecond in", 90*time.Second + 500*time.Microsecond, time.Minute},
		{"period off the millisecond", 0, time.Second + 500*time.Microsecond},
		{"both", 7*time.Second + 999999, 1500*time.Millisecond + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := Spec{Every: ptr(slot.Duration(c.every))}
			start := now.Add(c.start)
			if c.start != 0 {
				sp.Start = &start
			}
			r := mustRule(t, sp, now)
			var walked []time.Time
			for o := r.Next(now); len(walked) < 50; o = r.Next(o) {
				switch {
				case o.IsZero():
					t.Fatalf("no occurrence after %v", walked)
				case len(walked) > 0 && !o.After(walked[len(walked)-1]):
					t.Fatalf("Next(%s) = %s: not after it", walked[len(walked)-1].Format(time.RFC3339Nano), o.Format(time.RFC3339Nano))
				case !o.Equal(o.Truncate(time.Millisecond)):
					t.Fatalf("occurrence %s not a whole millisecond", o.Format(time.RFC3339Nano))
				case c.start != 0 && o.Before(start):
					t.Fatalf("occurrence %s before the start %s", o.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano))
				}
				if k := len(walked); k > 0 {
					// The period between, to within the millisecond
					// occurrences are rounded to.
					if gap := o.Sub(walked[k-1]); gap < c.every-time.Millisecond || gap > c.every+time.Millisecond {
						t.Fatalf("occurrences %v apart; want %v", gap, c.every)
					}
				}
				walked = append(walked, o)
			}
			kept, count, next := r.Missed(walked[3], walked[40], 5)
			if count != 38 || !next.Equal(walked[41]) || len(kept) != 5 || !kept[0].Equal(walked[36]) || !kept[4].Equal(walked[40]) {
				t.Fatalf("Missed(%d..%d) = %v, %d, %s; want the 5 last of 38, next %s", 3, 40, kept, count, next, walked[41])
			}
			// From between two occurrences, up to one.
			if kept, count, _ := r.Missed(walked[3].Add(-time.Millisecond), walked[4], 1); count != 2 || len(kept) != 1 || !kept[0].Equal(walked[4]) {
				t.Fatalf("Missed from just before an occurrence = %v, %d", kept, count)
			}
		})
	}
}

func TestValidateRefuses(t *testing.T) {
	now := utc("2026-05-01T10:00:00Z")
	sec, milli, long := slot.Duration(time.Second), slot.Duration(500*time.Millisecond), slot.Duration(400*24*time.Hour)
	before, after, far := now.Add(time.Hour), now.Add(2*time.Hour), now.Add(400*24*time.Hour)
	echo := Job{Kind: "echo"}
	cases := []struct {
		name  string
		s     Spec
		field string
	}{
		{"neither", Spec{Job: echo}, "every"},
		{"both", Spec{Every: &sec, Cron: "* * * * *", Job: echo}, "cron"},
		{"every too short", Spec{Every: &milli, Job: echo}, "every"},
		{"every too long", Spec{Every: &long, Job: echo}, "every"},
		{"tz with every", Spec{Every: &sec, TZ: "Europe/Paris", Job: echo}, "tz"},
		{"unknown zone", Spec{Cron: "0 8 * * *", TZ: "Mars/Olympus", Job: echo}, "tz"},
		{"local zone", Spec{Cron: "0 8 * * *", TZ: "Local", Job: echo}, "tz"},
		// The host's files that load as zones but are no IANA zone: on
		// Lambda they would mean something else, or nothing.
		{"localtime", Spec{Cron: "0 8 * * *", TZ: "localtime", Job: echo}, "tz"},
		{"posixrules", Spec{Cron: "0 8 * * *", TZ: "posixrules", Job: echo}, "tz"},
		{"posix copy", Spec{Cron: "0 8 * * *", TZ: "posix/Europe/Paris", Job: echo}, "tz"},
		{"right copy", Spec{Cron: "0 8 * * *", TZ: "right/UTC", Job: echo}, "tz"},
		{"a path", Spec{Cron: "0 8 * * *", TZ: "/etc/localtime", Job: echo}, "tz"},
		{"lower case", Spec{Cron: "0 8 * * *", TZ: "europe/paris", Job: echo}, "tz"},
		{"bad cron", Spec{Cron: "61 * * * *", Job: echo}, "cron"},
		{"seven fields", Spec{Cron: "0 0 0 * * * *", Job: echo}, "cron"},
		{"four fields", Spec{Cron: "0 * * *", Job: echo}, "cron"},
		{"zone in the expression", Spec{Cron: "CRON_TZ=Europe/Paris 0 8 * * *", Job: echo}, "cron"},
		{"@every", Spec{Cron: "@every 1s", Job: echo}, "cron"},
		{"never fires", Spec{Cron: "0 0 30 2 *", Job: echo}, "cron"},
		{"end before start", Spec{Every: &sec, Start: &after, End: &before, Job: echo}, "end"},
		{"end already passed", Spec{Cron: "0 8 * * *", End: ptr(now.Add(-time.Minute)), Job: echo}, "end"},
		{"start too far", Spec{Every: &sec, Start: &far, Job: echo}, "start"},
		{"bad missed", Spec{Every: &sec, Missed: "some", Job: echo}, "missed"},
		{"no kind", Spec{Every: &sec}, "job.kind"},
		{"bad key", Spec{Every: &sec, Job: Job{Kind: "echo", Key: "a b"}}, "job.key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.s.Validate(now)
			var ie *input.Error
			if !errors.As(err, &ie) {
				t.Fatalf("want an *input.Error, got %v", err)
			}
			if ie.Field != c.field {
				t.Fatalf("field %q, want %q (%v)", ie.Field, c.field, err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestOccurrenceIDIsAJobID(t *testing.T) {
	id := OccurrenceID("morning-report_v2.eu", utc("2026-11-25T07:00:00Z").Add(123*time.Millisecond))
	if id != "morning-report_v2.eu:2026-11-25T07:00:00.123Z" {
		t.Fatalf("id %q", id)
	}
	long := "n"
	for len(long) < MaxName {
		long += "n"
	}
	if err := validJobID(OccurrenceID(long, time.Now())); err != nil {
		t.Fatalf("the longest name makes a bad job id: %v", err)
	}
	// Every occurrence's id has the form producers may not give.
	for _, name := range []string{"n", long, "morning-report_v2.eu"} {
		for _, at := range []time.Time{time.Unix(0, 0), time.Now(), utc("2199-12-31T23:59:59Z").Add(999 * time.Millisecond)} {
			if id := OccurrenceID(name, at); !job.IsOccurrenceID(id) {
				t.Fatalf("occurrence id %q is not of the reserved form", id)
			}
		}
	}
}

// TestZonesWithoutZoneinfo loads the zones from the embedded database
// when the host has none (ZONEINFO pointing nowhere and no system files
// read first: Go falls back to time/tzdata).
func TestZonesWithoutZoneinfo(t *testing.T) {
	t.Setenv("ZONEINFO", t.TempDir())
	for _, z := range []string{"Europe/Paris", "America/New_York", "Asia/Kolkata"} {
		if _, err := loadZone(z); err != nil {
			t.Errorf("%s: %v", z, err)
		}
	}
}

// Every zone of the IANA database Go carries (the names in GOROOT's
// zoneinfo.zip, links included) is taken, so the form loadZone asks of a
// name refuses none of them.
func TestEveryIANAZoneLoads(t *testing.T) {
	z, err := zip.OpenReader(filepath.Join(runtime.GOROOT(), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Skipf("no zone database to list: %v", err)
	}
	defer z.Close()
	for _, f := range z.File {
		if _, err := loadZone(f.Name); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
	if len(z.File) < 300 {
		t.Errorf("%d zones listed; want the whole database", len(z.File))
	}
}
