package engine

import (
	"context"
	"fmt"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/slot"
)

// ChangeConfig changes the settings of a queue that u gives and keeps the
// others: configure as the admin function and the CLI ask for it (Configure
// replaces the configuration whole). A list the queue holds empty stays
// none, not the stack's default targets or networks. Two changes of one
// queue at the same moment take their turns (Reconfigure), each applied
// to the configuration the one before it wrote. A new interval that the
// queue's skew does not fit under is refused, naming the skew, rather
// than changing the skew unasked.
func (e *Engine) ChangeConfig(ctx context.Context, name string, u slot.ConfigUpdate) (Queue, error) {
	q, _, err := e.Change(ctx, name, u)
	return q, err
}

// Change is ChangeConfig, also saying what the change did to the jobs
// already booked (Reconfigure).
func (e *Engine) Change(ctx context.Context, name string, u slot.ConfigUpdate) (Queue, Reslot, error) {
	return e.reconfigure(ctx, name, func(q Queue) (slot.Config, error) {
		cfg := q.Config
		if cfg.Targets == nil {
			cfg.Targets = []string{}
		}
		if cfg.AllowNetworks == nil {
			cfg.AllowNetworks = []string{}
		}
		if u.Interval != nil && u.Skew == nil && cfg.Skew >= *u.Interval && *u.Interval >= slot.MinInterval {
			return cfg, input.Invalid("invalid_skew", "config.skew", fmt.Sprintf(
				"the queue's skew %s must be less than the new interval %s: give a skew too", cfg.Skew, *u.Interval))
		}
		return u.Apply(cfg), nil
	})
}
