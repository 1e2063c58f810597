package esm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/sqstransport"
)

// Queue is the queue a Mapping polls.
type Queue interface {
	// Receive waits up to wait for visible messages and returns up to n
	// of them, each invisible for the queue's visibility timeout. A
	// message past the redrive policy's maxReceiveCount goes to the
	// dead-letter queue instead. No messages and no error when wait or
	// ctx ends first.
	Receive(ctx context.Context, n int, wait time.Duration) ([]events.SQSMessage, error)
	// Delete deletes received messages by receipt handle.
	Delete(ctx context.Context, receiptHandles []string) error
	// ChangeVisibility makes a received message visible again after d.
	ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error
	// Attributes reads the queue's settings.
	Attributes(ctx context.Context) (Attributes, error)
}

// Attributes are the settings of a queue the mapping reports.
type Attributes struct {
	ARN               string
	VisibilityTimeout time.Duration
	// MaxReceiveCount is the redrive policy's; 0 without one.
	MaxReceiveCount int
	// DeadLetterARN is the redrive policy's target.
	DeadLetterARN string
}

// Memory is the embedded transport's pull side as a Queue.
type Memory struct {
	T *memstore.Transport
	// ARN names the queue in the events. Default
	// arn:aws:sqs:us-east-1:123456789012:slotq-SlotQueue.
	ARN string
}

var _ Queue = (*Memory)(nil)

// NewMemory returns t's pull side as a Queue.
func NewMemory(t *memstore.Transport, arn string) *Memory {
	if arn == "" {
		arn = "arn:aws:sqs:us-east-1:123456789012:slotq-SlotQueue"
	}
	return &Memory{T: t, ARN: arn}
}

// Receive receives from the transport.
func (q *Memory) Receive(ctx context.Context, n int, wait time.Duration) ([]events.SQSMessage, error) {
	ds, err := q.T.Receive(ctx, n, wait, 0)
	if err != nil {
		return nil, err
	}
	region := regionOf(q.ARN)
	out := make([]events.SQSMessage, 0, len(ds))
	for _, d := range ds {
		body, err := json.Marshal(d.Envelope)
		if err != nil {
			return nil, fmt.Errorf("encode envelope %s: %w", d.Envelope.Ref(), err)
		}
		str := func(v string) events.SQSMessageAttribute {
			return events.SQSMessageAttribute{DataType: "String", StringValue: &v, StringListValues: []string{}, BinaryListValues: [][]byte{}}
		}
		out = append(out, events.SQSMessage{
			MessageId: d.MessageID, ReceiptHandle: d.ReceiptHandle, Body: string(body),
			Attributes: map[string]string{
				"ApproximateReceiveCount":          strconv.Itoa(d.ReceiveCount),
				"SentTimestamp":                    strconv.FormatInt(d.SentAt.UnixMilli(), 10),
				"ApproximateFirstReceiveTimestamp": strconv.FormatInt(d.FirstReceivedAt.UnixMilli(), 10),
				"SenderId":                         "slotq-local",
			},
			MessageAttributes: map[string]events.SQSMessageAttribute{
				sqstransport.AttrQueue: str(d.Envelope.Queue),
				sqstransport.AttrJobID: str(d.Envelope.JobID),
			},
			EventSource: "aws:sqs", EventSourceARN: q.ARN, AWSRegion: region,
		})
	}
	return out, nil
}

// Delete deletes from the transport.
func (q *Memory) Delete(ctx context.Context, handles []string) error {
	return q.T.Delete(ctx, handles...)
}

// ChangeVisibility changes a message's visibility on the transport.
func (q *Memory) ChangeVisibility(ctx context.Context, handle string, d time.Duration) error {
	return q.T.ChangeVisibility(ctx, handle, d)
}

// Attributes reports the transport's visibility timeout and redrive.
func (q *Memory) Attributes(context.Context) (Attributes, error) {
	a := Attributes{ARN: q.ARN, VisibilityTimeout: q.T.VisibilityTimeout(), MaxReceiveCount: q.T.MaxReceiveCount()}
	if a.MaxReceiveCount > 0 {
		a.DeadLetterARN = q.ARN + "-dlq"
	}
	return a, nil
}

