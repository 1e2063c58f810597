package functions_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"gopkg.in/yaml.v3"

	"github.com/slotq/slotq/internal/dynamostore"
)

// tableSpy records the table dynamostore.CreateTable asks for, and answers
// that it exists (so CreateTable stops there).
type tableSpy struct {
	dynamostore.DynamoDBAPI
	in *dynamodb.CreateTableInput
}

func (s *tableSpy) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	s.in = in
	return nil, &types.ResourceInUseException{Message: aws.String("exists")}
}

// The table template.yaml deploys is the one dynamostore.CreateTable
// makes for tests and the local runtime: its attributes, keys, and each
// index's keys and projection (the due index's keys only among them).
func TestTemplateTableMatchesCreateTable(t *testing.T) {
	spy := &tableSpy{}
	if err := dynamostore.CreateTable(t.Context(), spy, "t"); err != nil || spy.in == nil {
		t.Fatalf("CreateTable: %v", err)
	}
	var want []string
	for _, a := range spy.in.AttributeDefinitions {
		want = append(want, fmt.Sprintf("attr %s %s", *a.AttributeName, a.AttributeType))
	}
	keys := func(ks []types.KeySchemaElement) string {
		var out string
		for _, k := range ks {
			out += fmt.Sprintf(" %s=%s", *k.AttributeName, k.KeyType)
		}
		return out
	}
	want = append(want, "key"+keys(spy.in.KeySchema))
	for _, g := range spy.in.GlobalSecondaryIndexes {
		want = append(want, fmt.Sprintf("index %s%s %s", *g.IndexName, keys(g.KeySchema), g.Projection.ProjectionType))
	}

	props := get(get(get(templateNode(t, "../template.yaml"), "Resources"), "Table"), "Properties")
	var got []string
	for _, a := range seq(get(props, "AttributeDefinitions")) {
		got = append(got, fmt.Sprintf("attr %s %s", get(a, "AttributeName").Value, get(a, "AttributeType").Value))
	}
	tkeys := func(n *yaml.Node) string {
		var out string
		for _, k := range seq(n) {
			out += fmt.Sprintf(" %s=%s", get(k, "AttributeName").Value, get(k, "KeyType").Value)
		}
		return out
	}
	got = append(got, "key"+tkeys(get(props, "KeySchema")))
	for _, g := range seq(get(props, "GlobalSecondaryIndexes")) {
		got = append(got, fmt.Sprintf("index %s%s %s", get(g, "IndexName").Value, tkeys(get(g, "KeySchema")), get(get(g, "Projection"), "ProjectionType").Value))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("template.yaml's table:\n%v\ndynamostore.CreateTable's:\n%v", got, want)
	}
}

// seq returns the items of sequence n.
func seq(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}
