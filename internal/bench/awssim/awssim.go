// Package awssim runs slotq's engine on its real AWS adapters,
// internal/dynamostore and internal/sqstransport, against AWS-compatible endpoints:
// DynamoDB Local for DynamoDB and moto_server for SQS, in the simulation
// tests of this package, in one queue's ceiling (Ceiling, cmd/ceiling) and
// in the cost benchmark (internal/bench/costs, `slotq costs`). It
// holds what they need: clients built from
// the standard AWS environment, a table and queues of their own, and the
// worker function's handler shape on top of engine.Work.
package awssim

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/sqstransport"
)

// Clients are a DynamoDB and an SQS client for one endpoint.
type Clients struct {
	DB  *dynamodb.Client
	SQS *sqs.Client
}

// Open builds clients from the standard AWS environment
// (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, AWS_REGION,
// credentials), as the functions do. Requests go out as they come,
// concurrently: the DynamoDB endpoint must be as atomic as DynamoDB
// (DynamoDB Local is; moto_server is not).
func Open(ctx context.Context) (*Clients, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return &Clients{DB: dynamodb.NewFromConfig(cfg, quiet), SQS: sqs.NewFromConfig(cfg)}, nil
}

// quiet turns off the SDK's check of DynamoDB responses against their
// CRC32 header, which DynamoDB Local gets wrong on some error responses: the
// SDK would log a warning for each failed condition.
func quiet(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true }

// NewTable creates a slotq table called name (see dynamostore.CreateTable).
func (c *Clients) NewTable(ctx context.Context, name string) error {
	return dynamostore.CreateTable(ctx, c.DB, name)
}

// NewQueue creates a slot queue called name, with its dead-letter queue,
// and returns its URL.
func (c *Clients) NewQueue(ctx context.Context, name string, visibility time.Duration) (string, error) {
	url, _, err := sqstransport.CreateQueues(ctx, c.SQS, name, visibility)
	return url, err
}

// WorkFunc is engine.(*Engine).Work.
type WorkFunc func(ctx context.Context, env job.Envelope) error

// Worker returns the worker function's handler as sqstransport.Receive
// takes it: sqstransport.WorkBatch over work. onError, if not nil, hears of
// each failure.
func Worker(work WorkFunc, onError func(env job.Envelope, err error)) func(ctx context.Context, batch []events.SQSMessage) events.SQSEventResponse {
	return func(ctx context.Context, batch []events.SQSMessage) events.SQSEventResponse {
		return sqstransport.WorkBatch(ctx, batch, work, onError)
	}
}
