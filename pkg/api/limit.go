package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is N starts per period Per, written "N/PER" as APIs publish their
// quotas: "100/1m", "500/1s", "5000/1h". PER is a duration with its unit;
// a bare unit means one of it ("100/s" is "100/1s").
type Rate struct {
	N   int
	Per time.Duration
}

// IsZero reports whether r gives no rate.
func (r Rate) IsZero() bool { return r.N == 0 && r.Per == 0 }

// String writes r as ParseRate reads it, its period in the largest
// units that write it exactly ("100/1m", not "100/1m0s").
func (r Rate) String() string { return strconv.Itoa(r.N) + "/" + FormatPeriod(r.Per) }

// Every is the emission interval of r: Per / N, the average time
// between two starts at the rate.
func (r Rate) Every() time.Duration {
	if r.N <= 0 {
		return 0
	}
	return r.Per / time.Duration(r.N)
}

// ParseRate reads "N/PER": N a positive integer, PER a duration with its
// unit ("1s", "1m", "1h30m"), each unit once and the largest first
// (ParseDuration), or a bare unit ("s", "m", "h"). A PER without a unit
// ("100/60") is refused: 60 could be seconds or minutes, and so is a
// repeated unit ("100/1h1h"), which is not added up.
func ParseRate(s string) (Rate, error) {
	n, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("%q is not a rate: write N/PERIOD, such as \"100/1m\" or \"500/1s\"", trunc(s))
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 {
		return Rate{}, fmt.Errorf("%q: the count before the slash must be a positive integer, such as \"100/1m\"", trunc(s))
	}
	per = strings.TrimSpace(per)
	switch per {
	case "ms", "s", "m", "h":
		per = "1" + per
	}
	if _, err := time.ParseDuration(per); err != nil {
		return Rate{}, fmt.Errorf("%q: the period after the slash must be a duration with its unit, such as \"1s\", \"1m\" or \"1h\"", trunc(s))
	}
	d, err := ParseDuration(per)
	if err != nil {
		return Rate{}, fmt.Errorf("%q: the period after the slash: %w", trunc(s), err)
	}
	return Rate{N: count, Per: d}, nil
}

// FormatPeriod writes d in the largest units that write it exactly:
// "1m", "1h30m", "500ms", "1.5s" stays "1500ms".
func FormatPeriod(d time.Duration) string {
	if d <= 0 || d%time.Millisecond != 0 {
		return d.String()
	}
	var b strings.Builder
	rest := d
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := rest / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			rest -= n * u.d
		}
	}
	return b.String()
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// MarshalJSON writes r as its string.
func (r Rate) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON reads a rate string ("100/1m").
func (r *Rate) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(bytes.TrimSpace(b), &s); err != nil {
		return fmt.Errorf("rate: want a string such as \"100/1m\", got %.40s", b)
	}
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Limit is one rule a queue keeps on its starts, in one of three forms
// (give exactly one of Interval, Rate and Window):
//
//   - Interval I: one start per I. For any two starts i < j,
//     s_j − s_i ≥ (j − i)·I − skew.
//   - Rate N/W with Burst B: GCRA with emission interval T = W/N. After
//     an idle time at most B+1 start together, and no run of starts is
//     faster than T apart on average beyond those B:
//     s_j − s_i ≥ (j − i − B)·T − skew. Burst 0 is the interval form.
//   - Window N/W: no span shorter than W holds more than N starts:
//     s_{i+N} − s_i ≥ W − skew.
//
// In JSON: {"interval": "1s"}, {"rate": "100/1m", "burst": 10},
// {"window": "5000/1h"}.
type Limit struct {
	Interval time.Duration
	Rate     Rate
	Burst    int
	Window   Rate
}

// String writes l as a user writes it: "interval 1s", "rate 100/1m
// burst 10", "window 5000/1h".
func (l Limit) String() string {
	switch {
	case !l.Rate.IsZero():
		if l.Burst > 0 {
			return fmt.Sprintf("rate %s burst %d", l.Rate, l.Burst)
		}
		return "rate " + l.Rate.String()
	case !l.Window.IsZero():
		return "window " + l.Window.String()
	}
	return "interval " + FormatPeriod(l.Interval)
}

// ParseLimit reads a limit in the words String writes: "interval 1s",
// "rate 100/1m", "rate 100/1m burst 10" or "window 5000/1h". It checks
// the words, not the ranges (the admin function's validation does).
func ParseLimit(s string) (Limit, error) {
	words := strings.Fields(s)
	if len(words) == 0 {
		return Limit{}, fmt.Errorf("no limit: write \"interval 1s\", \"rate 100/1m\", \"rate 100/1m burst 10\" or \"window 5000/1h\"")
	}
	var l Limit
	var err error
	switch form := words[0]; {
	case form == "interval" && len(words) == 2:
		if _, err := time.ParseDuration(words[1]); err != nil {
			return Limit{}, fmt.Errorf("%q: the interval must be a duration with its unit, such as \"interval 1s\"", trunc(s))
		}
		l.Interval, err = ParseDuration(words[1])
		if err != nil {
			return Limit{}, fmt.Errorf("%q: %w", trunc(s), err)
		}
		if l.Interval <= 0 {
			return Limit{}, fmt.Errorf("%q: the interval must be a duration with its unit, such as \"interval 1s\"", trunc(s))
		}
	case form == "rate" && (len(words) == 2 || len(words) == 4 && words[2] == "burst"):
		if l.Rate, err = ParseRate(words[1]); err != nil {
			return Limit{}, err
		}
		if len(words) == 4 {
			l.Burst, err = strconv.Atoi(words[3])
			if err != nil || l.Burst < 0 {
				return Limit{}, fmt.Errorf("%q: the burst must be a whole number, such as \"rate 100/1m burst 10\"", trunc(s))
			}
		}
	case form == "window" && len(words) == 2:
		if l.Window, err = ParseRate(words[1]); err != nil {
			return Limit{}, err
		}
	default:
		return Limit{}, fmt.Errorf("%q is not a limit: write \"interval 1s\", \"rate 100/1m\", \"rate 100/1m burst 10\" or \"window 5000/1h\"", trunc(s))
	}
	return l, nil
}

// ParseLimits reads limits separated by semicolons, as a queue's limits
// are printed: "rate 10/1s burst 2; window 1000/1h".
func ParseLimits(s string) ([]Limit, error) {
	var ls []Limit
	for part := range strings.SplitSeq(s, ";") {
		l, err := ParseLimit(part)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// limitJSON is Limit on the wire.
type limitJSON struct {
	Interval *Duration `json:"interval,omitempty"`
	Rate     *Rate     `json:"rate,omitempty"`
	Burst    *int      `json:"burst,omitempty"`
	Window   *Rate     `json:"window,omitempty"`
}

// MarshalJSON writes the form l gives.
func (l Limit) MarshalJSON() ([]byte, error) {
	var w limitJSON
	if l.Interval != 0 {
		d := Duration(l.Interval)
		w.Interval = &d
	}
	if !l.Rate.IsZero() {
		w.Rate = &l.Rate
	}
	if l.Burst != 0 {
		w.Burst = &l.Burst
	}
	if !l.Window.IsZero() {
		w.Window = &l.Window
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a limit's form.
func (l *Limit) UnmarshalJSON(b []byte) error {
	var w limitJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = Limit{}
	if w.Interval != nil {
		l.Interval = time.Duration(*w.Interval)
	}
	if w.Rate != nil {
		l.Rate = *w.Rate
	}
	if w.Burst != nil {
		l.Burst = *w.Burst
	}
	if w.Window != nil {
		l.Window = *w.Window
	}
	return nil
}
