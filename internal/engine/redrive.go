package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/pkg/api"
)

// DeadLetter is one message received from the slot queue's dead-letter
// queue.
type DeadLetter struct {
	// Handle names this receive, for DeadLetterQueue.DeleteDead.
	Handle string
	// Envelope is the message's job envelope; Err, when set, says why
	// the body could not be decoded (Envelope is then zero).
	Envelope job.Envelope
	Err      error
}

// DeadLetterQueue is the slot queue's dead-letter queue, where the
// transport moves a message that was received too often without being
// done with (SQS's redrive policy: a worker that crashed on it each
// time). internal/sqstransport and internal/memstore implement it.
type DeadLetterQueue interface {
	// ReceiveDead returns up to n (1 to 10) messages, each hidden from
	// other receives for a while; none when the queue is empty.
	ReceiveDead(ctx context.Context, n int) ([]DeadLetter, error)
	// DeleteDead deletes received messages by their handles.
	DeleteDead(ctx context.Context, handles ...string) error
}

// Redrive bounds.
const (
	// DefaultRedrive and MaxRedrive bound the messages one Redrive call
	// receives.
	DefaultRedrive = 100
	MaxRedrive     = 1000
)

// RedriveReport says what Redrive did with the messages it received
// (api.RedriveReport, the type users decode).
type RedriveReport = api.RedriveReport

// Redrive does Engine.Redrive's work.
func (e *resumer) Redrive(ctx context.Context, dlq DeadLetterQueue, limit int) (RedriveReport, error) {
	var rep RedriveReport
	if limit < 0 || limit > MaxRedrive {
		return rep, input.Invalid("invalid_limit", "limit", fmt.Sprintf("limit must be between 0 (the default, %d) and %d", DefaultRedrive, MaxRedrive))
	}
	if dlq == nil {
		return rep, input.Invalid("no_dead_letter_queue", "op", "this stack's admin function has no dead-letter queue to redrive (SLOTQ_DLQ_URL)")
	}
	if limit == 0 {
		limit = DefaultRedrive
	}
	for rep.Received < limit {
		batch, err := dlq.ReceiveDead(ctx, min(10, limit-rep.Received))
		if err != nil {
			return rep, fmt.Errorf("redrive: receive: %w", err)
		}
		if len(batch) == 0 {
			return rep, nil
		}
		rep.Received += len(batch)
		var send []Message
		var sendHandles, drop []string
		now := e.now()
		for _, d := range batch {
			if d.Err != nil {
				rep.Undecodable++
				e.log.WarnContext(ctx, "dead letter left: not a job envelope", "error", d.Err.Error())
				continue
			}
			waits, err := e.waitsFor(ctx, d.Envelope)
			if err != nil {
				return rep, fmt.Errorf("redrive %s: %w", d.Envelope.Ref(), err)
			}
			if !waits {
				drop = append(drop, d.Handle)
				continue
			}
			env := d.Envelope
			env.SentAt = now
			send = append(send, Message{Envelope: env, Delay: e.enqueuer.delayTo(env.SlotAt, now)})
			sendHandles = append(sendHandles, d.Handle)
		}
		if len(send) > 0 {
			err := e.transport.Send(ctx, send)
			var se *SendError
			switch {
			case errors.As(err, &se):
				var sent []string
				for i, h := range sendHandles {
					if se.Failed[i] == nil {
						sent = append(sent, h)
					}
				}
				sendHandles = sent
			case err != nil:
				return rep, fmt.Errorf("redrive: send: %w", err)
			}
			rep.Redriven += len(sendHandles)
		}
		rep.Dropped += len(drop)
		if handles := append(sendHandles, drop...); len(handles) > 0 {
			if err := dlq.DeleteDead(ctx, handles...); err != nil {
				// Sent and not deleted: the message comes back to the
				// dead-letter queue's next redrive, and is dropped then
				// if its job has moved on; a duplicate delivery meanwhile
				// is one the worker drops.
				return rep, fmt.Errorf("redrive: delete: %w", err)
			}
		}
		e.log.InfoContext(ctx, "redrive", "received", len(batch), "redriven", len(sendHandles), "dropped", len(drop))
	}
	rep.More = true
	return rep, nil
}

// waitsFor reports whether env's job still waits for env: its record (of
// env's generation) is queued at env's ticket and attempt, or running at
// them (the message is the running attempt's watchdog).
func (e *resumer) waitsFor(ctx context.Context, env job.Envelope) (bool, error) {
	j, err := e.state.GetJob(ctx, env.Ref())
	if errors.Is(err, ErrJobNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	v := j.Version()
	return (v.Status == job.Queued || v.Status == job.Running) &&
		v.Ticket == env.Ticket && v.Attempt == env.Attempt && v.Gen == env.Gen, nil
}
