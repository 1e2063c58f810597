package sqstransport

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// DeadLetterQueue is the slot queue's dead-letter queue as the admin
// function's redrive reads it (engine.DeadLetterQueue): ReceiveMessage and
// DeleteMessageBatch on the queue at its URL. The messages go back to the
// slot queue through the Transport's Send, after the engine re-checked
// their jobs.
type DeadLetterQueue struct {
	api SQSAPI
	url string
	// Visibility is how long a received message stays hidden while the
	// redrive handles it. Default 30s.
	Visibility time.Duration
}

var _ engine.DeadLetterQueue = (*DeadLetterQueue)(nil)

// NewDeadLetterQueue returns the dead-letter queue at url.
func NewDeadLetterQueue(api SQSAPI, url string) *DeadLetterQueue {
	return &DeadLetterQueue{api: api, url: url, Visibility: 30 * time.Second}
}

// ReceiveDead receives up to n (1 to 10) messages, long-polling a second
// so an emptyish queue's messages are found (a short poll samples only
// some of SQS's servers).
func (q *DeadLetterQueue) ReceiveDead(ctx context.Context, n int) ([]engine.DeadLetter, error) {
	out, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(q.url),
		MaxNumberOfMessages: int32(min(max(n, 1), MaxBatch)),
		WaitTimeSeconds:     1,
		VisibilityTimeout:   int32(max(q.Visibility, time.Second) / time.Second),
	})
	if err != nil {
		return nil, convert("receive dead letters", q.url, err)
	}
	letters := make([]engine.DeadLetter, len(out.Messages))
	for i, m := range out.Messages {
		env, err := job.DecodeEnvelope([]byte(aws.ToString(m.Body)))
		letters[i] = engine.DeadLetter{Handle: aws.ToString(m.ReceiptHandle), Envelope: env, Err: err}
		if err != nil {
			letters[i].Envelope = job.Envelope{}
			letters[i].Err = fmt.Errorf("message %s: %w", aws.ToString(m.MessageId), err)
		}
	}
	return letters, nil
}

// DeleteDead deletes received messages, ten per call.
func (q *DeadLetterQueue) DeleteDead(ctx context.Context, handles ...string) error {
	for len(handles) > 0 {
		n := min(len(handles), MaxBatch)
		entries := make([]types.DeleteMessageBatchRequestEntry, n)
		for i, h := range handles[:n] {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
		}
		out, err := q.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			return convert("delete dead letters", q.url, err)
		}
		if len(out.Failed) > 0 {
			f := out.Failed[0]
			return fmt.Errorf("delete dead letters: %d failed: %s: %s", len(out.Failed), aws.ToString(f.Code), aws.ToString(f.Message))
		}
		handles = handles[n:]
	}
	return nil
}
