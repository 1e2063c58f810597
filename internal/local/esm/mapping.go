package esm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Config is an SQS event source mapping's settings, as template.yaml's
// SQS event gives them.
type Config struct {
	// BatchSize is the most messages per invocation (BatchSize). Default 10.
	BatchSize int
	// BatchingWindow is how long a poller gathers messages before it
	// invokes with fewer than BatchSize (MaximumBatchingWindowInSeconds).
	// Default 0: invoke with what one receive returns.
	BatchingWindow time.Duration
	// ReportBatchItemFailures makes the mapping read the function's
	// batchItemFailures (FunctionResponseTypes: ReportBatchItemFailures).
	// Without it a successful invocation deletes the whole batch.
	ReportBatchItemFailures bool
	// Concurrency is the most invocations in flight at once (Lambda's
	// ScalingConfig.MaximumConcurrency). Default 5.
	Concurrency int
	// PollWait is the long-poll wait of one receive. Default 1s (SQS's
	// event source waits up to 20 s; shorter here so Ctrl-C is quick).
	PollWait time.Duration
}

// Invoker invokes the function with a batch, synchronously, as Lambda's
// Invoke does: an error is a function error (or a failed invocation).
type Invoker func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// Outcome is what the mapping did with one batch.
type Outcome struct {
	// Poller is the index of the poller (0 … Concurrency−1) that
	// received the batch: which concurrent invocation ran it.
	Poller   int
	Messages int
	Deleted  int
	// Failed lists the messages that stay in the queue.
	Failed []string
	// Err is the function error, or why the response failed the whole
	// batch, or a failed delete.
	Err error
}

// Stats counts what a Mapping did. Each count only grows.
type Stats struct {
	Batches, Received, Deleted, Returned, FunctionErrors int64
}

// Mapping feeds a Queue to a function. Set its fields, then Run.
type Mapping struct {
	Queue  Queue
	Config Config
	Invoke Invoker
	// Log receives a line per failed batch. Default: discard.
	Log *slog.Logger
	// OnBatch, if set, hears of every batch after its deletes, from the
	// poller's goroutine.
	OnBatch func(Outcome)

	batches, received, deleted, returned, fnErrors atomic.Int64
}

// Stats returns the mapping's counters.
func (m *Mapping) Stats() Stats {
	return Stats{Batches: m.batches.Load(), Received: m.received.Load(), Deleted: m.deleted.Load(),
		Returned: m.returned.Load(), FunctionErrors: m.fnErrors.Load()}
}

// Run polls until ctx ends, then waits for the invocations in flight. An
// invocation runs on a context that ends with ctx: a worker stopped by
// Ctrl-C hands its messages back, and they come back after their
// visibility timeout. Deletes after an invocation run even when ctx has
// ended. Run returns the first receive error only if polling cannot go
// on; transient ones are logged and retried.
func (m *Mapping) Run(ctx context.Context) error {
	c := m.Config
	if c.BatchSize <= 0 {
		c.BatchSize = 10
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 5
	}
	if c.PollWait <= 0 {
		c.PollWait = time.Second
	}
	log := m.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var wg sync.WaitGroup
	for i := range c.Concurrency {
		wg.Go(func() { m.poll(ctx, i, c, log) })
	}
	wg.Wait()
	return nil
}

func (m *Mapping) poll(ctx context.Context, poller int, c Config, log *slog.Logger) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		batch, err := m.gather(ctx, c)
		if err != nil {
			log.WarnContext(ctx, "event source: receive failed", "error", err.Error())
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if len(batch) == 0 {
			continue
		}
		out := m.invoke(ctx, poller, c, batch)
		if out.Err != nil {
			log.WarnContext(ctx, "event source: batch failed; its messages come back after the visibility timeout",
				"messages", out.Messages, "error", out.Err.Error())
		}
		if m.OnBatch != nil {
			m.OnBatch(out)
		}
	}
}

// gather receives one batch: one receive, or more until BatchSize or the
// batching window.
func (m *Mapping) gather(ctx context.Context, c Config) ([]events.SQSMessage, error) {
	batch, err := m.Queue.Receive(ctx, c.BatchSize, c.PollWait)
	if err != nil || len(batch) == 0 || c.BatchingWindow <= 0 {
		return batch, err
	}
	deadline := time.Now().Add(c.BatchingWindow)
	for len(batch) < c.BatchSize && ctx.Err() == nil {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		more, err := m.Queue.Receive(ctx, c.BatchSize-len(batch), min(left, c.PollWait))
		if err != nil {
			break // invoke with what we have; the receive is retried next round
		}
		batch = append(batch, more...)
	}
	return batch, nil
}

// invoke runs one batch and deletes what the outcome allows.
func (m *Mapping) invoke(ctx context.Context, poller int, c Config, batch []events.SQSMessage) Outcome {
	m.batches.Add(1)
	m.received.Add(int64(len(batch)))
	out := Outcome{Poller: poller, Messages: len(batch)}
	resp, err := m.Invoke(context.WithValue(ctx, pollerKey{}, poller), events.SQSEvent{Records: batch})
	var keep map[string]bool
	switch {
	case err != nil:
		m.fnErrors.Add(1)
		out.Err = fmt.Errorf("function error: %w", err)
	case c.ReportBatchItemFailures:
		keep, out.Err = failures(batch, resp)
	}
	var del []string
	for _, msg := range batch {
		if out.Err == nil && !keep[msg.MessageId] {
			del = append(del, msg.ReceiptHandle)
		} else {
			out.Failed = append(out.Failed, msg.MessageId)
		}
	}
	m.returned.Add(int64(len(out.Failed)))
	if len(del) > 0 {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := m.Queue.Delete(dctx, del); derr != nil {
			out.Err = errors.Join(out.Err, derr)
		} else {
			out.Deleted = len(del)
			m.deleted.Add(int64(len(del)))
		}
	}
	return out
}

// failures reads a partial batch response: the ids to keep, or an error
// that fails the whole batch (an empty or unknown itemIdentifier).
func failures(batch []events.SQSMessage, resp events.SQSEventResponse) (map[string]bool, error) {
	known := make(map[string]bool, len(batch))
	for _, msg := range batch {
		known[msg.MessageId] = true
	}
	keep := make(map[string]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		if f.ItemIdentifier == "" || !known[f.ItemIdentifier] {
			return nil, fmt.Errorf("batchItemFailures names %q, not a message of the batch: the whole batch failed", f.ItemIdentifier)
		}
		keep[f.ItemIdentifier] = true
	}
	return keep, nil
}

type pollerKey struct{}

// Poller returns the index of the poller whose invocation ctx belongs to:
// which of the concurrent worker invocations runs it.
func Poller(ctx context.Context) (int, bool) {
	p, ok := ctx.Value(pollerKey{}).(int)
	return p, ok
}
