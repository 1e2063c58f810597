package awsmeter_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/sqstransport"
)

// fakeDB answers every call with fail (nil: success).
type fakeDB struct {
	dynamostore.DynamoDBAPI
	fail error
}

func (f *fakeDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, f.fail
}

func (f *fakeDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return &dynamodb.PutItemOutput{}, f.fail
}

func (f *fakeDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, f.fail
}

func (f *fakeDB) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, f.fail
}

func (f *fakeDB) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, f.fail
}

func (f *fakeDB) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return &dynamodb.BatchGetItemOutput{}, f.fail
}

func (f *fakeDB) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return &dynamodb.TransactWriteItemsOutput{}, f.fail
}

func key(sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}, "sk": &types.AttributeValueMemberS{Value: sk}}
}

func TestDynamoDBOperations(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		op   string
		call func(api dynamostore.DynamoDBAPI) error
	}{
		{"GetItem job", func(api dynamostore.DynamoDBAPI) error {
			_, err := api.GetItem(ctx, &dynamodb.GetItemInput{Key: key("job")})
			return err
		}},
		{"PutItem job", func(api dynamostore.DynamoDBAPI) error {
			_, err := api.PutItem(ctx, &dynamodb.PutItemInput{Item: key("job")})
			return err
		}},
		{"UpdateItem state", func(api dynamostore.DynamoDBAPI) error {
			_, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{Key: key("state")})
			return err
		}},
		{"PutItem lane", func(api dynamostore.DynamoDBAPI) error {
			_, err := api.PutItem(ctx, &dynamodb.PutItemInput{Item: key("K#acct-7")})
			return err
		}},
		{"DeleteItem lane", func(api dynamostore.DynamoDBAPI) error {
			_, err := api.DeleteItem(ctx, &dynamodb.DeleteItemInput{Key: key("K#")})
			return err
		}},
		{"DeleteItem lane waiter", func(api dynamostore.DynamoDBAPI) error {
			_, err := api.DeleteItem(ctx, &dynamodb.DeleteItemInput{Key: key("W#0000000000000007#000000000000002a#job-1")})
			return err
		}},
		{"Query table", func(api dynamostore.DynamoDBAPI) error {
			_, err := api.Query(ctx, &dynamodb.QueryInput{})
			return err
		}},
		{"Query by_status count", func(api dynamostore.DynamoDBAPI) error {
			_, err := api.Query(ctx, &dynamodb.QueryInput{IndexName: aws.String("by_status"), Select: types.SelectCount})
			return err
		}},
		{"BatchGetItem state", func(api dynamostore.DynamoDBAPI) error {
			_, err := api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				"t": {Keys: []map[string]types.AttributeValue{key("state"), key("state")}},
			}})
			return err
		}},
		{"TransactWriteItems put state, put config", func(api dynamostore.DynamoDBAPI) error {
			_, err := api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{Item: key("state")}}, {Put: &types.Put{Item: key("config")}},
			}})
			return err
		}},
	}
	ccf := fmt.Errorf("operation error: %w", &types.ConditionalCheckFailedException{})
	tce := &types.TransactionCanceledException{}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			fake := &fakeDB{}
			m := awsmeter.NewDynamoDB(fake)
			_ = tt.call(m)
			for _, fail := range []error{ccf, tce, errors.New("throttled")} {
				fake.fail = fail
				_ = tt.call(m)
			}
			want := map[string]awsmeter.Count{tt.op: {Calls: 4, CondFailed: 2}}
			if got := m.Counts(); !maps.Equal(got, want) {
				t.Errorf("counts = %v, want %v", got, want)
			}
		})
	}
}

type fakeSQS struct{ sqstransport.SQSAPI }

func (fakeSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return &sqs.SendMessageBatchOutput{Successful: make([]sqstypes.SendMessageBatchResultEntry, len(in.Entries)-1)}, nil
}

func (fakeSQS) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return &sqs.ReceiveMessageOutput{Messages: make([]sqstypes.Message, 3)}, nil
}

func (fakeSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return nil, errors.New("boom")
}

func (fakeSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{}, nil
}

func TestSQS(t *testing.T) {
	ctx := context.Background()
	m := awsmeter.NewSQS(fakeSQS{})
	_, _ = m.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{Entries: make([]sqstypes.SendMessageBatchRequestEntry, 10)})
	_, _ = m.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{Entries: make([]sqstypes.SendMessageBatchRequestEntry, 2)})
	_, _ = m.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
	_, _ = m.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{})
	_, _ = m.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{})
	want := awsmeter.SQSUsage{SendCalls: 2, Sent: 10, ReceiveCalls: 1, Received: 3, DeleteCalls: 1, OtherCalls: 1}
	if got := m.Usage(); got != want {
		t.Errorf("usage = %+v, want %+v", got, want)
	}
}

// TestDynamoDBLabels: a request under a label counts under its operation
// and under "label: operation"; one without, under its operation alone.
func TestDynamoDBLabels(t *testing.T) {
	ctx := context.Background()
	d := awsmeter.NewDynamoDB(&fakeDB{})
	_, _ = d.UpdateItem(awsmeter.WithLabel(ctx, "gate"), &dynamodb.UpdateItemInput{Key: key("state")})
	_, _ = d.UpdateItem(awsmeter.WithLabel(ctx, "take"), &dynamodb.UpdateItemInput{Key: key("state")})
	_, _ = d.UpdateItem(awsmeter.WithLabel(ctx, "gate"), &dynamodb.UpdateItemInput{Key: key("state")})
	_, _ = d.PutItem(ctx, &dynamodb.PutItemInput{Item: key("job")})
	want := map[string]awsmeter.Count{"gate: UpdateItem state": {Calls: 2}, "take: UpdateItem state": {Calls: 1}}
	if got := d.Labelled(); !maps.Equal(got, want) {
		t.Errorf("Labelled() = %v, want %v", got, want)
	}
	if got := d.Counts()["UpdateItem state"]; got.Calls != 3 {
		t.Errorf("UpdateItem state counted %d times, want 3", got.Calls)
	}
}
