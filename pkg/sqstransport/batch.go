package sqstransport

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/pkg/job"
)

// WorkBatch is what the worker does with one SQS batch, on Lambda
// (functions/worker) and in the receive loop alike: it decodes each
// message's envelope, dropping undecodable ones (delivering them again
// cannot help), works the rest one after another in slot order, and
// reports exactly the messages whose work failed as batch item failures,
// so only those come back. onError, if not nil, hears of each dropped
// message (with a zero envelope) and each failure.
//
// One after another, because two late jobs of a queue worked at once could
// pass the gate in the wrong order, and the lower ticket would be
// re-ticketed behind the higher.
func WorkBatch(ctx context.Context, batch []events.SQSMessage, work func(context.Context, job.Envelope) error,
	onError func(env job.Envelope, err error)) events.SQSEventResponse {
	type item struct {
		id  string
		env job.Envelope
	}
	items := make([]item, 0, len(batch))
	for _, m := range batch {
		env, err := EnvelopeOf(m)
		if err != nil {
			if onError != nil {
				onError(job.Envelope{}, fmt.Errorf("dropped message %s: %w", m.MessageId, err))
			}
			continue
		}
		items = append(items, item{m.MessageId, env})
	}
	slices.SortStableFunc(items, func(a, b item) int {
		return cmp.Or(a.env.SlotAt.Compare(b.env.SlotAt), cmp.Compare(a.env.Ticket, b.env.Ticket))
	})
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, it := range items {
		if err := work(ctx, it.env); err != nil {
			if onError != nil {
				onError(it.env, fmt.Errorf("message %s: %w", it.id, err))
			}
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: it.id})
		}
	}
	return resp
}
