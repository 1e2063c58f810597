package dynamostore_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// capacity adds up the read and write units DynamoDB reports for the calls
// the store makes (ReturnConsumedCapacity TOTAL, indexes included), and
// counts the calls.
type capacity struct {
	dynamostore.DynamoDBAPI
	mu                 sync.Mutex
	read, write, calls float64
}

// add counts a call and its units: a read call's (write false) are read
// units, a write call's write units (DynamoDB Local reports totals only).
func (c *capacity) add(write bool, cs ...types.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	for _, x := range cs {
		if write {
			c.write += aws.ToFloat64(x.CapacityUnits)
		} else {
			c.read += aws.ToFloat64(x.CapacityUnits)
		}
	}
}

func (c *capacity) take() (read, write, calls float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	read, write, calls = c.read, c.write, c.calls
	c.read, c.write, c.calls = 0, 0, 0
	return read, write, calls
}

func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

const total = types.ReturnConsumedCapacityIndexes

func (c *capacity) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := c.DynamoDBAPI.GetItem(ctx, in, o...)
	if err == nil {
		c.add(false, one(out.ConsumedCapacity)...)
	}
	return out, err
}

func (c *capacity) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := c.DynamoDBAPI.PutItem(ctx, in, o...)
	if err == nil {
		c.add(true, one(out.ConsumedCapacity)...)
	}
	return out, err
}

func (c *capacity) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := c.DynamoDBAPI.UpdateItem(ctx, in, o...)
	if err == nil {
		c.add(true, one(out.ConsumedCapacity)...)
	}
	return out, err
}

func (c *capacity) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := c.DynamoDBAPI.Query(ctx, in, o...)
	if err == nil {
		c.add(false, one(out.ConsumedCapacity)...)
	}
	return out, err
}

func (c *capacity) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := c.DynamoDBAPI.BatchGetItem(ctx, in, o...)
	if err == nil {
		c.add(false, out.ConsumedCapacity...)
	}
	return out, err
}

// resumeBench is a table with queues, of which every tenth of them
// (ten in all) gets something due before each run.
type resumeBench struct {
	api    *capacity
	st     *dynamostore.Store
	eng    *engine.Engine
	queues []engine.Queue
	runs   int  // numbers the due jobs across the framework's calls
	warm   bool // the table had its warm-up runs
}

var (
	resumeBenchMu sync.Mutex
	resumeBenches = map[int]*resumeBench{}
)

// newResumeBench returns the bench of n queues on DynamoDB Local, made
// once per process (the framework calls a benchmark several times).
func newResumeBench(b *testing.B, n int) *resumeBench {
	resumeBenchMu.Lock()
	defer resumeBenchMu.Unlock()
	if rb := resumeBenches[n]; rb != nil {
		return rb
	}
	dynamolocal.Require(b)
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		b.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg, dynamolocal.Quiet)
	table := fmt.Sprintf("slotq-bench-resume-%d-%d", n, time.Now().UnixNano())
	if err := dynamostore.CreateTable(ctx, client, table); err != nil {
		b.Fatal(err)
	}
	rb := &resumeBench{api: &capacity{DynamoDBAPI: client}}
	rb.st = dynamostore.New(rb.api, table, dynamostore.Options{})
	rb.eng = engine.New(engine.Options{State: rb.st, Transport: memstore.NewTransport(memstore.TransportOptions{})})
	rb.queues = make([]engine.Queue, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				q := engine.Queue{Name: fmt.Sprintf("bench-%05d", i), Gen: int64(i + 1), Config: slot.Config{Interval: time.Second}.WithDefaults(), CreatedAt: time.Now()}
				if err := rb.st.CreateQueue(ctx, q); err != nil {
					b.Error(err)
				}
				rb.queues[i] = q
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	resumeBenches[n] = rb
	return rb
}

