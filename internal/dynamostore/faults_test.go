package dynamostore_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dynamostore"
)

// faultKind is a failure of real DynamoDB that DynamoDB Local never shows.
type faultKind int

const (
	noFault faultKind = iota
	// faultConflict: TransactionConflictException for a PutItem or
	// UpdateItem (a transaction holds the item), and a
	// TransactionCanceledException with reason TransactionConflict for a
	// TransactWriteItems. Nothing is written; the SDK does not retry it.
	// It does not fire on reads, which never meet one.
	faultConflict
	// faultThrottle: ProvisionedThroughputExceededException or
	// ThrottlingException (one of the two at random). Nothing is written;
	// the SDK retries it.
	faultThrottle
	// faultServer: a 500 InternalServerError, before the request reaches
	// DynamoDB or, at random, after it was applied there: as on DynamoDB,
	// the caller cannot tell. The SDK retries it.
	faultServer
	// faultLost: the request is applied, and its answer is lost to a
	// connection reset. The SDK retries it.
	faultLost
	// faultSlow: the request takes the rule's Slow longer: DynamoDB
	// applies it at a random moment of that time, and its answer comes
	// at the end. Latency of DynamoDB's tail, which DynamoDB Local never
	// has.
	faultSlow
)

var faultNames = [...]string{noFault: "none", faultConflict: "conflict", faultThrottle: "throttle", faultServer: "5xx", faultLost: "lost answer", faultSlow: "slow"}

func (k faultKind) String() string { return faultNames[k] }

// faultRule says which attempts of which calls meet a fault.
type faultRule struct {
	// Op is the operation, such as "UpdateItem"; "" is every one.
	Op string
	// If, when set, picks calls by their input (*dynamodb.PutItemInput, …).
	If func(in any) bool
	// Fault is what a picked attempt meets.
	Fault faultKind
	// Rate is the probability that an attempt the rule picks meets its
	// fault; 1 makes it certain.
	Rate float64
	// N caps the faults this rule injects; 0 is no cap.
	N int
	// Then, when set, runs after each fault this rule injects, before the
	// caller hears of it: for a lost answer, after DynamoDB applied the
	// request. A test makes other writes land there.
	Then func()
	// Slow is, for faultSlow, how much longer a picked request takes.
	Slow time.Duration

	fired int // under faultyDB.mu
}

// faultyDB is a dynamostore.DynamoDBAPI over a real client (on DynamoDB
// Local) that injects the failures of real DynamoDB into chosen calls, by
// faultRule.
//
// It injects at the HTTP layer, under the SDK: each call gets, through a
// per-call option, an HTTP client that answers some attempts itself with
// the error response DynamoDB would send (or, for a lost answer, lets the
// request through and replaces the answer with a connection reset). So the
// SDK's own retryer decides what to retry, as in production, and what it
// does not retry (a TransactionConflictException) reaches the store
// exactly as the SDK surfaces it from the wire.
//
// Each attempt (one HTTP request) is matched against the rules in order;
// the first that picks it and fires decides. MaxPerCall caps the faults of
// one call over the SDK's attempts (3 by default), so a test can ask for
// faults every layer recovers from; 0 is no cap. Decisions draw from one
// generator seeded with the seed given to newFaultyDB: a run's rates are
// the same every time, though under concurrency which call gets which
// draw varies. Safe for concurrent use.
type faultyDB struct {
	db         *dynamodb.Client
	rules      []faultRule
	maxPerCall int

	mu       sync.Mutex
	rnd      *rand.Rand
	injected map[string]int // "UpdateItem throttle" → count
	attempts map[string]int // "UpdateItem" → HTTP requests seen
}

var _ dynamostore.DynamoDBAPI = (*faultyDB)(nil)

func newFaultyDB(db *dynamodb.Client, seed uint64, maxPerCall int, rules ...faultRule) *faultyDB {
	return &faultyDB{
		db: db, rules: rules, maxPerCall: maxPerCall,
		rnd:      rand.New(rand.NewPCG(seed, seed^0x5eed)),
		injected: map[string]int{}, attempts: map[string]int{},
	}
}

// Injected returns how many faults of kind were injected into op ("" for
// every operation).
func (f *faultyDB) Injected(op string, kind faultKind) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k, c := range f.injected {
		o, kk, _ := strings.Cut(k, " ")
		if (op == "" || o == op) && kk == kind.String() {
			n += c
		}
	}
	return n
}

// Attempts returns how many HTTP requests of op the SDK made.
func (f *faultyDB) Attempts(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[op]
}

