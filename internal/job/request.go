package job

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// Limits of an enqueue request.
const (
	// MaxBatch is the most jobs one enqueue call may carry.
	MaxBatch = api.MaxBatch
	// MaxPayload is the largest payload of one job, in bytes. It leaves
	// room for the envelope inside SQS's 256 KiB message and for the job
	// record inside DynamoDB's 400 KB item.
	MaxPayload = api.MaxPayload
	// MaxNotBefore is how far ahead (and behind) not_before may lie.
	MaxNotBefore = 366 * 24 * time.Hour
)

var (
	idRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)
	// occurrenceRE is the form of a schedule's occurrence's id
	// (schedule.OccurrenceID): the schedule's name, a colon, the
	// occurrence's time in UTC to the millisecond.
	occurrenceRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,80}:\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	kindRE       = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,128}$`)
)

// Spec is one job as a producer asks for it: api.Spec's fields (the type
// is defined by it, so a field is declared once, in pkg/api), checked by
// Validate: an ID makes enqueue idempotent per queue; exactly one of Kind
// and Target; NotBefore within MaxNotBefore of now; Key
// ([A-Za-z0-9_.:/@-]{1,200}) makes the job one of a lane (jobs of the
// queue with the same key never run at the same time, and start in
// ticket order); TraceParent and TraceState are checked by
// ValidateTraceParent and ValidateTraceState.
type Spec api.Spec

// EnqueueRequest is what producers send to enqueue: one job or a batch.
type EnqueueRequest struct {
	Queue string `json:"queue"`
	// Interval, Rate (with Burst) and Window are the limit of the queue
	// if this call creates it, in one form (api.EnqueueRequest): checked
	// always, read only when the call creates the queue.
	Interval *slot.Duration `json:"interval,omitempty"`
	Rate     *slot.WireRate `json:"rate,omitempty"`
	Burst    *int           `json:"burst,omitempty"`
	Window   *slot.WireRate `json:"window,omitempty"`
	Job      *Spec          `json:"job,omitempty"`
	Jobs     []Spec         `json:"jobs,omitempty"`
	// Occurrences marks a schedule's own enqueue of its occurrences: only
	// it may give ids of an occurrence's form (IsOccurrenceID). It is
	// never read from a request.
	Occurrences bool `json:"-"`
}

// IsOccurrenceID reports whether id has the form of a schedule's
// occurrence's id, NAME:TIME ("beat:2026-11-25T07:00:00.000Z"). Such ids
// are the schedules' own: a producer's job under one would be taken for
// the occurrence (the schedule would count it made, and run the
// producer's kind and payload in its place).
func IsOccurrenceID(id string) bool { return occurrenceRE.MatchString(id) }

// reserved refuses an id of an occurrence's form in a producer's request.
func (r *EnqueueRequest) reserved(field, id string) *input.Error {
	if r.Occurrences || !IsOccurrenceID(id) {
		return nil
	}
	return input.Invalid("reserved_id", field, fmt.Sprintf("id %q has the form of a schedule's occurrence (NAME:TIME, such as beat:2026-11-25T07:00:00.000Z), which only schedules make: give another id", truncate(id, 140)))
}

// SpecField is the full path of field name of the i-th job of the
// request, as errors name it: "job.name" for a request of one job,
// "jobs[i].name" for a batch.
func (r *EnqueueRequest) SpecField(i int, name string) string {
	if r.Job != nil {
		return "job." + name
	}
	return fmt.Sprintf("jobs[%d].%s", i, name)
}

// Specs returns the request's jobs, one or many.
func (r *EnqueueRequest) Specs() []Spec {
	if r.Job != nil {
		return []Spec{*r.Job}
	}
	return r.Jobs
}

// DecodeEnqueue parses and validates an enqueue request. Unknown fields are
// errors. It returns an *input.Error naming the field for every kind of
// bad input.
func DecodeEnqueue(body []byte, now time.Time) (EnqueueRequest, error) {
	var r EnqueueRequest
	if err := Decode(body, &r); err != nil {
		return r, err
	}
	return r, r.Validate(now)
}

// Validate checks the request as DecodeEnqueue does.
func (r *EnqueueRequest) Validate(now time.Time) error {
	if err := slot.ValidateName(r.Queue); err != nil {
		return err
	}
	if err := r.validateLimit(); err != nil {
		return err
	}
	switch {
	case r.Job != nil && r.Jobs != nil:
		return input.Invalid("invalid_request", "jobs", "give either job or jobs, not both")
	case r.Job == nil && len(r.Jobs) == 0:
		return input.Invalid("no_jobs", "jobs", "give a job or a non-empty list of jobs")
	case len(r.Jobs) > MaxBatch:
		return input.Invalid("too_many_jobs", "jobs", fmt.Sprintf("%d jobs in one call; the most is %d", len(r.Jobs), MaxBatch))
	}
	if r.Job != nil {
		if err := r.Job.Validate(now); err != nil {
			return err.At("job.")
		}
		if err := r.reserved("job.id", r.Job.ID); err != nil {
			return err
		}
		return nil
	}
	seen := make(map[string]int, len(r.Jobs))
	for i := range r.Jobs {
		prefix := fmt.Sprintf("jobs[%d].", i)
		if err := r.Jobs[i].Validate(now); err != nil {
			return err.At(prefix)
		}
		if err := r.reserved(prefix+"id", r.Jobs[i].ID); err != nil {
			return err
		}
		if id := r.Jobs[i].ID; id != "" {
			if j, dup := seen[id]; dup {
				return input.Invalid("duplicate_id", prefix+"id", fmt.Sprintf("id %q is also jobs[%d].id", id, j))
			}
			seen[id] = i
		}
	}
	return nil
}

// Limit returns the limit the request gives the queue it creates, and
// whether it gives one.
func (r *EnqueueRequest) Limit() (slot.Limit, bool) {
	var l slot.Limit
	if r.Interval != nil {
		l.Interval = time.Duration(*r.Interval)
	}
	if v := r.Rate.Rate(); v != nil {
		l.Rate = *v
	}
	if v := r.Window.Rate(); v != nil {
		l.Window = *v
	}
	if r.Burst != nil {
		l.Burst = *r.Burst
	}
	return l, r.Interval != nil || r.Rate != nil || r.Window != nil || r.Burst != nil
}

// validateLimit checks the limit the request gives as a queue's
// configuration is checked: one form, a burst only with a rate, counts
// and periods in range.
func (r *EnqueueRequest) validateLimit() error {
	l, given := r.Limit()
	if !given {
		return nil
	}
	switch {
	case r.Window != nil && (r.Interval != nil || r.Rate != nil):
		return input.Invalid("invalid_limit", "window", "the limit of the queue a call creates takes one form: give one of interval, rate (with burst) and window")
	case r.Rate != nil && r.Interval != nil:
		return input.Invalid("invalid_limit", "rate", "the limit of the queue a call creates takes one form: give one of interval, rate (with burst) and window")
	case r.Burst != nil && r.Rate == nil:
		return input.Invalid("invalid_burst", "burst", "burst goes with a rate, such as \"rate\": \"100/1m\", \"burst\": 10")
	case r.Interval != nil && l.Interval <= 0:
		return input.Invalid("invalid_interval", "interval", fmt.Sprintf("interval must be between %s and %s", slot.MinInterval, slot.MaxInterval))
	}
	return slot.ValidateLimit(l, "")
}

// ValidateID checks a job id: [A-Za-z0-9_.:-]{1,128}.
func ValidateID(id string) *input.Error {
	if !idRE.MatchString(id) {
		return input.Invalid("invalid_id", "id", fmt.Sprintf("id %q must match [A-Za-z0-9_.:-]{1,128}", truncate(id, 140)))
	}
	return nil
}

// Validate checks one job spec.
func (s *Spec) Validate(now time.Time) *input.Error {
	if s.ID != "" {
		if err := ValidateID(s.ID); err != nil {
			return err
		}
	}
	switch {
	case s.Kind == "" && s.Target == "":
		return input.Invalid("no_target", "kind", "give a kind (a Go handler) or a target (URL or Lambda function)")
	case s.Kind != "" && s.Target != "":
		return input.Invalid("invalid_target", "target", "give a kind or a target, not both")
	case s.Kind != "" && !kindRE.MatchString(s.Kind):
		return input.Invalid("invalid_kind", "kind", "kind must match [A-Za-z0-9_.:/-]{1,128}")
	case s.Target != "":
		if err := ValidateTarget(s.Target); err != nil {
			return err
		}
	}
	if s.Key != "" {
		if err := slot.ValidateKey("key", s.Key); err != nil {
			return err
		}
	}
	if err := ValidateTraceContext(s.TraceParent, s.TraceState); err != nil {
		return err
	}
	if s.Priority < 0 || s.Priority > api.MaxPriority {
		return input.Invalid("invalid_priority", "priority", fmt.Sprintf("priority must be %d (booked first) to %d (last); leave it out for %d", api.MinPriority, api.MaxPriority, api.DefaultPriority))
	}
	if len(s.Payload) > MaxPayload {
		return input.Invalid("payload_too_large", "payload", fmt.Sprintf("payload is %d bytes; the most is %d", len(s.Payload), MaxPayload))
	}
	if s.NotBefore != nil {
		if s.NotBefore.After(now.Add(MaxNotBefore)) || s.NotBefore.Before(now.Add(-MaxNotBefore)) {
			return input.Invalid("invalid_not_before", "not_before", "not_before must lie within a year of now")
		}
	}
	return s.validateDebounce()
}

// validateDebounce checks a debounced spec: debounce_key and debounce
// both or neither, the key a key's form, the period within
// (0, api.MaxDebounce], and no not_before (a debounced job's start is
// its debounce's end).
func (s *Spec) validateDebounce() *input.Error {
	switch {
	case s.DebounceKey == "" && s.Debounce == nil:
		return nil
	case s.DebounceKey == "":
		return input.Invalid("invalid_debounce", "debounce_key", "debounce goes with a debounce_key: give both, or neither")
	case s.Debounce == nil:
		return input.Invalid("invalid_debounce", "debounce", "debounce_key goes with a debounce (such as \"1s\"): give both, or neither")
	case *s.Debounce <= 0 || time.Duration(*s.Debounce) > api.MaxDebounce:
		return input.Invalid("invalid_debounce", "debounce", fmt.Sprintf("debounce is %s; it must be more than 0 and at most %s", *s.Debounce, api.MaxDebounce))
	case s.NotBefore != nil:
		return input.Invalid("invalid_debounce", "not_before", "a debounced job starts when its debounce ends: give not_before or debounce, not both")
	}
	return slot.ValidateKey("debounce_key", s.DebounceKey)
}

// DebounceFor is how long a debounced spec holds its job (Debounce),
// 0 for one without.
func (s *Spec) DebounceFor() time.Duration {
	if s.Debounce == nil {
		return 0
	}
	return time.Duration(*s.Debounce)
}

// ValidateTarget checks the form of an HTTP or Lambda target
// (slot.ParseTarget): whether a queue allows it is the queue's to say
// (slot.Config.CheckTarget).
func ValidateTarget(t string) *input.Error {
	if _, err := slot.ParseTarget(t); err != nil {
		return input.Invalid("invalid_target", "target", fmt.Sprintf("target %q: %v", truncate(t, 100), err))
	}
	return nil
}

// Decode parses body strictly into v by input.Decode: keys in their exact
// letter case, no unknown or repeated keys, no trailing data; every error
// is an *input.Error naming the full path of the bad value.
func Decode(body []byte, v any) error { return input.Decode(body, v) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// NewID returns a random job id.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
