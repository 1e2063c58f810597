package slot

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/pkg/api"
)

// Limit is one rule a queue keeps on its starts, in one of three forms
// (api.Limit states each form's rule).
type Limit = api.Limit

// Limits are a queue's limits, all kept at once. A nil Limits is never
// passed to the gate; Every gives the plain interval form.
type Limits []Limit

// Bounds of the limit forms.
const (
	// MaxLimits is how many limits one queue may keep at once (such as
	// 10 per second and 1,000 per hour).
	MaxLimits = 3
	// MaxBurst is the largest burst of a rate: after an idle time
	// Burst+1 starts come together, each a write of the queue's state
	// item, and one DynamoDB item takes about 1,000 writes a second.
	MaxBurst = 100
	// MaxWindowN is the most starts a window may allow. The gate keeps
	// the window's recent starts on the queue's state item as at most
	// MaxRuns runs of equal times, so its size does not grow with N.
	MaxWindowN = 100_000
	// MaxRuns is how many runs of equal start times a window keeps (see
	// Mark): past it the two oldest merge into the later one's time, which
	// counts those starts as later than they were — stricter, never
	// looser.
	MaxRuns = 32
)

// Every is the plain interval form: one start per iv.
func Every(iv time.Duration) Limits { return Limits{{Interval: iv}} }

// Limits returns c's limits as one list: Limits if given, else the one
// limit Rate (with Burst), Window or Interval gives.
func (c Config) LimitList() Limits {
	switch {
	case len(c.Limits) > 0:
		return Limits(c.Limits)
	case !c.Rate.IsZero():
		return Limits{{Rate: c.Rate, Burst: c.Burst}}
	case !c.Window.IsZero():
		return Limits{{Window: c.Window}}
	}
	return Every(c.Interval)
}

// Tick is the shortest time between two starts c's limits allow on
// average: the interval, a rate's or a window's period divided by its
// count. The skew must be less than it, and its default is at most a
// quarter of it.
func (c Config) Tick() time.Duration {
	var tick time.Duration
	for _, l := range c.LimitList() {
		if t := every(l); t > 0 && (tick == 0 || t < tick) {
			tick = t
		}
	}
	return tick
}

// Spacing is the longest time between two starts ls's limits allow on
// average: the longest of their intervals, or of their rates' and
// windows' periods divided by their counts.
func (ls Limits) Spacing() time.Duration {
	var t time.Duration
	for _, l := range ls {
		t = max(t, every(l))
	}
	return t
}

// Plain reports whether ls is the plain interval form alone: the form
// every queue had before the rate and window forms, which the stores
// keep without anything more on the state item.
func (ls Limits) Plain() bool {
	return len(ls) == 1 && ls[0].Rate.IsZero() && ls[0].Window.IsZero()
}

// Signature is ls in one canonical string, such as "rate 100/1m burst
// 10; window 5000/1h": the stores keep it on the queue's state item, and
// a take or gate asked under other limits than the queue's is refused
// (the caller read the queue before a configure).
func (ls Limits) Signature() string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, "; ")
}

// String is Signature.
func (ls Limits) String() string { return ls.Signature() }

// every is l's emission interval: the interval, or period / count.
func every(l Limit) time.Duration {
	switch {
	case !l.Rate.IsZero():
		return l.Rate.Every()
	case !l.Window.IsZero():
		return l.Window.Every()
	}
	return l.Interval
}

// validateLimits checks the limit settings of c: one form, a count and a
// period in range, a burst only with a rate, at most MaxLimits.
func (c Config) validateLimits() error {
	forms := 0
	for _, set := range []bool{c.Interval != 0, !c.Rate.IsZero(), !c.Window.IsZero(), len(c.Limits) > 0} {
		if set {
			forms++
		}
	}
	if forms > 1 {
		field := "rate"
		switch {
		case len(c.Limits) > 0:
			field = "limits"
		case !c.Window.IsZero():
			field = "window"
		}
		return input.Invalid("invalid_limit", field, "a queue's limit takes one form: give one of interval, rate (with burst) and window, or limits: a list of up to 3 of them")
	}
	if c.Burst != 0 && c.Rate.IsZero() {
		return input.Invalid("invalid_burst", "burst", "burst goes with a rate, such as \"rate\": \"100/1m\", \"burst\": 10")
	}
	if len(c.Limits) > 0 {
		if len(c.Limits) > MaxLimits {
			return input.Invalid("too_many_limits", "limits", fmt.Sprintf("%d limits; a queue keeps at most %d at once", len(c.Limits), MaxLimits))
		}
		for i, l := range c.Limits {
			if err := ValidateLimit(l, fmt.Sprintf("limits[%d].", i)); err != nil {
				return err
			}
		}
		return nil
	}
	return ValidateLimit(c.LimitList()[0], "")
}

