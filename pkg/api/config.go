package api

import (
	"encoding/json"
	"time"
)

// Config is a queue's configuration. A zero setting means its default
// (the stack's, else slotq's): it is left out of the JSON, and the admin
// function fills it. docs/guarantees.md states the rules each setting
// keeps; docs/usage.md's configuration table gives ranges and defaults.
type Config struct {
	// Interval is the least time between two starts of the queue: the
	// interval form of its limit, the default form. Rate (with Burst) and
	// Window give the queue's limit in another form instead, and Limits
	// gives up to three limits, all kept at once (see Limit). A queue
	// gives at most one of Interval, Rate, Window and Limits.
	Interval time.Duration
	Rate     Rate
	Burst    int
	Window   Rate
	Limits   []Limit
	// Skew is the one-time allowance for clocks and wake-ups: for any
	// two starts i < j, start_j − start_i ≥ (j − i)·Interval − Skew. At
	// most a quarter of Interval; give 1ns for none (zero is the default).
	Skew time.Duration
	// MaxAttempts is how many attempts a job gets. Default 3.
	MaxAttempts int
	// Backoff is the delay before the first retry, doubled on each
	// further attempt, capped by MaxBackoff. Defaults 1s and 5m.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Retention is how long finished jobs are kept. Default 7 days.
	Retention time.Duration
	// Targets lists the HTTP and Lambda targets the queue's jobs may
	// name; AllowNetworks the private address prefixes its HTTP targets
	// may reach. Default none.
	Targets       []string
	AllowNetworks []string
	// TargetTimeout bounds one run of an HTTP or Lambda target. Default
	// 30s.
	TargetTimeout time.Duration
	// MaxRunning caps how many attempts run at once; 0 is no cap.
	MaxRunning int
	// KeyLimits give every key of the queue's jobs a limit of its own (up
	// to three, each in any form of Limit), kept beside the queue's: a
	// key's starts keep the key's limits and all starts keep the queue's.
	// A named key may have limits of its own instead (the admin's
	// set_key_limits). None by default.
	KeyLimits []Limit
	// KeyMaxRunning is how many jobs of one key run at once, 1 to 100: 0
	// means the default, one at a time; NoKeyCap means no cap (on the wire,
	// "key_max_running": 0), for a queue whose keys' limits alone space
	// their jobs.
	KeyMaxRunning int
	// MaxSlowDowns bounds how often one job's target may answer "slow
	// down" (an HTTP 429, target.RetryAfter): past it the job fails with
	// the last answer. Default 20.
	MaxSlowDowns int
	// RetryAfterDefault is the slow-down of an answer that names no time
	// (an HTTP 429 or 503 without Retry-After). Default 1s.
	RetryAfterDefault time.Duration
}

// NoKeyCap is the KeyMaxRunning of a queue that lets a key run any number
// of its jobs at once: "key_max_running": 0 on the wire.
const NoKeyCap = -1

// ConfigUpdate changes a queue's configuration: each setting it gives
// (non-nil) replaces the queue's, each it leaves nil keeps the queue's.
// Zero is refused where it is not a setting of its own (MaxRunning 0 is
// no cap, an empty Targets list is none).
//
// An update that gives any of Interval, Rate, Window or Limits replaces
// the queue's limit whole (the forms it leaves out are cleared); one that
// gives Burst alone changes the burst of the queue's rate.
type ConfigUpdate struct {
	Interval      *time.Duration
	Rate          *Rate
	Burst         *int
	Window        *Rate
	Limits        *[]Limit
	Skew          *time.Duration
	MaxAttempts   *int
	Backoff       *time.Duration
	MaxBackoff    *time.Duration
	Retention     *time.Duration
	Targets       *[]string
	AllowNetworks *[]string
	TargetTimeout *time.Duration
	MaxRunning    *int
	KeyLimits     *[]Limit
	KeyMaxRunning *int
	// MaxSlowDowns and RetryAfterDefault: see Config.
	MaxSlowDowns      *int
	RetryAfterDefault *time.Duration
}

