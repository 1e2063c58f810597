package awsmeter

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/internal/sqstransport"
)

var _ sqstransport.SQSAPI = (*SQS)(nil)

// SQSUsage counts SQS requests and messages. SQS bills each call (and each
// further 64 KiB chunk of its payload) as one request.
type SQSUsage struct {
	// SendCalls counts SendMessageBatch calls, retries of failed entries
	// included; Sent the messages SQS accepted.
	SendCalls, Sent int64
	// ReceiveCalls counts ReceiveMessage calls, empty ones included;
	// Received the messages they returned.
	ReceiveCalls, Received int64
	// DeleteCalls counts DeleteMessageBatch calls; Deleted the messages
	// SQS deleted.
	DeleteCalls, Deleted int64
	// OtherCalls counts the other calls (GetQueueAttributes, CreateQueue).
	OtherCalls int64
}

// SQS counts the requests made through it and the messages they carried.
// Failed calls count as calls. Safe for concurrent use.
type SQS struct {
	sqstransport.SQSAPI
	sendCalls, sent        atomic.Int64
	receiveCalls, received atomic.Int64
	deleteCalls, deleted   atomic.Int64
	otherCalls             atomic.Int64
}

// NewSQS wraps api.
func NewSQS(api sqstransport.SQSAPI) *SQS { return &SQS{SQSAPI: api} }

// Usage returns a snapshot of the counts so far.
func (s *SQS) Usage() SQSUsage {
	return SQSUsage{
		SendCalls: s.sendCalls.Load(), Sent: s.sent.Load(),
		ReceiveCalls: s.receiveCalls.Load(), Received: s.received.Load(),
		DeleteCalls: s.deleteCalls.Load(), Deleted: s.deleted.Load(),
		OtherCalls: s.otherCalls.Load(),
	}
}

// SendMessageBatch counts a send and the messages SQS accepted.
func (s *SQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out, err := s.SQSAPI.SendMessageBatch(ctx, in, o...)
	s.sendCalls.Add(1)
	if err == nil {
		s.sent.Add(int64(len(out.Successful)))
	}
	return out, err
}

// ReceiveMessage counts a receive and the messages it returned.
func (s *SQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := s.SQSAPI.ReceiveMessage(ctx, in, o...)
	s.receiveCalls.Add(1)
	if err == nil {
		s.received.Add(int64(len(out.Messages)))
	}
	return out, err
}

// DeleteMessageBatch counts a delete and the messages SQS deleted.
func (s *SQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, o ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	out, err := s.SQSAPI.DeleteMessageBatch(ctx, in, o...)
	s.deleteCalls.Add(1)
	if err == nil {
		s.deleted.Add(int64(len(out.Successful)))
	}
	return out, err
}

// GetQueueAttributes counts another call.
func (s *SQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, o ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	s.otherCalls.Add(1)
	return s.SQSAPI.GetQueueAttributes(ctx, in, o...)
}

// CreateQueue counts another call.
func (s *SQS) CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, o ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error) {
	s.otherCalls.Add(1)
	return s.SQSAPI.CreateQueue(ctx, in, o...)
}