// String lists the faults injected, for a test's log.
func (f *faultyDB) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for k, c := range f.injected {
		parts = append(parts, fmt.Sprintf("%s: %d", k, c))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// pick decides the fault of one attempt of op; for faultSlow, slow is how
// much longer it takes and lands when DynamoDB applies it.
func (f *faultyDB) pick(op string, in any) (kind faultKind, then func(), coin bool, slow, lands time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[op]++
	for i := range f.rules {
		r := &f.rules[i]
		if (r.Op != "" && r.Op != op) || (r.If != nil && !r.If(in)) || (r.N > 0 && r.fired >= r.N) {
			continue
		}
		if r.Fault == faultConflict && op != "PutItem" && op != "UpdateItem" && op != "DeleteItem" && op != "TransactWriteItems" {
			continue
		}
		if r.Rate < 1 && f.rnd.Float64() >= r.Rate {
			continue
		}
		r.fired++
		f.injected[op+" "+r.Fault.String()]++
		if r.Fault == faultSlow {
			slow = r.Slow
			lands = time.Duration(f.rnd.Int64N(int64(slow) + 1))
		}
		return r.Fault, r.Then, f.rnd.IntN(2) == 0, slow, lands
	}
	return noFault, nil, false, 0, 0
}

// with adds to a call's options the HTTP client that injects its faults.
func (f *faultyDB) with(op string, in any, optFns []func(*dynamodb.Options)) []func(*dynamodb.Options) {
	return append(slices.Clip(optFns), func(o *dynamodb.Options) {
		o.HTTPClient = &faultyCall{f: f, op: op, in: in, next: o.HTTPClient}
	})
}

// faultyCall is the HTTP client of one call: every attempt the SDK makes
// for it goes through Do, one after the other.
type faultyCall struct {
	f      *faultyDB
	op     string
	in     any
	next   httpClient
	faults int
}

func (c *faultyCall) Do(r *http.Request) (*http.Response, error) {
	if c.f.maxPerCall > 0 && c.faults >= c.f.maxPerCall {
		c.f.mu.Lock()
		c.f.attempts[c.op]++
		c.f.mu.Unlock()
		return c.next.Do(r)
	}
	kind, then, coin, slow, lands := c.f.pick(c.op, c.in)
	if kind == noFault {
		return c.next.Do(r)
	}
	c.faults++
	if kind == faultSlow {
		time.Sleep(lands)
		resp, err := c.next.Do(r)
		if then != nil {
			then()
		}
		time.Sleep(slow - lands)
		return resp, err
	}
	resp, err := c.inject(r, kind, coin)
	if then != nil {
		then()
	}
	return resp, err
}

func (c *faultyCall) inject(r *http.Request, kind faultKind, coin bool) (*http.Response, error) {
	switch kind {
	case faultConflict:
		if tx, ok := c.in.(*dynamodb.TransactWriteItemsInput); ok {
			reasons := make([]string, len(tx.TransactItems))
			for i := range reasons {
				reasons[i] = `{"Code":"None"}`
			}
			reasons[0] = `{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}`
			return awsError(r, http.StatusBadRequest, "TransactionCanceledException",
				"Transaction cancelled, please refer cancellation reasons for specific reasons",
				`,"CancellationReasons":[`+strings.Join(reasons, ",")+`]`), nil
		}
		return awsError(r, http.StatusBadRequest, "TransactionConflictException",
			"Transaction is ongoing for the item", ""), nil
	case faultThrottle:
		if coin {
			return awsError(r, http.StatusBadRequest, "ThrottlingException", "Rate of requests exceeds the allowed throughput.", ""), nil
		}
		return awsError(r, http.StatusBadRequest, "ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded.", ""), nil
	case faultServer:
		if coin {
			if err := c.through(r); err != nil {
				return nil, err
			}
		}
		return awsError(r, http.StatusInternalServerError, "InternalServerError", "Internal server error", ""), nil
	case faultLost:
		if err := c.through(r); err != nil {
			return nil, err
		}
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return c.next.Do(r)
}

// through sends r on to DynamoDB and throws its answer away.
func (c *faultyCall) through(r *http.Request) error {
	resp, err := c.next.Do(r)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// awsError is DynamoDB's answer for an error of type code; extra adds
// fields to the JSON body (it starts with a comma).
func awsError(r *http.Request, status int, code, msg, extra string) *http.Response {
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#` + code + `","message":` + strconv.Quote(msg) + extra + `}`
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{
			"Content-Type":     {"application/x-amz-json-1.0"},
			"X-Amzn-Errortype": {code},
			"X-Amz-Crc32":      {strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)},
		},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}
}

func (f *faultyDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return f.db.GetItem(ctx, in, f.with("GetItem", in, optFns)...)
}

func (f *faultyDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return f.db.PutItem(ctx, in, f.with("PutItem", in, optFns)...)
}

func (f *faultyDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return f.db.UpdateItem(ctx, in, f.with("UpdateItem", in, optFns)...)
}

func (f *faultyDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return f.db.DeleteItem(ctx, in, f.with("DeleteItem", in, optFns)...)
}

func (f *faultyDB) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return f.db.Query(ctx, in, f.with("Query", in, optFns)...)
}

func (f *faultyDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return f.db.BatchGetItem(ctx, in, f.with("BatchGetItem", in, optFns)...)
}

func (f *faultyDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return f.db.TransactWriteItems(ctx, in, f.with("TransactWriteItems", in, optFns)...)
}

func (f *faultyDB) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return f.db.CreateTable(ctx, in, f.with("CreateTable", in, optFns)...)
}

func (f *faultyDB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return f.db.DescribeTable(ctx, in, f.with("DescribeTable", in, optFns)...)
}

func (f *faultyDB) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return f.db.UpdateTimeToLive(ctx, in, f.with("UpdateTimeToLive", in, optFns)...)
}

// Predicates for faultRule.If.

// onStateItem picks writes of a queue's hot state item (Take, Gate, Pause,
// …): its sort key is "state".
func onStateItem(in any) bool {
	switch in := in.(type) {
	case *dynamodb.UpdateItemInput:
		return skIs(in.Key, "state")
	case *dynamodb.PutItemInput:
		return skIs(in.Item, "state")
	}
	return false
}

// onJobItem picks writes of job items (CreateJobs, UpdateJob).
func onJobItem(in any) bool {
	switch in := in.(type) {
	case *dynamodb.UpdateItemInput:
		return skIs(in.Key, "job")
	case *dynamodb.PutItemInput:
		return skIs(in.Item, "job")
	}
	return false
}

func skIs(m map[string]types.AttributeValue, sk string) bool {
	v, ok := m["sk"].(*types.AttributeValueMemberS)
	return ok && v.Value == sk
}
