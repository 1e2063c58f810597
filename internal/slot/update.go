package slot

import (
	"github.com/slotq/slotq/pkg/api"
)

// ConfigUpdate is a change to a queue's configuration, as configure
// carries it: each setting it gives (non-nil) replaces the queue's, each
// it leaves nil keeps the queue's value. Its fields are api.ConfigUpdate's
// (the type is defined by it). In JSON, a setting left out (or null) is
// nil, and one given as zero is refused unless zero is a setting of its
// own (ZeroSetting): max_running 0 is no cap, "targets": [] and
// "allow_networks": [] are none.
//
// An update that gives any of Interval, Rate, Window or Limits replaces
// the queue's limit whole; one that gives Burst alone changes the burst
// of the queue's rate.
type ConfigUpdate api.ConfigUpdate

// UpdateOf is the update that gives every setting of c that is not zero
// (a nil list is not given; an empty one is): what c says when its zero
// settings mean "the default" (or, for an update, "keep").
func UpdateOf(c Config) ConfigUpdate { return ConfigUpdate(api.Config(c).Update()) }

// Apply returns c with the settings u gives (api.ConfigUpdate.Apply).
func (u ConfigUpdate) Apply(c Config) Config {
	return Config(api.ConfigUpdate(u).Apply(api.Config(c)))
}
