package dynamostore_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dev/storetest"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// httpClient is aws.HTTPClient.
type httpClient interface {
	Do(*http.Request) (*http.Response, error)
}

// doFunc is an httpClient made of a function.
type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// newClient returns a DynamoDB client on the test binary's DynamoDB Local,
// built the way production builds it: from the environment. Requests go
// through wrap (nil: straight on) to the server, concurrent requests
// concurrently: DynamoDB Local is as atomic as DynamoDB, so the tests see
// the races production would.
func newClient(t testing.TB, wrap func(httpClient) httpClient, opts ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	dynamolocal.Require(t)
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]func(*dynamodb.Options){dynamolocal.Quiet, func(o *dynamodb.Options) {
		if wrap != nil {
			o.HTTPClient = wrap(o.HTTPClient)
		}
	}}, opts...)
	return dynamodb.NewFromConfig(cfg, opts...)
}

var tables atomic.Int64

// newTable creates a table of its own for t.
func newTable(t testing.TB, api dynamostore.DynamoDBAPI) string {
	t.Helper()
	name := fmt.Sprintf("slotq-%s-%d", regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "."), tables.Add(1))
	if len(name) > 200 {
		name = name[len(name)-200:]
	}
	if err := dynamostore.CreateTable(t.Context(), api, name); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return name
}

func newStore(t testing.TB) *dynamostore.Store {
	t.Helper()
	api := newClient(t, nil)
	return dynamostore.New(api, newTable(t, api), dynamostore.Options{})
}

// TestState runs the conformance suite. The subtests share one table: the
// suite names its queues uniquely.
func TestState(t *testing.T) {
	api := newClient(t, nil)
	m := awsmeter.NewDynamoDB(api)
	st := dynamostore.New(m, newTable(t, api), dynamostore.Options{})
	storetest.Run(t, func(t *testing.T) engine.State { return st })

	if strings.Contains(flag.Lookup("test.run").Value.String(), "/") {
		// -run picked some subtests (make test repeats the concurrent
		// ones): the operations below need not all have run.
		return
	}
	// Takes and gates update the state item; jobs are put and read.
	counts := m.Counts()
	for _, op := range []string{"UpdateItem state", "PutItem job", "GetItem job"} {
		if counts[op].Calls == 0 {
			t.Errorf("no %s call after the suite", op)
		}
	}
	t.Logf("calls after the suite: %+v", m.Total())
}

func TestCreateTableTwice(t *testing.T) {
	api := newClient(t, nil)
	name := newTable(t, api)
	if err := dynamostore.CreateTable(context.Background(), api, name); err != nil {
		t.Fatalf("CreateTable on an existing table: %v", err)
	}
	out, err := api.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: &name})
	if err != nil {
		t.Fatal(err)
	}
	if d := out.TimeToLiveDescription; d == nil || d.AttributeName == nil || *d.AttributeName != "ttl" {
		t.Errorf("TTL = %+v, want on attribute ttl", d)
	}
}
