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
// none, not the stack's default targets or networks. It reads the
// configuration and writes it whole: of two changes of one queue at the
// same moment, the later write wins whole. A new interval that the
// queue's skew does not fit under is refused, naming the skew, rather
// than changing the skew unasked.
func (e *Engine) ChangeConfig(ctx context.Context, name string, u slot.ConfigUpdate) (Queue, error) {
	q, _, err := e.Change(ctx, name, u)
	return q, err
}

// Change is ChangeConfig, also saying what the change did to the jobs
// already booked (Reconfigure).
func (e *Engine) Change(ctx context.Context, name string, u slot.ConfigUpdate) (Queue, Reslot, error) {
	q, err := e.Queue(ctx, name)
	if err != nil {
		return Queue{}, Reslot{}, err
	}
	cfg := q.Config
	if cfg.Targets == nil {
		cfg.Targets = []string{}
	}
	if cfg.AllowNetworks == nil {
		cfg.AllowNetworks = []string{}
	}
	if u.Interval != nil && u.Skew == nil && cfg.Skew >= *u.Interval && *u.Interval >= slot.MinInterval {
		return Queue{}, Reslot{}, input.Invalid("invalid_skew", "config.skew", fmt.Sprintf(
			"the queue's skew %s must be less than the new interval %s: give a skew too", cfg.Skew, *u.Interval))
	}
	return e.Reconfigure(ctx, name, u.Apply(cfg))
}
