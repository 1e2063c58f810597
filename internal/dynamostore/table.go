package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/slotq/slotq/internal/engine"
)

// TableWait bounds how long CreateTable waits for a new table to become
// active.
const TableWait = 5 * time.Minute

// CreateTable creates the table a Store needs — on-demand billing, the
// keys pk and sk, IndexByStatus, IndexQueues and IndexDue — waits until it is
// active, and turns on TTL on the attribute "ttl". An existing table of
// that name is left as it is (and nil returned), so the local runtime may
// call it on every start. docs/dynamodb.md has the same schema for SAM.
func CreateTable(ctx context.Context, api DynamoDBAPI, name string) error {
	s := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	keys := func(hash, rng string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange},
		}
	}
	all := &types.Projection{ProjectionType: types.ProjectionTypeAll}
	_, err := api.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   &name,
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			s(attrPK), s(attrSK), s(attrQueueStatus), s(attrItemKind), s(attrQueue),
			{AttributeName: aws.String(attrTicket), AttributeType: types.ScalarAttributeTypeN},
			s(attrDuePK),
			{AttributeName: aws.String(attrDueSK), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: keys(attrPK, attrSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String(IndexByStatus), KeySchema: keys(attrQueueStatus, attrTicket), Projection: all},
			{IndexName: aws.String(IndexQueues), KeySchema: keys(attrItemKind, attrQueue), Projection: all},
			// Keys only: the resume function reads the records it acts
			// on, and a write that leaves an entry's keys alone costs
			// the index nothing.
			{IndexName: aws.String(IndexDue), KeySchema: keys(attrDuePK, attrDueSK), Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}},
		},
	})
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 200 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	}).Wait(ctx, &dynamodb.DescribeTableInput{TableName: &name}, TableWait); err != nil {
		return fmt.Errorf("create table %s: wait until active: %w", name, err)
	}
	_, err = api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: &name,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrTTL), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("create table %s: enable ttl: %w", name, err)
	}
	// A table this code creates holds records of its layout only: its
	// schema mark says so, and no resume run rebuilds it.
	m := key(pkSchema, skSchema)
	m[attrSchemaVersion] = num(engine.SchemaVersion)
	if _, err := api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &name, Item: m}); err != nil {
		return fmt.Errorf("create table %s: schema mark: %w", name, err)
	}
	return nil
}
