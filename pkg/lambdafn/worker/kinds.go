package worker

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/slotq/slotq/pkg/job"
	"github.com/slotq/slotq/pkg/target"
)

// Echo is the built-in job kind that logs its payload and succeeds. It
// needs no target and no allow-list entry, so it tries a queue's rate, in
// production as locally, without calling anything: enqueue a few hundred
// echo jobs and watch their starts.
const Echo = "echo"

// Kinds returns the Go handlers the stack's worker runs, by job kind: the
// built-in ones (Echo). To run Go code of your own, deploy a worker of your
// own instead (pkg/worker: worker.Start(mux) adds the built-ins to your
// mux). A job whose kind has no handler fails without retry.
func Kinds(log *slog.Logger) *target.Mux {
	m := target.NewMux()
	Builtin(m, log)
	return m
}

// Builtin registers the built-in kinds on m, logging to log.
func Builtin(m *target.Mux, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m.HandleFunc(Echo, func(ctx context.Context, j *job.Job) error {
		log.InfoContext(ctx, "echo", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket,
			"attempt", j.Attempt, "payload", json.RawMessage(j.Payload))
		return nil
	})
}