// configJSON is Config and ConfigUpdate on the wire.
type configJSON struct {
	Interval      *Duration `json:"interval,omitempty"`
	Rate          *Rate     `json:"rate,omitempty"`
	Burst         *int      `json:"burst,omitempty"`
	Window        *Rate     `json:"window,omitempty"`
	Limits        *[]Limit  `json:"limits,omitempty"`
	Skew          *Duration `json:"skew,omitempty"`
	MaxAttempts   *int      `json:"max_attempts,omitempty"`
	Backoff       *Duration `json:"backoff,omitempty"`
	MaxBackoff    *Duration `json:"max_backoff,omitempty"`
	Retention     *Duration `json:"retention,omitempty"`
	Targets       *[]string `json:"targets,omitempty"`
	AllowNetworks *[]string `json:"allow_networks,omitempty"`
	TargetTimeout *Duration `json:"target_timeout,omitempty"`
	MaxRunning    *int      `json:"max_running,omitempty"`
	KeyLimits     *[]Limit  `json:"key_limits,omitempty"`
	KeyMaxRunning *int      `json:"key_max_running,omitempty"`

	MaxSlowDowns      *int      `json:"max_slow_downs,omitempty"`
	RetryAfterDefault *Duration `json:"retry_after_default,omitempty"`
}

// Update is the update that gives every setting of c that is not zero (a
// nil list is not given; an empty one is).
func (c Config) Update() ConfigUpdate {
	dur := func(d time.Duration) *time.Duration {
		if d == 0 {
			return nil
		}
		return &d
	}
	num := func(n int) *int {
		if n == 0 {
			return nil
		}
		return &n
	}
	u := ConfigUpdate{
		Interval: dur(c.Interval), Skew: dur(c.Skew), MaxAttempts: num(c.MaxAttempts),
		Backoff: dur(c.Backoff), MaxBackoff: dur(c.MaxBackoff), Retention: dur(c.Retention),
		TargetTimeout: dur(c.TargetTimeout), MaxRunning: num(c.MaxRunning),
		MaxSlowDowns: num(c.MaxSlowDowns), RetryAfterDefault: dur(c.RetryAfterDefault),
	}
	if !c.Rate.IsZero() {
		u.Rate = &c.Rate
	}
	u.Burst = num(c.Burst)
	if !c.Window.IsZero() {
		u.Window = &c.Window
	}
	if c.Limits != nil {
		u.Limits = &c.Limits
	}
	if c.KeyLimits != nil {
		u.KeyLimits = &c.KeyLimits
	}
	u.KeyMaxRunning = num(c.KeyMaxRunning)
	if c.Targets != nil {
		u.Targets = &c.Targets
	}
	if c.AllowNetworks != nil {
		u.AllowNetworks = &c.AllowNetworks
	}
	return u
}

// MarshalJSON writes durations as strings and leaves zero settings out.
func (c Config) MarshalJSON() ([]byte, error) {
	u := c.Update()
	if len(c.Targets) == 0 {
		u.Targets = nil
	}
	if len(c.AllowNetworks) == 0 {
		u.AllowNetworks = nil
	}
	if len(c.Limits) == 0 {
		u.Limits = nil
	}
	if len(c.KeyLimits) == 0 {
		u.KeyLimits = nil
	}
	return u.MarshalJSON()
}

