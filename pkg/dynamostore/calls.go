package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The wrappers below set the table name and ReturnConsumedCapacity on every
// call, count its cost under op, and map table-level AWS errors.

func (s *Store) done(op string, err error) error {
	if err == nil {
		return nil
	}
	_, ccf := conditionFailed(err)
	_, tce := cancelReasons(err)
	if ccf || tce {
		s.meter.condFailed(op)
		return err
	}
	s.meter.failed(op)
	return s.awsErr(err)
}

func (s *Store) getItem(ctx context.Context, op string, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: k, ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, s.done(op, err)
	}
	s.meter.record(op, false, out.ConsumedCapacity)
	return out.Item, nil
}

func (s *Store) putItem(ctx context.Context, op string, in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
	in.TableName = &s.table
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := s.api.PutItem(ctx, in)
	if err != nil {
		return nil, s.done(op, err)
	}
	s.meter.record(op, true, out.ConsumedCapacity)
	return out, nil
}

func (s *Store) updateItem(ctx context.Context, op string, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	in.TableName = &s.table
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := s.api.UpdateItem(ctx, in)
	if err != nil {
		return nil, s.done(op, err)
	}
	s.meter.record(op, true, out.ConsumedCapacity)
	return out, nil
}

func (s *Store) query(ctx context.Context, op string, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	in.TableName = &s.table
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := s.api.Query(ctx, in)
	if err != nil {
		return nil, s.done(op, err)
	}
	s.meter.record(op, false, out.ConsumedCapacity)
	return out, nil
}

func (s *Store) batchGet(ctx context.Context, op string, in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := s.api.BatchGetItem(ctx, in)
	if err != nil {
		return nil, s.done(op, err)
	}
	s.meter.record(op, false, ccs(out.ConsumedCapacity)...)
	return out, nil
}

// transact runs a write transaction. Items must name the table already.
func (s *Store) transact(ctx context.Context, op string, items []types.TransactWriteItem) error {
	out, err := s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:          items,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return s.done(op, err)
	}
	s.meter.record(op, true, ccs(out.ConsumedCapacity)...)
	return nil
}
