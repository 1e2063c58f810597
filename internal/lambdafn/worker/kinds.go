package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// Echo is the built-in job kind that logs its payload and succeeds, with
// the payload as its result (what a wait prints). It
// needs no target and no allow-list entry, so it tries a queue's rate, in
// production as locally, without calling anything: enqueue a few hundred
// echo jobs and watch their starts.
const Echo = "echo"

// Sleep is the built-in job kind that takes the payload's "ms"
// milliseconds (`{"ms": 1500}`; none: 1000), within its target timeout,
// and succeeds: a stand-in for work that takes time, to try keys and
// max_running.
const Sleep = "sleep"

// Fail is the built-in job kind that fails: every attempt, or with the
// payload's "times" only its first that many (`{"times": 2, "error":
// "upstream 503"}`), counting attempts across reruns. A dead letter to
// try retry on: with the default max_attempts (3), `{"times": 3}` fails
// for good, and runs again on request with success.
const Fail = "fail"

// Kinds returns the Go handlers the stack's worker runs, by job kind: the
// built-in ones (Echo, Sleep, Fail). To run Go code of your own, deploy a worker of your
// own instead (pkg/worker: worker.Start(mux) adds the built-ins to your
// mux). A job whose kind has no handler fails without retry.
func Kinds(log *slog.Logger) *target.Mux {
	m := target.NewMux()
	Builtin(m, log)
	return m
}

// Builtin registers on m the built-in kinds it has no handler of, logging
// to log.
func Builtin(m *target.Mux, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	handle := func(kind string, h func(context.Context, *api.Job) error) {
		if !m.Has(kind) {
			m.HandleFunc(kind, h)
		}
	}
	handle(Echo, func(ctx context.Context, j *api.Job) error {
		log.InfoContext(ctx, "echo", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket,
			"attempt", j.Attempt, "payload", json.RawMessage(j.Payload))
		if len(j.Payload) > 0 {
			_ = target.SetResult(ctx, json.RawMessage(j.Payload)) // over 32 KiB: not kept
		}
		return nil
	})
	handle(Fail, func(ctx context.Context, j *api.Job) error {
		p := struct {
			Times *int   `json:"times"`
			Error string `json:"error"`
		}{}
		if len(j.Payload) > 0 {
			if err := json.Unmarshal(j.Payload, &p); err != nil {
				return target.SkipRetry(fmt.Errorf("fail: payload: %w", err))
			}
		}
		if p.Times != nil && j.Attempt > *p.Times {
			return nil
		}
		if p.Error == "" {
			p.Error = "failed on purpose"
		}
		return fmt.Errorf("fail: attempt %d: %s", j.Attempt, p.Error)
	})
	handle(Sleep, func(ctx context.Context, j *api.Job) error {
		p := struct {
			Ms *int64 `json:"ms"`
		}{}
		if len(j.Payload) > 0 {
			if err := json.Unmarshal(j.Payload, &p); err != nil {
				return target.SkipRetry(fmt.Errorf("sleep: payload: %w", err))
			}
		}
		d := time.Second
		if p.Ms != nil {
			d = time.Duration(max(0, *p.Ms)) * time.Millisecond
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("sleep: %w", context.Cause(ctx))
		}
	})
}