// UnmarshalJSON reads a configuration; a setting left out is zero.
func (c *Config) UnmarshalJSON(b []byte) error {
	var u ConfigUpdate
	if err := u.UnmarshalJSON(b); err != nil {
		return err
	}
	get := func(d *time.Duration) time.Duration {
		if d == nil {
			return 0
		}
		return *d
	}
	*c = Config{
		Interval: get(u.Interval), Skew: get(u.Skew), Backoff: get(u.Backoff), MaxBackoff: get(u.MaxBackoff),
		Retention: get(u.Retention), TargetTimeout: get(u.TargetTimeout), RetryAfterDefault: get(u.RetryAfterDefault),
	}
	if u.MaxSlowDowns != nil {
		c.MaxSlowDowns = *u.MaxSlowDowns
	}
	if u.MaxAttempts != nil {
		c.MaxAttempts = *u.MaxAttempts
	}
	if u.MaxRunning != nil {
		c.MaxRunning = *u.MaxRunning
	}
	if u.Rate != nil {
		c.Rate = *u.Rate
	}
	if u.Burst != nil {
		c.Burst = *u.Burst
	}
	if u.Window != nil {
		c.Window = *u.Window
	}
	if u.Limits != nil {
		c.Limits = *u.Limits
	}
	if u.KeyLimits != nil {
		c.KeyLimits = *u.KeyLimits
	}
	if u.KeyMaxRunning != nil {
		c.KeyMaxRunning = *u.KeyMaxRunning
	}
	if u.Targets != nil {
		c.Targets = *u.Targets
	}
	if u.AllowNetworks != nil {
		c.AllowNetworks = *u.AllowNetworks
	}
	return nil
}

// MarshalJSON writes the settings u gives, durations as strings.
func (u ConfigUpdate) MarshalJSON() ([]byte, error) {
	dur := func(d *time.Duration) *Duration {
		if d == nil {
			return nil
		}
		v := Duration(*d)
		return &v
	}
	return json.Marshal(configJSON{
		Interval: dur(u.Interval), Rate: u.Rate, Burst: u.Burst, Window: u.Window, Limits: u.Limits,
		Skew: dur(u.Skew), MaxAttempts: u.MaxAttempts,
		Backoff: dur(u.Backoff), MaxBackoff: dur(u.MaxBackoff), Retention: dur(u.Retention),
		Targets: u.Targets, AllowNetworks: u.AllowNetworks, TargetTimeout: dur(u.TargetTimeout),
		MaxRunning: u.MaxRunning, KeyLimits: u.KeyLimits, KeyMaxRunning: keyCapOut(u.KeyMaxRunning),
		MaxSlowDowns: u.MaxSlowDowns, RetryAfterDefault: dur(u.RetryAfterDefault),
	})
}

// keyCapOut is KeyMaxRunning on the wire (NoKeyCap is 0 there), and
// keyCapIn reads it back.
func keyCapOut(n *int) *int {
	if n != nil && *n == NoKeyCap {
		z := 0
		return &z
	}
	return n
}

func keyCapIn(n *int) *int {
	if n != nil && *n == 0 {
		v := NoKeyCap
		return &v
	}
	return n
}

// UnmarshalJSON reads the settings an update gives.
func (u *ConfigUpdate) UnmarshalJSON(b []byte) error {
	var w configJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	dur := func(d *Duration) *time.Duration {
		if d == nil {
			return nil
		}
		v := time.Duration(*d)
		return &v
	}
	*u = ConfigUpdate{
		Interval: dur(w.Interval), Rate: w.Rate, Burst: w.Burst, Window: w.Window, Limits: w.Limits,
		Skew: dur(w.Skew), MaxAttempts: w.MaxAttempts,
		Backoff: dur(w.Backoff), MaxBackoff: dur(w.MaxBackoff), Retention: dur(w.Retention),
		Targets: w.Targets, AllowNetworks: w.AllowNetworks, TargetTimeout: dur(w.TargetTimeout),
		MaxRunning: w.MaxRunning, KeyLimits: w.KeyLimits, KeyMaxRunning: keyCapIn(w.KeyMaxRunning),
		MaxSlowDowns: w.MaxSlowDowns, RetryAfterDefault: dur(w.RetryAfterDefault),
	}
	return nil
}
