package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The wrappers below set the table name on every call and map table-level
// AWS errors. The write wrappers also retry what the SDK's retryer leaves
// alone: a single-item write refused with TransactionConflictException
// (putItem, updateItem, deleteItem), and a transaction cancelled for a
// transient reason (transact).

// resend calls send again, after backoff, while it fails with
// TransactionConflictException, up to maxTxRetries times. DynamoDB refuses
// a PutItem or UpdateItem on an item an in-flight TransactWriteItems
// touches (CreateQueue, SetConfig and DeleteQueue do, on the hot state
// item), and the SDK does not retry it.
// The refused request wrote nothing; an earlier attempt of the same call
// that landed before its answer was lost (and the SDK sent it again) is
// recognised by the write token the input carries, as for any SDK retry, so
// sending the same input again is safe. The error that is left is mapped
// as every call's (awsErr).
func resend[T any](ctx context.Context, s *Store, send func() (*T, error)) (*T, error) {
	out, err := send()
	for attempt := 0; attempt < maxTxRetries && conflicted(err); attempt++ {
		if backoff(ctx, attempt) != nil {
			break
		}
		out, err = send()
	}
	if err != nil {
		return nil, s.awsErr(err)
	}
	return out, nil
}

func (s *Store) getItem(ctx context.Context, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, s.awsErr(err)
	}
	return out.Item, nil
}

func (s *Store) putItem(ctx context.Context, in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
	in.TableName = &s.table
	return resend(ctx, s, func() (*dynamodb.PutItemOutput, error) { return s.api.PutItem(ctx, in) })
}

func (s *Store) updateItem(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	in.TableName = &s.table
	return resend(ctx, s, func() (*dynamodb.UpdateItemOutput, error) { return s.api.UpdateItem(ctx, in) })
}

func (s *Store) deleteItem(ctx context.Context, in *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error) {
	in.TableName = &s.table
	return resend(ctx, s, func() (*dynamodb.DeleteItemOutput, error) { return s.api.DeleteItem(ctx, in) })
}

func (s *Store) query(ctx context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	in.TableName = &s.table
	out, err := s.api.Query(ctx, in)
	if err != nil {
		return nil, s.awsErr(err)
	}
	return out, nil
}

// queryOf is the Query of the key condition, filter and projection b
// holds (DynamoDB reads the table; the caller sets the rest).
func queryOf(b expression.Builder) (*dynamodb.QueryInput, error) {
	x, err := b.Build()
	if err != nil {
		return nil, err
	}
	return &dynamodb.QueryInput{
		KeyConditionExpression:    x.KeyCondition(),
		FilterExpression:          x.Filter(),
		ProjectionExpression:      x.Projection(),
		ExpressionAttributeNames:  x.Names(),
		ExpressionAttributeValues: x.Values(),
	}, nil
}

// queryPages runs in page by page with the SDK's paginator and hands
// each page to page until page answers false or the query ends; it stops
// at the first error, page's or a page's (mapped as every call's). limit,
// if set, is asked before each page for that page's Limit: a query that
// wants a number of items asks each page for those still missing (the
// paginator's own Limit is one number for every page).
func (s *Store) queryPages(ctx context.Context, in *dynamodb.QueryInput, limit func() int32, page func(*dynamodb.QueryOutput) (more bool, err error)) error {
	in.TableName = &s.table
	query := s.api.Query
	if limit != nil {
		query = func(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
			in.Limit = aws.Int32(limit())
			return s.api.Query(ctx, in, optFns...)
		}
	}
	p := dynamodb.NewQueryPaginator(queryFunc(query), in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return s.awsErr(err)
		}
		if more, err := page(out); err != nil || !more {
			return err
		}
	}
	return nil
}

// queryFunc is a Query call as the paginator makes it.
type queryFunc func(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)

func (f queryFunc) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return f(ctx, in, optFns...)
}

// part is the key condition of the table's partition pk; partBeginsWith
// keeps to its sort keys that begin with prefix.
func part(pk string) expression.KeyConditionBuilder {
	return expression.Key(attrPK).Equal(expression.Value(str(pk)))
}

func partBeginsWith(pk, prefix string) expression.KeyConditionBuilder {
	return part(pk).And(expression.Key(attrSK).BeginsWith(prefix))
}

// queryAll reads every item of key condition kc, strongly consistent,
// page by page, and hands each to each in sort key order; it stops at
// the first error, each's or a page's.
func (s *Store) queryAll(ctx context.Context, kc expression.KeyConditionBuilder, each func(map[string]types.AttributeValue) error) error {
	in, err := queryOf(expression.NewBuilder().WithKeyCondition(kc))
	if err != nil {
		return err
	}
	in.ConsistentRead = aws.Bool(true)
	return s.queryPages(ctx, in, nil, func(page *dynamodb.QueryOutput) (bool, error) {
		for _, m := range page.Items {
			if err := each(m); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

func (s *Store) batchGet(ctx context.Context, in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
	out, err := s.api.BatchGetItem(ctx, in)
	if err != nil {
		return nil, s.awsErr(err)
	}
	return out, nil
}

// transact runs a write transaction. Items must name the table already.
// A transaction cancelled only for transient reasons (another transaction
// held an item, or it was throttled: see transient) is run again after
// backoff, up to maxTxRetries times. Each run gets a new
// ClientRequestToken from the SDK, which keeps one token across its own
// retries of a run; a cancelled run wrote nothing.
func (s *Store) transact(ctx context.Context, items []types.TransactWriteItem) error {
	var err error
	for attempt := 0; ; attempt++ {
		_, err = s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		reasons, ok := cancelReasons(err)
		if !ok || attempt >= maxTxRetries || !retryable(reasons) {
			break
		}
		if berr := backoff(ctx, attempt); berr != nil {
			break
		}
	}
	if err != nil {
		return s.awsErr(err)
	}
	return nil
}
