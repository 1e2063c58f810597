package esm

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Schedule invokes a function at a fixed rate, as an EventBridge Scheduler
// rate schedule does. Set its fields, then Run.
type Schedule struct {
	// Every is the period. Required.
	Every time.Duration
	// Input is the event every invocation gets (the schedule's Input).
	Input []byte
	// Retries is MaximumRetryAttempts: how often a failed invocation is
	// tried again, with backoff, before the schedule waits for the next
	// period. Default 0.
	Retries int
	// Invoke invokes the target synchronously; an error is a failure.
	Invoke func(ctx context.Context, input []byte) error
	// Log receives a line per failed invocation. Default: discard.
	Log *slog.Logger
}

// ParseRate reads a ScheduleExpression of the form rate(N unit), unit one
// of minute(s), hour(s) or day(s).
func ParseRate(expr string) (time.Duration, error) {
	in, ok := strings.CutPrefix(strings.TrimSpace(expr), "rate(")
	in, ok2 := strings.CutSuffix(in, ")")
	f := strings.Fields(in)
	if !ok || !ok2 || len(f) != 2 {
		return 0, fmt.Errorf("schedule %q: want rate(N unit)", expr)
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("schedule %q: %q is no positive whole number", expr, f[0])
	}
	unit := map[string]time.Duration{"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour,
		"hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}[f[1]]
	if unit == 0 {
		return 0, fmt.Errorf("schedule %q: unit %q is not minute(s), hour(s) or day(s)", expr, f[1])
	}
	return time.Duration(n) * unit, nil
}

// Run invokes at once and then every period until ctx ends. Invocations
// do not overlap: a slow one delays the next tick, as a single-flight
// target would see.
func (s *Schedule) Run(ctx context.Context) error {
	if s.Every <= 0 {
		return fmt.Errorf("schedule: period %v", s.Every)
	}
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(s.Every)
	defer t.Stop()
	for {
		s.fire(ctx, log)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *Schedule) fire(ctx context.Context, log *slog.Logger) {
	backoff := time.Second
	for try := 0; ctx.Err() == nil; try++ {
		err := s.Invoke(ctx, s.Input)
		if err == nil || ctx.Err() != nil {
			return
		}
		log.WarnContext(ctx, "schedule: invocation failed", "attempt", try+1, "error", err.Error())
		if try >= s.Retries {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(backoff, s.Every)):
		}
		backoff *= 2
	}
}
