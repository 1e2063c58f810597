package sqstransport

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
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
// job waits for its slot holds up no other queue. Within a queue, messages
// go through the gate one after another in slot order (two late jobs of a
// queue at the gate at once could pass it in the wrong order, and the
// lower ticket would be re-ticketed behind the higher), but each message's
// target runs on its own: the next message goes on as soon as the one
// before it passed the gate and claimed its job (a lead before its start)
// or was done (engine.OnGateDone), so neither a sleep to a start nor a slow
// target, nor a job holding its key, holds up a later job.
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
				next := make(chan struct{})
				done := sync.OnceFunc(func() { close(next) })
				wg.Go(func() {
					defer done()
					if it.err = work(engine.OnGateDone(ctx, done), it.env); it.err != nil {
						report(it.env, fmt.Errorf("message %s: %w", it.id, it.err))
					}
				})
				<-next
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
