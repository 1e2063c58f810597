package sqstransport

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// SQS limits the transport designs against.
const (
	// MaxMessageSize is the largest SQS message, body and attributes
	// together, and also the largest SendMessageBatch payload: 256 KiB.
	MaxMessageSize = 256 * 1024
	// MaxBatch is the most entries of one SendMessageBatch or
	// DeleteMessageBatch call.
	MaxBatch = 10
	// MaxDelay is the longest SQS message delay.
	MaxDelay = 900 * time.Second
)

// Message attributes set on every message, for filtering and debugging.
const (
	AttrQueue = "slotq_queue"
	AttrJobID = "slotq_job_id"
)

// SQSAPI lists the SQS calls the package makes, with the SDK's own
// signatures, so *sqs.Client satisfies it and tests can pass a fake.
type SQSAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	CreateQueue(ctx context.Context, params *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
}

var (
	_ SQSAPI           = (*sqs.Client)(nil)
	_ engine.Transport = (*Transport)(nil)
)

// Options configure a Transport. The zero value is ready to use.
type Options struct {
	// SendAttempts is how many times Send tries an entry that SQS failed
	// on its own side (SenderFault false), in all. Entries SQS rejected as
	// the sender's fault are not retried. Default 4.
	SendAttempts int
	// RetryBackoff is the wait before the first retry of failed entries;
	// it doubles on each further retry. Default 50ms.
	RetryBackoff time.Duration
	// QueueARN is the queue's ARN, reported as EventSourceARN (and its
	// region as AWSRegion) by Receive. Default: looked up with
	// GetQueueAttributes when Receive starts.
	QueueARN string
}

// Transport sends job envelopes to one SQS queue and, for the local runtime
// and tests, receives them. It is safe for concurrent use.
type Transport struct {
	api      SQSAPI
	queueURL string
	opts     Options
}

// New returns a Transport on the queue at queueURL.
func New(api SQSAPI, queueURL string, opts Options) *Transport {
	if opts.SendAttempts <= 0 {
		opts.SendAttempts = 4
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = 50 * time.Millisecond
	}
	return &Transport{api: api, queueURL: queueURL, opts: opts}
}

// QueueURL returns the URL of the transport's queue.
func (t *Transport) QueueURL() string { return t.queueURL }

// MaxDelay returns 15 minutes, the longest SQS message delay.
func (t *Transport) MaxDelay() time.Duration { return MaxDelay }

// DelaySeconds is the SQS delay Send sets for d: whole seconds rounded down
// (the worker waits out the rest), clamped to 0–900.
func DelaySeconds(d time.Duration) int32 {
	switch {
	case d <= 0:
		return 0
	case d >= MaxDelay:
		return int32(MaxDelay / time.Second)
	}
	return int32(d / time.Second)
}

// encoded is one message ready to send.
type encoded struct {
	index int
	env   job.Envelope
	entry types.SendMessageBatchRequestEntry
	size  int
}

func encode(env job.Envelope) (body string, attrs map[string]types.MessageAttributeValue, size int, err error) {
	b, err := json.Marshal(env)
	if err != nil {
		return "", nil, 0, fmt.Errorf("encode envelope %s: %w", env.Ref(), err)
	}
	attrs = map[string]types.MessageAttributeValue{
		AttrQueue: {DataType: aws.String("String"), StringValue: aws.String(env.Queue)},
		AttrJobID: {DataType: aws.String("String"), StringValue: aws.String(env.JobID)},
	}
	size = len(b)
	// SQS counts each attribute's name, data type and value.
	for name, v := range attrs {
		size += len(name) + len(*v.DataType) + len(*v.StringValue)
	}
	return string(b), attrs, size, nil
}

// CheckSize reports whether env fits in one SQS message, as Send will
// encode it. It returns a *TooLargeError if not, so the enqueue path can
// refuse a job before it writes anything.
func CheckSize(env job.Envelope) error {
	_, _, size, err := encode(env)
	if err != nil {
		return err
	}
	if size > MaxMessageSize {
		return &TooLargeError{Queue: env.Queue, JobID: env.JobID, Size: size}
	}
	return nil
}

