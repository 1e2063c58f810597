package slot

import (
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// ConfigUpdate is a change to a queue's configuration, as configure
// carries it: each setting it gives (non-nil) replaces the queue's, each
// it leaves nil keeps the queue's value. In JSON, a setting left out (or
// null) is nil, and one given as zero is refused unless zero is a setting
// of its own (ZeroSetting): max_running 0 is no cap, "targets": [] and
// "allow_networks": [] are none.
//
// An update that gives any of Interval, Rate, Window or Limits replaces
// the queue's limit whole; one that gives Burst alone changes the burst
// of the queue's rate.
type ConfigUpdate struct {
	Interval      *time.Duration
	Rate          *api.Rate
	Burst         *int
	Window        *api.Rate
	Limits        *[]api.Limit
	Skew          *time.Duration
	MaxAttempts   *int
	Backoff       *time.Duration
	MaxBackoff    *time.Duration
	Retention     *time.Duration
	Targets       *[]string
	AllowNetworks *[]string
	TargetTimeout *time.Duration
	MaxRunning    *int
	KeyLimits     *[]api.Limit
	KeyMaxRunning *int

	MaxSlowDowns      *int
	RetryAfterDefault *time.Duration
}

// UpdateOf is the update that gives every setting of c that is not zero
// (a nil list is not given; an empty one is): what c says when its zero
// settings mean "the default" (or, for an update, "keep").
func UpdateOf(c Config) ConfigUpdate { return ConfigUpdate(api.Config(c).Update()) }

// Apply returns c with the settings u gives.
func (u ConfigUpdate) Apply(c Config) Config {
	set := func(dst *time.Duration, v *time.Duration) {
		if v != nil {
			*dst = *v
		}
	}
	if u.Interval != nil || u.Rate != nil || u.Window != nil || u.Limits != nil {
		c.Interval, c.Rate, c.Burst, c.Window, c.Limits = 0, api.Rate{}, 0, api.Rate{}, nil
	}
	set(&c.Interval, u.Interval)
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
	set(&c.Skew, u.Skew)
	set(&c.Backoff, u.Backoff)
	set(&c.MaxBackoff, u.MaxBackoff)
	set(&c.Retention, u.Retention)
	set(&c.TargetTimeout, u.TargetTimeout)
	set(&c.RetryAfterDefault, u.RetryAfterDefault)
	if u.MaxSlowDowns != nil {
		c.MaxSlowDowns = *u.MaxSlowDowns
	}
	if u.MaxAttempts != nil {
		c.MaxAttempts = *u.MaxAttempts
	}
	if u.MaxRunning != nil {
		c.MaxRunning = *u.MaxRunning
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
	return c
}
