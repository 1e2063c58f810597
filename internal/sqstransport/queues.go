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

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// MaxReceiveCount is how many times CreateQueues lets a message be received
// before SQS moves it to the dead-letter queue. The worker records a job's
// own retries and dead letter; this catches messages that crash the worker
// again and again.
const MaxReceiveCount = 5

// CreateQueues creates the slot queue called name, with the given
// visibility timeout (whole seconds, at least 1s), and its dead-letter queue
// name+"-dlq", and links them with a redrive policy. It returns both URLs.
// Like CreateQueue, it succeeds if the queues exist with the same
// attributes. The template creates these queues in AWS; CreateQueues is for
// tests and the local runtime.
func CreateQueues(ctx context.Context, api SQSAPI, name string, visibilityTimeout time.Duration) (queueURL, dlqURL string, err error) {
	vis := int64(visibilityTimeout / time.Second)
	if vis < 1 || vis > 12*60*60 {
		return "", "", fmt.Errorf("create queues %s: visibility timeout %v must lie between 1s and 12h", name, visibilityTimeout)
	}
	dlq, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name + "-dlq"),
		Attributes: map[string]string{
			string(types.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(14 * 24 * 60 * 60),
		},
	})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s-dlq: %w", name, err)
	}
	dlqURL = aws.ToString(dlq.QueueUrl)
	attrs, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", convert("get dead-letter queue arn", dlqURL, err)
	}
	policy, err := json.Marshal(map[string]string{
		"deadLetterTargetArn": attrs.Attributes[string(types.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     strconv.Itoa(MaxReceiveCount),
	})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s: %w", name, err)
	}
	q, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name),
		Attributes: map[string]string{
			string(types.QueueAttributeNameVisibilityTimeout): strconv.FormatInt(vis, 10),
			string(types.QueueAttributeNameRedrivePolicy):     string(policy),
		},
	})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return aws.ToString(q.QueueUrl), dlqURL, nil
}

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
