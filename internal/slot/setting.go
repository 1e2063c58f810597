package slot

import (
	"fmt"
	"reflect"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/pkg/api"
)

// A Setting describes one of a queue's settings once: the Go field that
// holds it, its name on the wire, its flag, its default, its range, what
// zero means and its doc line. Config's defaults (WithDefaults, Or), its
// checks (Validate, ZeroSetting), the CLI's flags of queues create and
// configure and the JSON Schema generator (internal/dev/apischema) read
// it from Settings.
type Setting struct {
	// Name is the setting's name on the wire (api.ConfigUpdate's JSON
	// tag) and in errors: "retry_after_default".
	Name string
	// Field is the api.Config field that holds it: "RetryAfterDefault".
	Field string
	// Flag is its flag on queues create and configure:
	// "retry-after-default".
	Flag string
	// Code is the error code of a value out of range.
	Code string
	// Default is what zero becomes in WithDefaults (nanoseconds for a
	// duration); 0 where zero is the default's meaning itself.
	Default int64
	// Min and Max bound a number or duration (nanoseconds) as Validate
	// and the JSON Schema accept it, the most items of a list; Max 0 is
	// no bound. key_max_running's are its wire range (0 is no cap).
	Min, Max int64
	// Zero says what zero, or the setting left out, means.
	Zero string
	// ZeroGiven says an explicit zero is a setting of its own (Zero), not
	// refused as a default meant by mistake.
	ZeroGiven bool
	// Limit marks the forms of the queue's limit (interval, rate, burst,
	// window, limits): taken, defaulted and checked as one.
	Limit bool
	// Rule is what the error of a value out of range says after the
	// setting's name; "" where the check is not Validate's loop (the
	// limit's forms, skew, key_max_running).
	Rule string
	// Refusal is what the refusal of an explicit zero says after the
	// name, where it is not Rule with "; leave it out for" Zero.
	Refusal string
	// Doc is the setting's line in the CLI's help of queues create and
	// configure (which adds the default); "" for the settings whose flags
	// are the keys' (cmd/slotq's keyConfigFlags).
	Doc string

	index int    // Field's index in api.Config
	kind  string // "duration", "count", "list" or "rate"
}

