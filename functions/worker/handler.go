package main

import (
	"cmp"
	"context"
	"log/slog"
	"slices"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/pkg/job"
	"github.com/slotq/slotq/pkg/sqstransport"
)

// Worker is the engine call the handler makes.
type Worker interface {
	Work(ctx context.Context, env job.Envelope) error
}

// Handler translates an SQS batch into engine.Work calls.
type Handler struct {
	Engine Worker
	Log    *slog.Logger
}

// Handle works the batch's messages one after another in slot order and
// reports as batch item failures exactly the messages whose Work failed,
// so SQS delivers only those again. A message that is not an envelope is
// logged and dropped: delivering it again cannot help.
//
// One after another, because two late jobs of a queue started at once
// could pass the gate in the wrong order, and the lower ticket would be
// re-ticketed behind the higher. Work respects ctx's deadline (the
// invocation's): a slot beyond it is handed back to the queue.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	type item struct {
		id  string
		env job.Envelope
	}
	items := make([]item, 0, len(ev.Records))
	for _, m := range ev.Records {
		env, err := sqstransport.EnvelopeOf(m)
		if err != nil {
			h.Log.ErrorContext(ctx, "dropped undecodable message", "message_id", m.MessageId, "error", err.Error())
			continue
		}
		items = append(items, item{m.MessageId, env})
	}
	slices.SortStableFunc(items, func(a, b item) int {
		return cmp.Or(a.env.SlotAt.Compare(b.env.SlotAt), cmp.Compare(a.env.Ticket, b.env.Ticket))
	})
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, it := range items {
		if err := h.Engine.Work(ctx, it.env); err != nil {
			h.Log.ErrorContext(ctx, "work failed; the message will come back", "queue", it.env.Queue,
				"job_id", it.env.JobID, "ticket", it.env.Ticket, "message_id", it.id, "error", err.Error())
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: it.id})
		}
	}
	return resp, nil
}
