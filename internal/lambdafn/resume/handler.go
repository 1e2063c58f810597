// Package resume is the resume function's handler: the schedule's event
// in, engine.Resume over every queue, the report out. functions/resume runs
// it on Lambda under EventBridge Scheduler; pkg/local runs the same handler
// on its emulated schedule.
package resume

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/metrics"
)

// Resumer is the engine call the handler makes.
type Resumer interface {
	Resume(ctx context.Context) (engine.ResumeReport, error)
}

// Handler runs the engine's Resume for the schedule.
type Handler struct {
	Engine Resumer
	Log    *slog.Logger
	// Metrics, if set, is the engine's Observer: Handle flushes it after
	// each run (EMF lines through Log's output).
	Metrics *metrics.Recorder
}

// Handle ignores the event (the schedule's input), runs Resume over every
// queue, logs what it did (with its backlog, and how far a rebuild of the
// records under way is) and returns the report; with Metrics it
// publishes them too (metrics.Recorder.Resumed). If some queue failed,
// the error is returned as well, so the schedule's retry policy and the
// function's error metrics see it; queues that succeeded are done.
func (h *Handler) Handle(ctx context.Context, _ json.RawMessage) (engine.ResumeReport, error) {
	rep, err := h.Engine.Resume(ctx)
	if h.Metrics != nil {
		h.Metrics.Resumed(rep)
		h.Metrics.Flush(ctx)
	}
	attrs := []any{"queues", rep.Queues, "lifted", rep.Lifted, "reticketed", rep.Reticketed,
		"released", rep.Released, "busy", rep.Busy, "continued", rep.Continued, "deferred", rep.Deferred,
		"backlog", rep.Backlog}
	if p := rep.Reindex; p != nil {
		// A rebuild of the records is under way: how far it is.
		attrs = append(attrs, slog.Group("reindex", "done", p.Done, "queues_done", p.QueuesDone,
			"queues_left", p.QueuesLeft, "queue", p.Queue, "jobs", p.Jobs, "lanes", p.Lanes))
	}
	if err != nil {
		h.Log.ErrorContext(ctx, "resume failed", append(attrs, "error", err.Error())...)
		return rep, err
	}
	h.Log.InfoContext(ctx, "resume done", attrs...)
	return rep, nil
}