// Settings describes every setting of a queue, in api.Config's order
// (TestSettings holds the two together).
var Settings = described([]Setting{
	{Name: "interval", Field: "Interval", Flag: "interval", Code: "invalid_interval", Limit: true,
		Default: int64(DefaultInterval), Min: int64(MinInterval), Max: int64(MaxInterval), Zero: "the default",
		Refusal: fmt.Sprintf("must be at least %s; leave it out for the default", MinInterval),
		Doc:     "least time between two starts, a `duration` of at least 1ms: the interval form of the queue's limit"},
	{Name: "rate", Field: "Rate", Flag: "rate", Limit: true, Zero: "the default",
		Doc: "at most N starts per period on average, a rate `N/PERIOD` such as 100/1m: the rate form of the queue's limit, with --burst"},
	{Name: "burst", Field: "Burst", Flag: "burst", Code: "invalid_burst", Limit: true, Max: MaxBurst, Zero: "none", ZeroGiven: true,
		Doc: fmt.Sprintf("starts a rate lets through together after an idle time beyond the first (B+1 at once), 0 to %d; with --rate (alone on configure: the burst of the queue's rate)", MaxBurst)},
	{Name: "window", Field: "Window", Flag: "window", Limit: true, Zero: "the default",
		Doc: "no span shorter than the period holds more than N starts, a window `N/PERIOD` such as 5000/1h: the window form of the queue's limit"},
	{Name: "limits", Field: "Limits", Flag: "limit", Limit: true, Max: MaxLimits, Zero: "the default",
		Doc: fmt.Sprintf("a limit in `words`: 'interval 1s', 'rate 100/1m burst 10' or 'window 5000/1h'; repeat it to keep up to %d limits at once", MaxLimits)},
	{Name: "skew", Field: "Skew", Flag: "skew", Code: "invalid_skew", Default: int64(DefaultSkew), Zero: "the default",
		Refusal: `0 is not a setting: give "1ns" for no allowance, or leave it out for the default`,
		Doc:     "allowance for clock differences and wake-up latency, once per run of starts; " + SkewRule},
	{Name: "max_attempts", Field: "MaxAttempts", Flag: "max-attempts", Code: "invalid_max_attempts",
		Default: DefaultMaxAttempts, Min: 1, Max: MaxAttemptsLimit, Zero: "the default",
		Rule: fmt.Sprintf("must be between 1 and %d", MaxAttemptsLimit),
		Doc:  "attempts a job gets, at least 1"},
	{Name: "backoff", Field: "Backoff", Flag: "backoff", Code: "invalid_backoff", Default: int64(DefaultBackoff), Zero: "the default",
		Rule: "must not be negative", Refusal: `must be greater than 0, such as "100ms"; leave it out for the default`,
		Doc: "wait before the first retry, doubled each further attempt"},
	{Name: "max_backoff", Field: "MaxBackoff", Flag: "max-backoff", Code: "invalid_backoff", Default: int64(DefaultMaxBackoff), Zero: "the default",
		Rule: "must be at least backoff", Refusal: `must be greater than 0, such as "100ms"; leave it out for the default`,
		Doc: "cap of the retry wait"},
	{Name: "retention", Field: "Retention", Flag: "retention", Code: "invalid_retention",
		Default: int64(DefaultRetention), Min: int64(time.Minute), Max: int64(MaxRetention), Zero: "the default",
		Rule: fmt.Sprintf("must be between 1m and %s", MaxRetention),
		Doc:  "how long finished and failed jobs are kept"},
	{Name: "targets", Field: "Targets", Flag: "targets", Max: MaxTargetPatterns, Zero: "the default (an empty list: none)",
		Doc: "comma-separated HTTP and Lambda target `patterns` jobs may name"},
	{Name: "allow_networks", Field: "AllowNetworks", Flag: "allow-networks", Max: MaxAllowNetworks, Zero: "the default (an empty list: none)",
		Doc: "comma-separated CIDR `prefixes` HTTP targets may reach although private"},
	{Name: "target_timeout", Field: "TargetTimeout", Flag: "target-timeout", Code: "invalid_target_timeout",
		Default: int64(DefaultTargetTimeout), Min: 1, Max: int64(15 * time.Minute), Zero: "the default",
		Rule: "must be between 0 and 15m", Refusal: "must be greater than 0 and at most 15m; leave it out for the default",
		Doc: "bound of one run of a target: a Go handler (on its context), an HTTP request or a Lambda invocation"},
	{Name: "max_running", Field: "MaxRunning", Flag: "max-running", Code: "invalid_max_running", Max: MaxRunningLimit,
		Zero: "no cap", ZeroGiven: true, Rule: fmt.Sprintf("must be between 0 (no cap) and %d", MaxRunningLimit),
		Doc: "most attempts of the queue that run at once, 0 for no cap"},
	{Name: "key_limits", Field: "KeyLimits", Flag: "key-limit", Max: MaxLimits, Zero: "the default"},
	{Name: "key_max_running", Field: "KeyMaxRunning", Flag: "key-max-running", Code: "invalid_key_max_running", Max: MaxKeyRunning,
		Zero: "one job of a key at a time (0 on the wire: no cap)", ZeroGiven: true},
	{Name: "max_slow_downs", Field: "MaxSlowDowns", Flag: "max-slow-downs", Code: "invalid_max_slow_downs",
		Default: DefaultMaxSlowDowns, Min: 1, Max: MaxSlowDownsLimit, Zero: "the default",
		Rule: fmt.Sprintf("must be between 1 and %d", MaxSlowDownsLimit),
		Doc:  fmt.Sprintf("times one job's target may answer \"slow down\" (a 429, a RetryAfter error) before the job fails, 1 to %d; slotq's is %d", MaxSlowDownsLimit, DefaultMaxSlowDowns)},
	{Name: "retry_after_default", Field: "RetryAfterDefault", Flag: "retry-after-default", Code: "invalid_retry_after_default",
		Default: int64(DefaultRetryAfter), Min: int64(time.Millisecond), Max: int64(MaxSlowDown), Zero: "the default",
		Rule:    fmt.Sprintf("must be between 1ms and %s", MaxSlowDown),
		Refusal: fmt.Sprintf(`must be between 1ms and %s, such as "2s"; leave it out for the default`, MaxSlowDown),
		Doc:     fmt.Sprintf("how long the queue waits after a \"slow down\" that names no time (a 429 without Retry-After), 1ms to %s; slotq's is %s", MaxSlowDown, DefaultRetryAfter)},
	{Name: "book_ahead", Field: "BookAhead", Flag: "book-ahead", Code: "invalid_book_ahead", Max: MaxBookAhead, Zero: "no bound",
		Rule:    fmt.Sprintf("must be between 1 and %d, or left out for no bound", MaxBookAhead),
		Refusal: fmt.Sprintf("must be between 1 and %d; leave it out for no bound", MaxBookAhead),
		Doc:     fmt.Sprintf("most jobs of the queue that hold a slot at once, 1 to %d (a job beyond it waits in the waiting room, booked as slots free up)", MaxBookAhead)},
	{Name: "key_book_ahead", Field: "KeyBookAhead", Flag: "key-book-ahead", Code: "invalid_book_ahead", Max: MaxBookAhead, Zero: "no bound",
		Rule:    fmt.Sprintf("must be between 1 and %d, or left out for no bound", MaxBookAhead),
		Refusal: fmt.Sprintf("must be between 1 and %d; leave it out for no bound", MaxBookAhead),
		Doc:     fmt.Sprintf("most jobs of one key that hold a slot at once, 1 to %d (as book-ahead, per key)", MaxBookAhead)},
	{Name: "batch_max", Field: "BatchMax", Flag: "batch-max", Code: "invalid_batch", Max: api.MaxBatchSize, Zero: "one job a start", ZeroGiven: true,
		Rule: fmt.Sprintf("must be between 1 and %d", api.MaxBatchSize),
		Doc:  fmt.Sprintf("most jobs one start carries, 1 to %d: jobs due within batch-wait of each other start together as one start, their target called once with all of them", api.MaxBatchSize)},
	{Name: "batch_wait", Field: "BatchWait", Flag: "batch-wait", Code: "invalid_batch", Zero: "no wait", ZeroGiven: true,
		Rule: "must not be negative",
		Doc:  "how long the first job of a batch waits for more, at most the least time between two starts of the queue's limit"},
})

