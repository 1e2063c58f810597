package engine

import (
	"context"
	"fmt"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/slot"
)

// ChangeConfig does Engine.ChangeConfig's work.
func (e *admin) ChangeConfig(ctx context.Context, name string, u slot.ConfigUpdate) (Queue, error) {
	q, _, err := e.Change(ctx, name, u)
	return q, err
}

// Change does Engine.Change's work.
func (e *admin) Change(ctx context.Context, name string, u slot.ConfigUpdate) (Queue, Reslot, error) {
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
