package schedule

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Bounds of a schedule.
const (
	// MinEvery is the shortest period: one occurrence a second. Each
	// occurrence is a job (a ticket, a record, a message); a shorter
	// period is a queue's own work, better enqueued in batches.
	MinEvery = time.Second
	// MaxEvery is the longest period: a year, as far as a job's
	// not_before may lie.
	MaxEvery = 366 * 24 * time.Hour
	// MaxMissed bounds the occurrences MissedAll makes for one stretch
	// of missed time: the latest MaxMissed of them.
	MaxMissed = 100
	// MaxName is the longest schedule name.
	MaxName = 80
)

// Missed is what a schedule does with occurrences whose time passed
// before they were made: while it was paused, or the stack's resume
// function did not run.
type Missed string

// The policies for missed occurrences.
const (
	// MissedNone skips them: the schedule goes on with the first
	// occurrence still ahead.
	MissedNone Missed = "none"
	// MissedLatest makes the latest of them, at once, and skips the
	// others. The default.
	MissedLatest Missed = "latest"
	// MissedAll makes them all, the latest MaxMissed at most, in order,
	// each through the queue's limit.
	MissedAll Missed = "all"
)

// Job is what each occurrence becomes: a job.Spec without its id (the
// schedule's name and the occurrence time) and not_before (the occurrence
// time).
type Job struct {
	Kind    string          `json:"kind,omitempty"`
	Target  string          `json:"target,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Key     string          `json:"key,omitempty"`
}

// Spec is a schedule as its owner writes it. Exactly one of Every and
// Cron is given; TZ goes with Cron only.
type Spec struct {
	// Every is a fixed period, MinEvery to MaxEvery.
	Every *slot.Duration `json:"every,omitempty"`
	// Cron is a cron expression (5 fields, or 6 with seconds first; see
	// the package doc).
	Cron string `json:"cron,omitempty"`
	// TZ is the IANA zone Cron is read in ("Europe/Paris"). Default UTC.
	TZ string `json:"tz,omitempty"`
	// Start, if set, is the first time an occurrence may have; an Every
	// schedule counts its periods from it. End, if set, is the last.
	Start *time.Time `json:"start,omitempty"`
	End   *time.Time `json:"end,omitempty"`
	// Missed is the policy for missed occurrences. Default MissedLatest.
	Missed Missed `json:"missed,omitempty"`
	// Job is the job each occurrence becomes.
	Job Job `json:"job"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,80}$`)

// ValidateName checks a schedule name: [A-Za-z0-9_.-]{1,80}. With the
// occurrence time it makes each occurrence's job id (OccurrenceID).
func ValidateName(name string) *input.Error {
	if !nameRE.MatchString(name) {
		return input.Invalid("invalid_schedule_name", "name", fmt.Sprintf("schedule name %q must match [A-Za-z0-9_.-]{1,80}", input.Truncate(name, 100)))
	}
	return nil
}

// OccurrenceID is the job id of schedule name's occurrence at t:
// "name:2026-11-25T07:00:00.000Z". Every maker of the occurrence writes
// this id, so a second one finds the first's job.
func OccurrenceID(name string, t time.Time) string {
	return name + ":" + t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Validate checks s and compiles its Rule. Errors are *input.Error with
// the field relative to the spec ("cron", "tz", "end", "job.kind"); the
// caller prefixes its own path. now bounds Start and End (within a year
// of it, as a job's not_before).
func (s *Spec) Validate(now time.Time) (Rule, error) {
	r, err := s.rule(now)
	if err != nil {
		return Rule{}, err
	}
	switch s.Missed {
	case "", MissedNone, MissedLatest, MissedAll:
	default:
		return Rule{}, input.Invalid("invalid_missed", "missed", fmt.Sprintf("missed %q is not one of none, latest, all", input.Truncate(string(s.Missed), 40)))
	}
	js := job.Spec{Kind: s.Job.Kind, Target: s.Job.Target, Payload: s.Job.Payload, Key: s.Job.Key}
	if err := js.Validate(now); err != nil {
		return Rule{}, err.At("job.")
	}
	// The first occurrence must exist: an expression that never fires, or
	// a start and end with no occurrence between them, is refused.
	from := now
	if s.Start != nil && s.Start.After(from) {
		from = s.Start.Add(-time.Nanosecond)
	}
	if r.Next(from).IsZero() {
		field := "end"
		if s.End == nil {
			field = "cron"
		}
		return Rule{}, input.Invalid("never_fires", field, "the schedule has no occurrence from now on")
	}
	return r, nil
}

// MissedPolicy is s's policy, with its default.
func (s *Spec) MissedPolicy() Missed {
	if s.Missed == "" {
		return MissedLatest
	}
	return s.Missed
}

func (s *Spec) rule(now time.Time) (Rule, error) {
	var r Rule
	for _, t := range []struct {
		code, field string
		at          *time.Time
	}{{"invalid_start", "start", s.Start}, {"invalid_end", "end", s.End}} {
		if t.at != nil && (t.at.After(now.Add(job.MaxNotBefore)) || t.at.Before(now.Add(-job.MaxNotBefore))) {
			return r, input.Invalid(t.code, t.field, t.field+" must lie within a year of now")
		}
	}
	if s.Start != nil {
		r.start = s.Start.UTC()
	}
	if s.End != nil {
		r.end = s.End.UTC()
		if s.Start != nil && !s.End.After(*s.Start) {
			return r, input.Invalid("invalid_end", "end", "end must come after start")
		}
	}
	switch {
	case s.Every == nil && s.Cron == "":
		return r, input.Invalid("no_rule", "every", "give every (a duration) or cron (an expression)")
	case s.Every != nil && s.Cron != "":
		return r, input.Invalid("invalid_rule", "cron", "give every or cron, not both")
	case s.Every != nil:
		if s.TZ != "" {
			return r, input.Invalid("invalid_tz", "tz", "tz goes with cron; every is a fixed period of elapsed time")
		}
		d := time.Duration(*s.Every)
		if d < MinEvery || d > MaxEvery {
			return r, input.Invalid("invalid_every", "every", fmt.Sprintf("every must be between %s and %s", MinEvery, MaxEvery))
		}
		r.every = d
		return r, nil
	}
	loc := time.UTC
	if s.TZ != "" {
		l, err := loadZone(s.TZ)
		if err != nil {
			return r, input.Invalid("unknown_tz", "tz", fmt.Sprintf("tz %q is not an IANA time zone such as Europe/Paris: %v", input.Truncate(s.TZ, 60), err))
		}
		loc = l
	}
	sched, err := parseCron(s.Cron)
	if err != nil {
		return r, input.Invalid("invalid_cron", "cron", fmt.Sprintf("cron %q: %v", input.Truncate(s.Cron, 100), err))
	}
	r.cron, r.loc = sched, loc
	return r, nil
}

// loadZone reads an IANA zone. The functions that parse schedules import
// time/tzdata, so zones load on a host without a zoneinfo database (as
// Lambda's provided.al2023 may be). A name that only the host gives a
// meaning to is refused: "Local" and "localtime" (the host's zone),
// "posixrules", the "posix/" and "right/" copies, a path. Every part of
// an IANA name begins with a capital letter ("America/Argentina/Salta",
// "Etc/GMT+5"); the host's own files do not.
func loadZone(name string) (*time.Location, error) {
	if name == "Local" || !ianaName(name) {
		return nil, fmt.Errorf("not an IANA zone name")
	}
	return time.LoadLocation(name)
}

// ianaName reports whether name has the form of an IANA zone's name:
// parts separated by "/", each a capital letter then letters, digits,
// "_", "+" or "-".
func ianaName(name string) bool {
	for part := range strings.SplitSeq(name, "/") {
		if part == "" || part[0] < 'A' || part[0] > 'Z' {
			return false
		}
		for _, c := range part {
			if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '-') {
				return false
			}
		}
	}
	return true
}

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseCron parses 5 or 6 fields, or a descriptor other than @every.
func parseCron(expr string) (cron.Schedule, error) {
	e := strings.TrimSpace(expr)
	switch {
	case e == "":
		return nil, fmt.Errorf("empty expression")
	case strings.HasPrefix(e, "CRON_TZ=") || strings.HasPrefix(e, "TZ="):
		return nil, fmt.Errorf("give the zone in tz, not in the expression")
	case strings.HasPrefix(e, "@every"):
		return nil, fmt.Errorf("give a fixed period in every, not @every")
	}
	if !strings.HasPrefix(e, "@") {
		if n := len(strings.Fields(e)); n != 5 && n != 6 {
			return nil, fmt.Errorf("%d fields; give 5 (minute hour day month weekday) or 6 (seconds first)", n)
		}
	}
	return cronParser.Parse(e)
}

// Compile is s's Rule, without Validate's checks against a moment (a
// stored schedule whose end has passed still compiles). It fails only
// for what Validate refuses in any case: a bad expression or zone.
func (s *Spec) Compile() (Rule, error) {
	var r Rule
	if s.Start != nil {
		r.start = s.Start.UTC()
	}
	if s.End != nil {
		r.end = s.End.UTC()
	}
	if s.Every != nil {
		if d := time.Duration(*s.Every); d >= MinEvery {
			r.every = d
			return r, nil
		}
		return r, fmt.Errorf("every %s below %s", time.Duration(*s.Every), MinEvery)
	}
	loc := time.UTC
	if s.TZ != "" {
		l, err := loadZone(s.TZ)
		if err != nil {
			return r, err
		}
		loc = l
	}
	sched, err := parseCron(s.Cron)
	if err != nil {
		return r, err
	}
	r.cron, r.loc = sched, loc
	return r, nil
}
