package esm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/local/lambdahost"
)

// Emulation is what AWS plays in front of a stack's functions after
// deployment: the SQS event source mapping of the worker function on the
// slot queue, and the schedule of the resume function. The local runtime
// (pkg/local) and `slotq sam start-lambda` put it in front of their
// functions.
type Emulation struct {
	// Invoker runs the functions: Go handlers in this process, or built
	// bootstraps (lambdahost.Host).
	Invoker lambdahost.Invoker
	// Queue is the slot queue the event source polls.
	Queue Queue
	// Worker and Resume name the worker and resume functions.
	Worker, Resume string
	// Mapping is the event source mapping's settings.
	Mapping Config
	// Every, Input and Retries are the schedule's rate, its constant
	// input and its retries.
	Every   time.Duration
	Input   []byte
	Retries int
	// Log receives the emulation's own warnings. Default: none.
	Log *slog.Logger
	// Started, if set, hears the queue's attributes once the emulation
	// runs.
	Started func(Attributes)
}

// Run plays the event source and the schedule until ctx ends.
func (e Emulation) Run(ctx context.Context) error {
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	attrs, err := e.Queue.Attributes(ctx)
	if err != nil {
		return fmt.Errorf("slot queue: %w", err)
	}
	m := &Mapping{Queue: e.Queue, Invoke: Function(e.Invoker, e.Worker), Log: e.Log, Config: e.Mapping}
	s := &Schedule{Every: e.Every, Input: e.Input, Retries: e.Retries, Invoke: Target(e.Invoker, e.Resume), Log: e.Log}
	if e.Started != nil {
		e.Started(attrs)
	}
	var wg sync.WaitGroup
	var errs [2]error
	wg.Go(func() { errs[0] = m.Run(ctx) })
	wg.Go(func() { errs[1] = s.Run(ctx) })
	wg.Wait()
	return errors.Join(errs[:]...)
}
