// Package worker is the worker function's handler: an SQS batch in
// (events.SQSEvent, as the event source mapping delivers it), engine.Work
// for each message, the partial batch response out. It also holds the
// stack's built-in job kinds (Kinds). functions/worker runs it on Lambda;
// pkg/local runs the same handler behind its emulated event source.
package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/internal/buildinfo"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/metrics"
	"github.com/slotq/slotq/internal/sqstransport"
)

// Worker is the engine call the handler makes.
type Worker interface {
	Work(ctx context.Context, env job.Envelope) error
}

// Handler translates an SQS batch into engine.Work calls.
type Handler struct {
	Engine Worker
	Log    *slog.Logger
	// Metrics, if set, is the engine's Observer: Handle flushes it after
	// each batch (EMF lines through Log's output).
	Metrics *metrics.Recorder

	// first logs, once, what the worker was built from.
	first sync.Once
}

// Handle works the batch's messages, queues at once and each queue's
// messages one after another in slot order (see sqstransport.WorkBatch),
// and reports as batch item failures exactly the messages whose Work
// failed, so SQS delivers only those again. Work budgets each message
// against ctx's deadline (the invocation's): a job whose slot wait,
// target timeout and recording do not fit before it is handed back to the
// queue unstarted.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	h.first.Do(func() {
		h.Log.InfoContext(ctx, "slotq worker: first invocation", "version", buildinfo.String())
	})
	if h.Metrics != nil {
		defer h.Metrics.Flush(ctx)
	}
	return sqstransport.WorkBatch(ctx, ev.Records, h.Engine.Work, func(env job.Envelope, err error) {
		if env.JobID == "" {
			h.Log.ErrorContext(ctx, "dropped undecodable message", "error", err.Error())
			return
		}
		if errors.Is(err, engine.ErrStillRunning) {
			// A duplicate of a running attempt's message, or a batch's
			// job its leader runs: kept as the attempt's watchdog.
			h.Log.InfoContext(ctx, "attempt running elsewhere; the message stays as its watchdog", "queue", env.Queue,
				"job_id", env.JobID, "ticket", env.Ticket)
			return
		}
		h.Log.ErrorContext(ctx, "work failed; the message will come back", "queue", env.Queue,
			"job_id", env.JobID, "ticket", env.Ticket, "error", err.Error())
	}), nil
}
