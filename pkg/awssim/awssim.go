// Package awssim runs slotq's engine on its real AWS adapters,
// pkg/dynamostore and pkg/sqstransport, against an AWS-compatible endpoint:
// moto_server in the simulation tests of this package and in the cost
// benchmark (cmd/slotq-costs). It holds what both need: clients built from
// the standard AWS environment, a table and queues of their own, and the
// worker function's handler shape on top of engine.Work.
package awssim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/pkg/dynamostore"
	"github.com/slotq/slotq/pkg/job"
	"github.com/slotq/slotq/pkg/sqstransport"
)

// Clients are a DynamoDB and an SQS client for one endpoint.
type Clients struct {
	DB  *dynamodb.Client
	SQS *sqs.Client
}

// Open builds clients from the standard AWS environment (AWS_ENDPOINT_URL,
// AWS_REGION, credentials), as the functions do. The DynamoDB client sends
// its writes one at a time (see Serial), which moto_server needs and which
// changes nothing against DynamoDB itself but speed.
func Open(ctx context.Context) (*Clients, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.HTTPClient = &Serial{Next: o.HTTPClient}
	})
	return &Clients{DB: db, SQS: sqs.NewFromConfig(cfg)}, nil
}

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

// serialMu is shared by every Serial client of the process: they all talk
// to the one endpoint.
var serialMu sync.RWMutex

// Serial makes moto_server as atomic as DynamoDB. moto applies a
// TransactWriteItems by deep-copying each table it touches and, when a
// condition fails, putting the copies back over whatever other requests
// wrote meanwhile, and it checks conditions and writes without a lock: under
// concurrent requests it loses writes and leaves half-applied transactions.
// Serial sends writes one at a time (process-wide) and reads alongside each
// other, which is the isolation DynamoDB gives per item and per transaction.
// The store's code is the same as in production; only moto is held to the
// contract. (pkg/dynamostore's tests do the same.)
type Serial struct {
	Next aws.HTTPClient
}

// Do sends r, holding the write lock for DynamoDB write operations.
func (s *Serial) Do(r *http.Request) (*http.Response, error) {
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndex(op, ".")+1:]
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
		serialMu.Lock()
		defer serialMu.Unlock()
	default:
		serialMu.RLock()
		defer serialMu.RUnlock()
	}
	return s.Next.Do(r)
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