// SkewRule is the skew's rule, said the same way in the help, docs/usage.md
// and docs/operations.md (Validate, WithDefaults).
const SkewRule = "less than the least average time between two starts the limit allows (the interval, or PERIOD/N of a rate or window); 1ns for none"

// described completes each setting with its field's place and kind in
// api.Config.
func described(ss []Setting) []Setting {
	t := reflect.TypeFor[api.Config]()
	for i := range ss {
		s := &ss[i]
		f, ok := t.FieldByName(s.Field)
		if !ok {
			panic("slot.Settings: api.Config has no field " + s.Field)
		}
		s.index = f.Index[0]
		switch f.Type {
		case reflect.TypeFor[time.Duration]():
			s.kind = "duration"
		case reflect.TypeFor[int]():
			s.kind = "count"
		case reflect.TypeFor[api.Rate]():
			s.kind = "rate"
		default:
			s.kind = "list"
		}
	}
	return ss
}

// settingNamed holds each Setting by its Name.
var settingNamed = func() map[string]*Setting {
	m := map[string]*Setting{}
	for i := range Settings {
		m[Settings[i].Name] = &Settings[i]
	}
	return m
}()

// SettingNamed is the setting of that wire name.
func SettingNamed(name string) (Setting, bool) {
	s, ok := settingNamed[name]
	if !ok {
		return Setting{}, false
	}
	return *s, true
}

// IsDuration reports whether the setting is a duration, IsCount whether
// it is a whole number and IsList whether it is a list.
func (s Setting) IsDuration() bool { return s.kind == "duration" }
func (s Setting) IsCount() bool    { return s.kind == "count" }
func (s Setting) IsList() bool     { return s.kind == "list" }

// scalar reports whether the setting is a number or a duration.
func (s Setting) scalar() bool { return s.IsDuration() || s.IsCount() }

// Get is the setting's value in c, a number or a duration
// (nanoseconds); Set gives it v.
func (s Setting) Get(c api.Config) int64 { return reflect.ValueOf(c).Field(s.index).Int() }

func (s Setting) Set(c *api.Config, v int64) { reflect.ValueOf(c).Elem().Field(s.index).SetInt(v) }

// WireMin is the least value the wire takes: Min, or 1 where an explicit
// zero is refused.
func (s Setting) WireMin() int64 {
	if !s.ZeroGiven && s.Min < 1 {
		return 1
	}
	return s.Min
}

// refusal is the error of the setting given explicitly as zero, or nil
// where zero is a setting of its own.
func (s Setting) refusal() *input.Error {
	if !s.scalar() || s.ZeroGiven {
		return nil
	}
	words := s.Refusal
	if words == "" {
		words = s.Rule + "; leave it out for " + s.Zero
	}
	return input.Invalid(s.Code, s.Name, s.Name+" "+words)
}

// invalid is the error of the setting out of range in c, or nil: a
// number or a duration outside Min and Max, or (max_backoff) below
// backoff. Only the settings with a Rule are checked here.
func (s Setting) invalid(c Config) *input.Error {
	if s.Rule == "" || !s.scalar() {
		return nil
	}
	v := s.Get(api.Config(c))
	ok := v >= s.Min && (s.Max == 0 || v <= s.Max)
	if s.Name == "max_backoff" {
		ok = c.MaxBackoff >= c.Backoff
	}
	if ok {
		return nil
	}
	return input.Invalid(s.Code, s.Name, s.Name+" "+s.Rule)
}