// ValidateLimit checks one limit, naming a bad value under prefix (such
// as "limits[1]."): exactly one form, counts and periods in range.
func ValidateLimit(l Limit, prefix string) error {
	forms := 0
	for _, set := range []bool{l.Interval != 0, !l.Rate.IsZero(), !l.Window.IsZero()} {
		if set {
			forms++
		}
	}
	switch {
	case forms == 0 && prefix == "":
		return input.Invalid("invalid_interval", "interval", fmt.Sprintf("interval must be at least %s", MinInterval))
	case forms == 0:
		return input.Invalid("invalid_limit", strings.TrimSuffix(prefix, "."), "a limit gives one form: interval, rate (with burst) or window")
	case forms > 1:
		return input.Invalid("invalid_limit", strings.TrimSuffix(prefix, "."), "a limit takes one form: give one of interval, rate and window; list several limits to keep several")
	case l.Burst != 0 && l.Rate.IsZero():
		return input.Invalid("invalid_burst", prefix+"burst", "burst goes with a rate")
	case l.Burst < 0 || l.Burst > MaxBurst:
		return input.Invalid("invalid_burst", prefix+"burst", fmt.Sprintf("burst must be between 0 and %d: a burst's starts come together, each a write of the queue's state item", MaxBurst))
	case l.Interval != 0 && l.Interval < MinInterval:
		return input.Invalid("invalid_interval", prefix+"interval", fmt.Sprintf("interval must be at least %s: each start writes the queue's state item, which takes about 1,000 writes a second", MinInterval))
	case l.Interval > MaxInterval:
		return input.Invalid("invalid_interval", prefix+"interval", fmt.Sprintf("interval must be at most %s", MaxInterval))
	}
	for _, r := range []struct {
		name, code string
		r          api.Rate
	}{{"rate", "invalid_rate", l.Rate}, {"window", "invalid_window", l.Window}} {
		if r.r.IsZero() {
			continue
		}
		field := prefix + r.name
		switch {
		case r.r.N < 1:
			return input.Invalid(r.code, field, fmt.Sprintf("%s %s: the count must be a positive integer", r.name, r.r))
		case r.r.Per < MinInterval:
			return input.Invalid(r.code, field, fmt.Sprintf("%s %s: the period must be at least %s", r.name, r.r, MinInterval))
		case r.r.Per > MaxRatePeriod:
			return input.Invalid(r.code, field, fmt.Sprintf("%s %s: the period must be at most %s", r.name, r.r, api.FormatPeriod(MaxRatePeriod)))
		case r.name == "window" && r.r.N > MaxWindowN:
			return input.Invalid("invalid_window", field, fmt.Sprintf("window %s: a window allows at most %d starts", r.r, MaxWindowN))
		case r.r.Every() < MinInterval:
			return input.Invalid(r.code, field, fmt.Sprintf("%s %s is more than one start per %s on average: each start writes the queue's state item, which takes about 1,000 writes a second", r.name, r.r, MinInterval))
		}
	}
	return nil
}

// MaxRatePeriod is the longest period of a rate or a window.
const MaxRatePeriod = 31 * 24 * time.Hour

// Breach is a run of starts that breaks a limit: By is how much too close
// they came, beyond the skew.
type Breach struct {
	Limit Limit
	// I and J index the two starts (in start order) that came too close.
	I, J int
	By   time.Duration
}

// Breaches judges starts (any order) against ls with skew as the one
// allowance and returns every pair that breaks a limit's rule, per limit
// the first start j of each breach with its worst partner:
//
//   - interval I: s_j − s_i ≥ (j − i)·I − skew;
//   - rate N/W, burst B (T = W/N): s_j − s_i ≥ (j − i − B)·T − skew;
//   - window N/W: s_{i+N} − s_i ≥ W − skew.
//
// The simulations, slotq demo and slotq bench judge starts by it.
func Breaches(ls Limits, skew time.Duration, starts []time.Time) []Breach {
	s := slices.SortedFunc(slices.Values(starts), time.Time.Compare)
	var out []Breach
	for _, l := range ls {
		if !l.Window.IsZero() {
			n, w := l.Window.N, l.Window.Per
			for i := 0; i+n < len(s); i++ {
				if gap := s[i+n].Sub(s[i]); gap < w-skew {
					out = append(out, Breach{Limit: l, I: i, J: i + n, By: w - skew - gap})
				}
			}
			continue
		}
		// With x_k = s_k − k·T the rule is x_j ≥ x_i − B·T − skew for all
		// i < j: it is enough to hold each x_j to the largest x_i before it.
		t := every(l)
		allow := time.Duration(l.Burst)*t + skew
		best, bestI := time.Duration(0), -1
		for j := range s {
			x := s[j].Sub(s[0]) - time.Duration(j)*t
			if bestI >= 0 && x < best-allow {
				out = append(out, Breach{Limit: l, I: bestI, J: j, By: best - allow - x})
			}
			if bestI < 0 || x > best {
				best, bestI = x, j
			}
		}
	}
	return out
}