// SQSAPI is the SQS calls the SQS queue makes; *sqs.Client has them.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// SQS is an SQS queue as a Queue. SQS itself applies the visibility
// timeout and the redrive policy.
type SQS struct {
	API SQSAPI
	URL string

	mu  sync.Mutex // guards arn: batches poll at once
	arn string
}

var _ Queue = (*SQS)(nil)

// NewSQS returns the queue at url.
func NewSQS(api SQSAPI, url string) *SQS { return &SQS{API: api, URL: url} }

// Receive long-polls the queue (whole seconds, at most 20).
func (q *SQS) Receive(ctx context.Context, n int, wait time.Duration) ([]events.SQSMessage, error) {
	arn, err := q.queueARN(ctx)
	if err != nil {
		return nil, err
	}
	secs := int32(min(max(wait, 0), 20*time.Second) / time.Second)
	out, err := q.API.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.URL), MaxNumberOfMessages: int32(min(max(n, 1), 10)), WaitTimeSeconds: secs,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("receive from %s: %w", q.URL, err)
	}
	msgs := make([]events.SQSMessage, len(out.Messages))
	for i, m := range out.Messages {
		msgs[i] = sqstransport.EventOf(m, arn)
	}
	return msgs, nil
}

// queueARN returns the queue's ARN, asking SQS the first time.
func (q *SQS) queueARN(ctx context.Context) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.arn == "" {
		a, err := q.Attributes(ctx)
		if err != nil {
			return "", err
		}
		q.arn = a.ARN
	}
	return q.arn, nil
}

// Delete deletes in batches of 10. Entries SQS refuses come back after
// their visibility timeout, as with Lambda.
func (q *SQS) Delete(ctx context.Context, handles []string) error {
	for len(handles) > 0 {
		n := min(len(handles), 10)
		entries := make([]types.DeleteMessageBatchRequestEntry, n)
		for i, h := range handles[:n] {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
		}
		if _, err := q.API.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: entries}); err != nil {
			return fmt.Errorf("delete from %s: %w", q.URL, err)
		}
		handles = handles[n:]
	}
	return nil
}

// ChangeVisibility calls ChangeMessageVisibility (whole seconds).
func (q *SQS) ChangeVisibility(ctx context.Context, handle string, d time.Duration) error {
	_, err := q.API.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.URL), ReceiptHandle: aws.String(handle), VisibilityTimeout: int32(max(d, 0) / time.Second),
	})
	if err != nil {
		return fmt.Errorf("change visibility on %s: %w", q.URL, err)
	}
	return nil
}

// Attributes reads QueueArn, VisibilityTimeout and RedrivePolicy.
func (q *SQS) Attributes(ctx context.Context) (Attributes, error) {
	out, err := q.API.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.URL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return Attributes{}, fmt.Errorf("queue attributes of %s: %w", q.URL, err)
	}
	a := Attributes{ARN: out.Attributes[string(types.QueueAttributeNameQueueArn)]}
	if v, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameVisibilityTimeout)]); err == nil {
		a.VisibilityTimeout = time.Duration(v) * time.Second
	}
	if rp := out.Attributes[string(types.QueueAttributeNameRedrivePolicy)]; rp != "" {
		var p struct {
			Target string          `json:"deadLetterTargetArn"`
			Max    json.RawMessage `json:"maxReceiveCount"` // a number or a string
		}
		if err := json.Unmarshal([]byte(rp), &p); err == nil {
			a.DeadLetterARN = p.Target
			s, _ := strconv.Unquote(string(p.Max))
			if s == "" {
				s = string(p.Max)
			}
			a.MaxReceiveCount, _ = strconv.Atoi(s)
		}
	}
	return a, nil
}

// regionOf returns the region part of an ARN.
func regionOf(arn string) string {
	if parts := strings.SplitN(arn, ":", 6); len(parts) == 6 {
		return parts[3]
	}
	return ""
}