// One resume run on DynamoDB Local over 10, 1,000 and 10,000 queues of
// which 10 have a parked job due, and over 10,000 with nothing due: ns/op
// is the run's wall time, and it reports the read and write units and
// calls of the run. Flat in the number of idle queues: the run reads the
// due index, not the queues. Each table is warmed up first (DynamoDB
// Local's JVM runs faster as it goes).
func BenchmarkResumeRun(b *testing.B) {
	for _, c := range []struct{ queues, due int }{{10, 10}, {1000, 10}, {10000, 10}, {10000, 0}} {
		b.Run(fmt.Sprintf("queues=%d/due=%d", c.queues, c.due), func(b *testing.B) {
			rb := newResumeBench(b, c.queues)
			ctx := context.Background()
			run := func(due int) (read, write, calls float64) {
				b.StopTimer()
				now := time.Now()
				rb.runs++
				var jobs []job.Job
				for k := range due {
					q := rb.queues[k*(len(rb.queues)/due)]
					jobs = append(jobs, job.Job{
						Queue: q.Name, Gen: q.Gen, ID: fmt.Sprintf("due-%d-%d", rb.runs, k), Kind: "k", Status: job.Parked, ParkReason: job.Far,
						Ticket: int64(rb.runs), Order: int64(rb.runs), Scheduled: true, Attempt: 1, EnqueuedAt: now,
						SlotAt: now.Add(14 * time.Minute), NotBefore: now.Add(14 * time.Minute), DueAt: now.Add(-time.Second),
					})
				}
				if len(jobs) > 0 {
					if _, err := rb.st.CreateJobs(ctx, jobs); err != nil {
						b.Fatal(err)
					}
				}
				rb.api.take()
				b.StartTimer()
				rep, err := rb.eng.Resume(ctx)
				b.StopTimer()
				if err != nil || rep.Released != due || rep.Queues != due {
					b.Fatalf("run: %+v, %v; want %d released on %d queues", rep, err, due, due)
				}
				r, w, n := rb.api.take()
				b.StartTimer()
				return r, w, n
			}
			if !rb.warm {
				for range 30 {
					run(10)
				}
				rb.warm = true
			}
			var read, write, calls float64
			b.ResetTimer()
			for range b.N {
				r, w, n := run(c.due)
				read, write, calls = read+r, write+w, calls+n
			}
			b.ReportMetric(math.Round(read/float64(b.N)*10)/10, "RCU/run")
			b.ReportMetric(math.Round(write/float64(b.N)*10)/10, "WCU/run")
			b.ReportMetric(calls/float64(b.N), "calls/run")
		})
	}
}

// BenchmarkStartOnDynamoDB: a job enqueued on an idle queue, on DynamoDB
// Local with the embedded transport and 4 workers, until its target
// starts. It reports the time from the enqueue call to the target's start
// (ms/start) and from the job's slot to it (late-ms/start): the figures a
// test can count on a quiet host only (TestSlowGateWrites and
// TestResumeScheduledInAnyOrderOnDynamoDB assert order, once and spacing,
// and log them).
func BenchmarkStartOnDynamoDB(b *testing.B) {
	st := newStore(b)
	type start struct {
		id     string
		at     time.Time
		slotAt time.Time
	}
	starts := make(chan start, 1)
	runner := runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
		starts <- start{j.ID, time.Now(), j.SlotAt}
		return nil
	})
	tr := memstore.NewTransport(memstore.TransportOptions{})
	eng := testenv.NewEngine(b, engine.Options{State: st, Transport: tr, Runner: runner})
	testenv.RunWorkers(b, tr, 4, eng)
	ctx := b.Context()
	n := 0
	one := func() (took, late time.Duration) {
		// A queue of its own, made before the clock starts: its slot is
		// open, whatever the iteration before took.
		n++
		id, q := fmt.Sprintf("j%d", n), fmt.Sprintf("start-%d", n)
		if _, err := eng.CreateQueue(ctx, q, slot.Config{Interval: time.Second, Skew: 250 * time.Millisecond}); err != nil {
			b.Fatal(err)
		}
		began := time.Now()
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: q, Job: &job.Spec{ID: id, Kind: "k"}}); err != nil {
			b.Fatal(err)
		}
		select {
		case s := <-starts:
			if s.id != id {
				b.Fatalf("started %s, want %s", s.id, id)
			}
			return s.at.Sub(began), s.at.Sub(s.slotAt)
		case <-time.After(testenv.Patience):
			b.Fatalf("%s did not start within %v", id, testenv.Patience)
		}
		return 0, 0
	}
	for range 20 { // DynamoDB Local's JVM warms up
		one()
	}
	var took, late time.Duration
	for b.Loop() {
		t, l := one()
		took, late = took+t, late+l
	}
	b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/start")
	b.ReportMetric(float64(late.Microseconds())/1000/float64(b.N), "late-ms/start")
}
