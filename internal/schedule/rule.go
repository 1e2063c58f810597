package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Rule is a checked Spec's timing: when its occurrences are.
type Rule struct {
	every      time.Duration
	cron       cron.Schedule
	loc        *time.Location
	start, end time.Time
}

// maxSteps bounds the wall times Next walks past in a repeated hour (a
// cron of every second in a fall-back hour walks 3,600).
const maxSteps = 100_000

// Next is the first occurrence strictly after after, at or after the
// start and not after the end; zero if there is none. Occurrences are
// whole milliseconds.
func (r Rule) Next(after time.Time) time.Time {
	if !r.start.IsZero() && after.Before(r.start) {
		after = r.start.Add(-time.Nanosecond)
	}
	var t time.Time
	if r.every > 0 {
		t = r.occurrence(r.index(after))
	} else {
		t = r.nextCron(after)
	}
	if t.IsZero() || !r.end.IsZero() && t.After(r.end) {
		return time.Time{}
	}
	return t
}

// anchor is what an Every schedule counts periods from: its start, or
// the Unix epoch.
func (r Rule) anchor() time.Time {
	if r.start.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return r.start
}

// occurrence is an Every schedule's occurrence number k (0 is the
// anchor's): anchor + k·every, rounded up to the millisecond. Rounded
// up, so that no occurrence comes before the start, and each is its own
// whole millisecond, whatever fraction of one the start or the period
// carries: a period is at least MinEvery, so two never round to one.
func (r Rule) occurrence(k int64) time.Time {
	t := r.anchor().Add(time.Duration(k) * r.every)
	if c := t.Truncate(time.Millisecond); !c.Equal(t) {
		return c.Add(time.Millisecond)
	}
	return t
}

// index is the number of an Every schedule's first occurrence strictly
// after after. An occurrence, a time rounded up to the millisecond, lies
// after after exactly when the time before rounding lies after after's
// millisecond (after rounded down).
func (r Rule) index(after time.Time) int64 {
	d := after.Truncate(time.Millisecond).Sub(r.anchor())
	if d < 0 {
		return 0
	}
	// Sub saturates past 292 years; a year is MaxEvery's bound.
	return int64(d/r.every) + 1
}

// nextCron asks the cron schedule in UTC, where wall time has no gaps or
// repeats, for the wall time after after's, and maps it to an instant by
// the package's rule: a skipped wall time at the end of its gap, a
// repeated one at its first instant. A wall time whose instant is not
// after after (the repeated hour's second pass) is walked past.
func (r Rule) nextCron(after time.Time) time.Time {
	w := wall(after, r.loc)
	for range maxSteps {
		w = r.cron.Next(w)
		if w.IsZero() {
			return time.Time{}
		}
		if t := wallInstant(w, r.loc); t.After(after) {
			return t
		}
	}
	return time.Time{}
}

// wall is t's wall time in loc, written as a UTC time.
func wall(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// wallInstant is the instant of wall time w (a UTC time standing for a
// wall time) in loc: its first instant if w repeats, the first instant
// after the gap if w is skipped.
func wallInstant(w time.Time, loc *time.Location) time.Time {
	// The offsets a day either side: a zone changes offset at most once
	// in a day.
	_, before := w.Add(-24 * time.Hour).In(loc).Zone()
	_, after := w.Add(24 * time.Hour).In(loc).Zone()
	a := w.Add(-time.Duration(before) * time.Second)
	b := w.Add(-time.Duration(after) * time.Second)
	okA, okB := wall(a, loc).Equal(w), wall(b, loc).Equal(w)
	switch {
	case okA && okB:
		if b.Before(a) {
			return b
		}
		return a
	case okA:
		return a
	case okB:
		return b
	}
	// A gap: the first instant whose wall time is past w. Between b (the
	// later offset's reading, before the change) and a (after it).
	lo, hi := b, a
	if hi.Before(lo) {
		lo, hi = hi, lo
	}
	for hi.Sub(lo) > time.Millisecond {
		mid := lo.Add(hi.Sub(lo) / 2)
		if wall(mid, loc).After(w) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi.Truncate(time.Second)
}

// maxWalk bounds the occurrences Missed walks one at a time (a cron
// schedule; an Every schedule's are counted by arithmetic).
const maxWalk = 200_000

// Missed reads the occurrences from from (inclusive, an occurrence) to now
// (inclusive): the latest keep of them in order, how many there are, and
// the first occurrence after now (zero: none). A cron schedule missed for
// longer than maxWalk occurrences is read from a day before now; count
// then says only those.
func (r Rule) Missed(from, now time.Time, keep int) (kept []time.Time, count int64, next time.Time) {
	if from.IsZero() || from.After(now) {
		return nil, 0, from
	}
	if r.every > 0 {
		first, last := r.index(from.Add(-time.Nanosecond)), r.index(now)-1
		if !r.end.IsZero() {
			last = min(last, r.index(r.end)-1)
		}
		if last < first {
			return nil, 0, r.Next(now)
		}
		count = last - first + 1
		for k := last - min(int64(keep), count) + 1; k <= last; k++ {
			kept = append(kept, r.occurrence(k))
		}
		return kept, count, r.Next(now)
	}
	t := from
	for steps := 0; !t.IsZero() && !t.After(now); steps++ {
		if steps == maxWalk {
			kept, count, t = nil, 0, r.Next(now.Add(-24*time.Hour))
			continue
		}
		count++
		kept = append(kept, t)
		if len(kept) > keep {
			kept = kept[1:]
		}
		t = r.Next(t)
	}
	if keep == 0 {
		kept = nil
	}
	return kept, count, t
}

// paceWeek is the span over which Pace counts a cron schedule's
// occurrences: its longest common pattern (the days of the week).
const paceWeek = 7 * 24 * time.Hour

// Pace is how fast r makes occurrences in the long run: n of them per
// span. An every schedule's is one per period; a cron schedule's is
// counted from after over a week (or over its first 100,000, for one
// that fires that often). Zero n: fewer than two occurrences in the
// week, which no queue's limit is slower than.
func (r Rule) Pace(after time.Time) (n int64, span time.Duration) {
	if r.every > 0 {
		return 1, r.every
	}
	first := r.Next(after)
	if first.IsZero() {
		return 0, 0
	}
	last := first
	for t := r.Next(first); !t.IsZero() && t.Sub(first) <= paceWeek && n < 100_000; t = r.Next(t) {
		last, n = t, n+1
	}
	return n, last.Sub(first)
}
