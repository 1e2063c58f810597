package sqstransport

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/pkg/job"
)

// WorkBatch is what the worker does with one SQS batch, on Lambda
// (functions/worker) and in the receive loop alike: it decodes each
// message's envelope, dropping undecodable ones (delivering them again
// cannot help), works the rest, and reports exactly the messages whose
// work failed as batch item failures, so only those come back. onError,
// if not nil, hears of each dropped message (with a zero envelope) and
// each failure, one call at a time.
//
// Queues are worked at once, each in its own goroutine, so a queue whose
// job waits for its slot or runs a slow target holds up no other queue.
// Within a queue, messages are worked one after another in slot order:
// two late jobs of a queue worked at once could pass the gate in the
// wrong order, and the lower ticket would be re-ticketed behind the
// higher.
func WorkBatch(ctx context.Context, batch []events.SQSMessage, work func(context.Context, job.Envelope) error,
	onError func(env job.Envelope, err error)) events.SQSEventResponse {
	type item struct {
		id  string
		env job.Envelope
		err error
	}
	var mu sync.Mutex // serializes onError
	report := func(env job.Envelope, err error) {
		if onError != nil {
			mu.Lock()
			defer mu.Unlock()
			onError(env, err)
		}
	}
	items := make([]*item, 0, len(batch))
	for _, m := range batch {
		env, err := EnvelopeOf(m)
		if err != nil {
			report(job.Envelope{}, fmt.Errorf("dropped message %s: %w", m.MessageId, err))
			continue
		}
		items = append(items, &item{id: m.MessageId, env: env})
	}
	slices.SortStableFunc(items, func(a, b *item) int {
		return cmp.Or(a.env.SlotAt.Compare(b.env.SlotAt), cmp.Compare(a.env.Ticket, b.env.Ticket))
	})
	queues := map[string][]*item{}
	for _, it := range items {
		queues[it.env.Queue] = append(queues[it.env.Queue], it)
	}
	var wg sync.WaitGroup
	for _, line := range queues {
		wg.Go(func() {
			for _, it := range line {
				if it.err = work(ctx, it.env); it.err != nil {
					report(it.env, fmt.Errorf("message %s: %w", it.id, it.err))
				}
			}
		})
	}
	wg.Wait()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, it := range items {
		if it.err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: it.id})
		}
	}
	return resp
}
