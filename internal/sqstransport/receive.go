package sqstransport

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/job"
)

// ReceiveOptions configure Receive. The zero value is ready to use.
type ReceiveOptions struct {
	// MaxMessages is the most messages per batch, 1–10. Default 10.
	MaxMessages int
	// WaitTime is the long-poll wait of each ReceiveMessage call, whole
	// seconds from 1 to 20. Default 20s.
	WaitTime time.Duration
	// VisibilityTimeout, if set, overrides the queue's visibility timeout
	// for received messages (whole seconds). Default: the queue's.
	VisibilityTimeout time.Duration
}

func (o ReceiveOptions) input(queueURL string) *sqs.ReceiveMessageInput {
	max := o.MaxMessages
	if max <= 0 || max > MaxBatch {
		max = MaxBatch
	}
	wait := o.WaitTime
	switch {
	case wait <= 0 || wait > 20*time.Second:
		wait = 20 * time.Second
	case wait < time.Second:
		wait = time.Second
	}
	return &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queueURL),
		MaxNumberOfMessages:         int32(max),
		WaitTimeSeconds:             int32(wait / time.Second),
		VisibilityTimeout:           int32(o.VisibilityTimeout / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}
}

// Receive long-polls the queue and hands each batch to handle, as the
// Lambda SQS event source does for the worker function: the messages are
// the events.SQSMessage values Lambda would pass, and afterwards Receive
// deletes every message not reported in the response's BatchItemFailures.
// The reported ones stay in the queue and come back after the visibility
// timeout. As in Lambda, an empty or unknown item identifier fails the
// whole batch: nothing of it is deleted.
//
// Receive returns nil once ctx is cancelled, and an error if a call to SQS
// fails (wrapping ErrQueueMissing when the queue does not exist). Deletes
// run even if ctx was cancelled while handle ran, so finished work is not
// delivered again.
func (t *Transport) Receive(ctx context.Context, opts ReceiveOptions, handle func(ctx context.Context, batch []events.SQSMessage) events.SQSEventResponse) error {
	arn, err := t.queueARN(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	region := ""
	if parts := strings.SplitN(arn, ":", 6); len(parts) == 6 {
		region = parts[3]
	}
	in := opts.input(t.queueURL)
	for ctx.Err() == nil {
		out, err := t.api.ReceiveMessage(ctx, in)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return t.convert("receive", err)
		}
		if len(out.Messages) == 0 {
			continue
		}
		batch := make([]events.SQSMessage, len(out.Messages))
		for i, m := range out.Messages {
			batch[i] = toEvent(m, arn, region)
		}
		resp := handle(ctx, batch)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		err = t.delete(dctx, toDelete(batch, resp))
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// queueARN returns Options.QueueARN or looks it up.
func (t *Transport) queueARN(ctx context.Context) (string, error) {
	if t.opts.QueueARN != "" {
		return t.opts.QueueARN, nil
	}
	out, err := t.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(t.queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", t.convert("get queue arn", err)
	}
	return out.Attributes[string(types.QueueAttributeNameQueueArn)], nil
}

// toDelete returns the messages of batch that resp does not report as
// failed, or none if resp names a message not in batch.
func toDelete(batch []events.SQSMessage, resp events.SQSEventResponse) []events.SQSMessage {
	failed := make(map[string]bool, len(resp.BatchItemFailures))
	known := make(map[string]bool, len(batch))
	for _, m := range batch {
		known[m.MessageId] = true
	}
	for _, f := range resp.BatchItemFailures {
		if !known[f.ItemIdentifier] {
			return nil
		}
		failed[f.ItemIdentifier] = true
	}
	var del []events.SQSMessage
	for _, m := range batch {
		if !failed[m.MessageId] {
			del = append(del, m)
		}
	}
	return del
}

// delete deletes msgs from the queue. Entries SQS refuses to delete are
// left alone: they come back after the visibility timeout, and the worker
// drops a copy of a job that has finished.
func (t *Transport) delete(ctx context.Context, msgs []events.SQSMessage) error {
	for len(msgs) > 0 {
		n := min(len(msgs), MaxBatch)
		entries := make([]types.DeleteMessageBatchRequestEntry, n)
		for i, m := range msgs[:n] {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(m.ReceiptHandle)}
		}
		_, err := t.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(t.queueURL), Entries: entries})
		if err != nil {
			return t.convert("delete batch", err)
		}
		msgs = msgs[n:]
	}
	return nil
}

// toEvent converts a received message into the value the Lambda SQS event
// source would deliver.
func toEvent(m types.Message, arn, region string) events.SQSMessage {
	e := events.SQSMessage{
		MessageId:              aws.ToString(m.MessageId),
		ReceiptHandle:          aws.ToString(m.ReceiptHandle),
		Body:                   aws.ToString(m.Body),
		Md5OfBody:              aws.ToString(m.MD5OfBody),
		Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
		Attributes:             m.Attributes,
		MessageAttributes:      make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes)),
		EventSource:            "aws:sqs",
		EventSourceARN:         arn,
		AWSRegion:              region,
	}
	if e.Attributes == nil {
		e.Attributes = map[string]string{}
	}
	for name, v := range m.MessageAttributes {
		a := events.SQSMessageAttribute{
			DataType:         aws.ToString(v.DataType),
			StringValue:      v.StringValue,
			BinaryValue:      v.BinaryValue,
			StringListValues: v.StringListValues,
			BinaryListValues: v.BinaryListValues,
		}
		// Lambda sends empty lists, not null.
		if a.StringListValues == nil {
			a.StringListValues = []string{}
		}
		if a.BinaryListValues == nil {
			a.BinaryListValues = [][]byte{}
		}
		e.MessageAttributes[name] = a
	}
	return e
}

// EnvelopeOf decodes the job envelope a message carries.
func EnvelopeOf(m events.SQSMessage) (job.Envelope, error) {
	env, err := job.DecodeEnvelope([]byte(m.Body))
	if err != nil {
		return env, fmt.Errorf("message %s: %w", m.MessageId, err)
	}
	return env, nil
}
