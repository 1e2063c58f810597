// Package schedule is the arithmetic of recurring schedules: a Spec (every
// a duration, or a cron expression in an IANA time zone, with an optional
// start and end, and the job each occurrence becomes) is checked once
// (Spec.Validate, typed errors naming the field) and compiled into a Rule
// whose Next gives the occurrence after a time. It is pure: time is a
// parameter, and nothing here reads a clock or a store.
//
// The engine (internal/engine, schedules.go) keeps each schedule's next
// occurrence in the due index and turns occurrences into jobs; this
// package only says when they are.
//
// # Cron expressions
//
// Five fields (minute hour day-of-month month day-of-week), or six with a
// leading seconds field, in robfig/cron's syntax (ranges, lists, steps,
// names such as MON and JAN), and the descriptors @yearly, @monthly,
// @weekly, @daily and @hourly. @every and a CRON_TZ= prefix are refused:
// a fixed period is Spec.Every, a zone Spec.TZ.
//
// # Daylight saving
//
// A cron expression is read in wall time of its zone (UTC without one),
// and each matching wall time is one occurrence:
//
//   - a wall time that a clock change skips (02:30 on a spring-forward
//     night in Paris or New York) fires once, at the first instant after
//     the gap (03:00 of the new offset); several wall times of one gap
//     are that one occurrence;
//   - a wall time that a clock change repeats (01:30 on a fall-back night
//     in New York, 02:30 in Paris) fires once, at its first occurrence
//     (the earlier offset); the repeated hour's second pass fires
//     nothing, so an expression that fires every few minutes pauses for
//     that hour (use Every, or the zone UTC, for such schedules).
//
// robfig/cron's own Next, asked in the zone, differs: it drops a skipped
// 02:30 altogether (no occurrence that day) and does not fire a repeated
// wall time at its first instant, so the Rule asks it in UTC, where wall time has no gaps, and maps wall times to
// instants itself (wallInstant).
//
// An Every schedule is a fixed period of elapsed time, untouched by clock
// changes: its occurrences are Start + k·Every, or, without a start,
// whole multiples of Every since the Unix epoch (every 1s on whole
// seconds, every 1h on the hour, UTC).
package schedule
