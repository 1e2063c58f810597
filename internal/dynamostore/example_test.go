package dynamostore_test

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/sqstransport"
)

// The engine on DynamoDB and SQS, as slotq's functions build it (the
// table and queue come from the stack: SLOTQ_TABLE, SLOTQ_QUEUE_URL).
// The SDK finds region, credentials and endpoints (AWS_ENDPOINT_URL_DYNAMODB
// for DynamoDB Local) on its own.
func ExampleNew() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	eng := engine.New(engine.Options{
		State:     dynamostore.New(dynamodb.NewFromConfig(cfg), "slotq-Table", dynamostore.Options{}),
		Transport: sqstransport.New(sqs.NewFromConfig(cfg), "https://sqs.us-east-1.amazonaws.com/123456789012/slotq-SlotQueue", sqstransport.Options{}),
	})
	_ = eng // eng.Enqueue, eng.Work, eng.Resume, …
}

// A table of slotq's schema (template.yaml's Table) for tests and local
// runs, on DynamoDB Local for example. It does nothing if the table exists.
func ExampleCreateTable() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := dynamostore.CreateTable(ctx, dynamodb.NewFromConfig(cfg), "slotq-dev-Table"); err != nil {
		log.Fatal(err)
	}
}