// Send sends msgs with SendMessageBatch, in batches of at most 10 entries
// and 256 KiB, each entry delayed by DelaySeconds(Delay).
//
// Every envelope is encoded and checked first: if one is too large, Send
// returns its *TooLargeError and sends nothing. Entries SQS fails on its own
// side are retried a few times. If some messages are not sent, Send returns
// an *engine.SendError mapping their indexes in msgs to why; if a call fails
// before any message is sent, it returns that error, which wraps
// ErrQueueMissing when the queue does not exist.
func (t *Transport) Send(ctx context.Context, msgs []engine.Message) error {
	all := make([]encoded, len(msgs))
	for i, m := range msgs {
		body, attrs, size, err := encode(m.Envelope)
		if err != nil {
			return err
		}
		if size > MaxMessageSize {
			return &TooLargeError{Queue: m.Envelope.Queue, JobID: m.Envelope.JobID, Size: size}
		}
		all[i] = encoded{
			index: i,
			env:   m.Envelope,
			size:  size,
			entry: types.SendMessageBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				MessageBody:       aws.String(body),
				DelaySeconds:      DelaySeconds(m.Delay),
				MessageAttributes: attrs,
			},
		}
	}

	failed := make(map[int]error)
	sent := 0
	batches := pack(all)
	for b, batch := range batches {
		n, err := t.sendBatch(ctx, batch, failed)
		sent += n
		if err != nil {
			// The call itself failed: the rest are not sent either.
			for _, rest := range batches[b+1:] {
				for _, e := range rest {
					failed[e.index] = err
				}
			}
			if sent == 0 {
				return err
			}
			break
		}
	}
	if len(failed) > 0 {
		return &engine.SendError{Failed: failed}
	}
	return nil
}

// pack groups messages in order into batches of at most MaxBatch entries
// and MaxMessageSize bytes.
func pack(all []encoded) [][]encoded {
	var batches [][]encoded
	var cur []encoded
	bytes := 0
	for _, e := range all {
		if len(cur) == MaxBatch || (len(cur) > 0 && bytes+e.size > MaxMessageSize) {
			batches = append(batches, cur)
			cur, bytes = nil, 0
		}
		cur = append(cur, e)
		bytes += e.size
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// sendBatch sends one batch, retrying entries that failed on SQS's side.
// It records in failed the entries given up on, and returns how many were
// sent and, if a call failed, that call's error (its unsent entries are in
// failed too).
func (t *Transport) sendBatch(ctx context.Context, batch []encoded, failed map[int]error) (int, error) {
	byID := make(map[string]encoded, len(batch))
	for _, e := range batch {
		byID[*e.entry.Id] = e
	}
	pending := batch
	sent := 0
	for attempt := 1; ; attempt++ {
		entries := make([]types.SendMessageBatchRequestEntry, len(pending))
		for i, e := range pending {
			entries[i] = e.entry
		}
		out, err := t.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &t.queueURL, Entries: entries})
		if err != nil {
			err = t.convert("send batch", err)
			for _, e := range pending {
				failed[e.index] = err
			}
			return sent, err
		}

		done := make(map[string]bool, len(pending))
		for _, ok := range out.Successful {
			id := aws.ToString(ok.Id)
			if _, known := byID[id]; known && !done[id] {
				done[id] = true
				sent++
			}
		}
		var retry []encoded
		var last error
		for _, f := range out.Failed {
			id := aws.ToString(f.Id)
			e, known := byID[id]
			if !known || done[id] {
				continue
			}
			done[id] = true
			entryErr := &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault}
			last = fmt.Errorf("send job %s: %w", e.env.Ref(), entryErr)
			if f.SenderFault || attempt >= t.opts.SendAttempts {
				failed[e.index] = last
				continue
			}
			retry = append(retry, e)
		}
		for _, e := range pending {
			if !done[*e.entry.Id] {
				// Neither sent nor failed: SQS did not answer for it.
				// Sending again risks a duplicate, which the worker drops.
				err := fmt.Errorf("send job %s: %w", e.env.Ref(), &EntryError{Code: "NoResult", Message: "no result for entry"})
				if attempt >= t.opts.SendAttempts {
					failed[e.index] = err
				} else {
					retry = append(retry, e)
				}
			}
		}
		if len(retry) == 0 {
			return sent, nil
		}
		if err := clock.Sleep(ctx, t.opts.RetryBackoff<<(attempt-1)); err != nil {
			for _, e := range retry {
				failed[e.index] = fmt.Errorf("send job %s: %w", e.env.Ref(), err)
			}
			return sent, nil
		}
		pending = retry
	}
}

// convert turns an SQS error into a domain error where there is one.
func (t *Transport) convert(op string, err error) error {
	return convert(op, t.queueURL, err)
}

func convert(op, queueURL string, err error) error {
	if isQueueMissing(err) {
		return fmt.Errorf("%s: %w: %s (%v)", op, ErrQueueMissing, queueURL, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
