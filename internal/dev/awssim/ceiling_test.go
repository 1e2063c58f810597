package awssim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dev/awssim"
	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// One queue's ceiling on the real state store: a rate queue (burst
// ceilingBurst) on internal/dynamostore against DynamoDB Local, at rising
// rates, with producers enqueueing singles and batches of 10 and workers
// gating concurrently. The transport is memstore's embedded one: moto's
// SQS takes only 100–200 sends a second, so it would be the ceiling
// measured. Each rate prints a `figures:` line of cells (`make bench`
// writes them into docs/performance.md, table ceiling): the makespan
// against the form's ideal, re-tickets, breaches of the rate at the
// handler (slot.Breaches with the queue's skew), and the writes each start
// costs the queue's state item, by whom (the enqueue's take, the gate,
// everything else), with the item's size, which sets the write units of
// each write on DynamoDB (1 per started KB).
//
// It measures; it asserts only that every job ran once. It runs under
// SLOTQ_CEILING=1 (make bench) and skips otherwise: its figures depend on
// the host, and its minute of load has no place in `make test`.
// SLOTQ_CEILING_RATES="50,100" picks the rates, SLOTQ_CEILING_LEAD="1s"
// the workers' lead (default ceilingLead).

const (
	ceilingEnv   = "SLOTQ_CEILING"
	ceilingBurst = 10
	// ceilingLead is how long before a start its worker goes to the
	// gate: it covers a read, the gate and the claim on DynamoDB Local,
	// whose p99 on a loaded 2-core host is a few hundred ms (its JVM
	// waiting for a core; the stack's SlotLead is 50ms, for DynamoDB
	// itself).
	ceilingLead      = 300 * time.Millisecond
	ceilingProducers = 8
	// ceilingKept is the makespan, as a multiple of the ideal, a rate is
	// kept at.
	ceilingKept = 1.05
)

// ceilingRun is what one run measured.
type ceilingRun struct {
	rate, batch, jobs, workers int
	skew, lead                 time.Duration
	ratio                      float64
	retickets, reticketed      int
	// again counts handler runs beyond a job's first (a lost attempt
	// retried: slotq is at-least-once).
	again int
	// unstarted counts the jobs not started when the run stopped waiting.
	unstarted     int
	mostRetickets int
	breaches      int
	enqueueCalls  int64
	// writes on the state item by whom: the enqueue's takes, the gates,
	// and the rest (re-ticket takes, ends of runs, slow-downs, skips);
	// failed conditions of each are in the counts.
	takeWrites, gateWrites, otherWrites, failedWrites int64
	stateReads                                        int64
	itemBytes                                         int
}

func (r ceilingRun) starts() float64 { return float64(r.jobs) }

// unitsPerStart is the write units each start costs the state item on
// DynamoDB: every write on it, at 1 unit per started KB of the item.
func (r ceilingRun) unitsPerStart() float64 {
	return float64(r.takeWrites+r.gateWrites+r.otherWrites) / r.starts() * math.Max(1, math.Ceil(float64(r.itemBytes)/1024))
}

func (r ceilingRun) cells() string {
	per := func(n int64) string { return strconv.FormatFloat(float64(n)/r.starts(), 'f', 2, 64) }
	kept := "no"
	if r.ratio <= ceilingKept {
		kept = "yes"
	}
	if r.unstarted > 0 {
		kept = "no"
	}
	return strings.Join([]string{
		fmt.Sprintf("rate=%d/1s burst %d", r.rate, ceilingBurst),
		fmt.Sprintf("batch=%d", r.batch),
		fmt.Sprintf("jobs=%d", r.jobs),
		fmt.Sprintf("not started in time=%d", r.unstarted),
		fmt.Sprintf("workers=%d", r.workers),
		fmt.Sprintf("lead=%v", r.lead),
		fmt.Sprintf("makespan × ideal=%.3f", r.ratio),
		fmt.Sprintf("kept (≤ ×%.2f)=%s", ceilingKept, kept),
		fmt.Sprintf("re-ticketed starts=%.1f %%", 100*float64(r.reticketed)/r.starts()),
		fmt.Sprintf("most re-tickets of a job=%d", r.mostRetickets),
		fmt.Sprintf("skew=%v", r.skew),
		fmt.Sprintf("breaches=%d", r.breaches),
		fmt.Sprintf("runs again=%d", r.again),
		fmt.Sprintf("enqueue calls=%d", r.enqueueCalls),
		fmt.Sprintf("take writes per call=%.2f", float64(r.takeWrites)/float64(max(1, r.enqueueCalls))),
		fmt.Sprintf("take writes per start=%s", per(r.takeWrites)),
		fmt.Sprintf("gate writes per start=%s", per(r.gateWrites)),
		fmt.Sprintf("other writes per start=%s", per(r.otherWrites)),
		fmt.Sprintf("failed conditions per start=%s", per(r.failedWrites)),
		fmt.Sprintf("state reads per start=%s", per(r.stateReads)),
		fmt.Sprintf("state item bytes=%d", r.itemBytes),
		fmt.Sprintf("write units per start=%.2f", r.unitsPerStart()),
		fmt.Sprintf("starts/s at 1,000 units/s=%.0f", 1000/r.unitsPerStart()),
	}, "; ")
}

func TestCeiling(t *testing.T) {
	if os.Getenv(ceilingEnv) == "" {
		t.Skipf("set %s=1 (make bench) to measure one queue's ceiling on DynamoDB Local", ceilingEnv)
	}
	rates := []int{50, 100, 200, 400, 800}
	if s := os.Getenv("SLOTQ_CEILING_RATES"); s != "" {
		rates = nil
		for f := range strings.SplitSeq(s, ",") {
			r, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || r < 1 {
				t.Fatalf("SLOTQ_CEILING_RATES: %q is not a rate per second", f)
			}
			rates = append(rates, r)
		}
	}
	dynamolocal.Require(t)
	for _, batch := range []int{1, 10} {
		best := 0
		for _, rate := range rates {
			r := runCeiling(t, rate, batch)
			t.Logf("figures: %s", r.cells())
			if r.ratio <= ceilingKept && r.unstarted == 0 {
				best = max(best, rate)
			}
		}
		t.Logf("ceiling: batches of %d: the highest rate kept at ≤ ×%.2f of the ideal is %d/1s", batch, ceilingKept, best)
	}
}

// labelled is the store with each of the engine's writes of the queue's
// state labelled by its step, so the meter below it tells them apart.
type labelled struct{ engine.State }

// GetQueue reads the queue's config and state items.
func (l labelled) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	return l.State.GetQueue(awsmeter.WithLabel(ctx, "read-queue"), name)
}

func (l labelled) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	return l.State.Take(awsmeter.WithLabel(ctx, "take"), r)
}

func (l labelled) Gate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	return l.State.Gate(awsmeter.WithLabel(ctx, "gate"), r)
}

func (l labelled) SlowDown(ctx context.Context, r engine.SlowDownRequest) (slot.State, error) {
	return l.State.SlowDown(awsmeter.WithLabel(ctx, "slow-down"), r)
}

func (l labelled) EndRun(ctx context.Context, queue string, gen, ticket int64, until time.Time) error {
	return l.State.EndRun(awsmeter.WithLabel(ctx, "end-run"), queue, gen, ticket, until)
}

func (l labelled) Skip(ctx context.Context, queue string, ticket int64) (bool, error) {
	return l.State.Skip(awsmeter.WithLabel(ctx, "skip"), queue, ticket)
}

func runCeiling(t *testing.T, rate, batch int) ceilingRun {
	t.Helper()
	ctx := t.Context()
	cl, err := awssim.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("ceiling-%d-%d", time.Now().UnixNano()%1e9, seq.Add(1))
	if err := cl.NewTable(ctx, table); err != nil {
		t.Fatalf("create table: %v", err)
	}
	// Producers and workers each write through a meter of their own: the
	// producers' state writes are the enqueue's takes.
	prodMeter, workMeter := awsmeter.NewDynamoDB(cl.DB), awsmeter.NewDynamoDB(cl.DB)

	per := time.Second / time.Duration(rate)
	cfg := slot.Config{Rate: api.Rate{N: rate, Per: time.Second}, Burst: ceilingBurst, Skew: min(10*time.Millisecond, per/4)}
	jobs := max(320, 2*rate) // a multiple of producers × 10
	lead := ceilingLead
	if s := os.Getenv("SLOTQ_CEILING_LEAD"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SLOTQ_CEILING_LEAD: %q is not a duration", s)
		}
		lead = d
	}
	// Enough workers that none waits for another: each holds its
	// delivery for the lead and the store's calls.
	workers := min(4000, max(32, int(2*time.Duration(rate)*(lead+time.Second)/time.Second)))
	run := ceilingRun{rate: rate, batch: batch, jobs: jobs, workers: workers, skew: cfg.Skew, lead: lead}

	var (
		mu     sync.Mutex
		starts []time.Time
		seen   = map[string]int{}
		most   int
		done   = make(chan struct{})
		left   atomic.Int64
	)
	left.Store(int64(jobs))
	mux := target.NewMux()
	mux.HandleFunc("ceiling", func(ctx context.Context, j *api.Job) error {
		at := time.Now()
		mu.Lock()
		defer mu.Unlock()
		starts = append(starts, at)
		seen[j.ID]++
		if j.Retickets > 0 {
			run.reticketed++
			run.retickets += j.Retickets
			most = max(most, j.Retickets)
		}
		if seen[j.ID] == 1 && left.Add(-1) == 0 {
			close(done)
		}
		return nil
	})
	// A short lease and visibility timeout: an attempt whose worker lost
	// its writes to a timeout of the loaded store is retried within
	// seconds, not Lambda's quarter of an hour.
	tr := memstore.NewTransport(memstore.TransportOptions{VisibilityTimeout: 3 * time.Second})
	newEngine := func(m *awsmeter.DynamoDB) *engine.Engine {
		st := dynamostore.New(m, table, dynamostore.Options{})
		return engine.New(engine.Options{State: labelled{st}, Schedules: st, Transport: tr,
			Runner: &dispatch.Dispatcher{Mux: mux}, NoAutoCreate: true, Lead: lead,
			WorkerTimeout: 10 * time.Second, Lease: 12 * time.Second})
	}
	worker, producer := newEngine(workMeter), newEngine(prodMeter)
	const queue = "ceiling"
	// The queue is created unmetered: its creation is not the run's.
	admin := engine.New(engine.Options{State: dynamostore.New(cl.DB, table, dynamostore.Options{}), Transport: tr, NoAutoCreate: true})
	if _, err := admin.CreateQueue(ctx, queue, cfg); err != nil {
		t.Fatal(err)
	}

	bg, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() {
		_ = tr.Run(bg, workers, func(ctx context.Context, env job.Envelope) error {
			err := worker.Work(ctx, env)
			if err != nil && ctx.Err() == nil {
				t.Logf("work %s ticket %d: %v", env.JobID, env.Ticket, err)
			}
			return err
		})
	})
	// The state item's size, sampled through the unmetered client: its
	// largest is what a write of it costs at worst.
	var itemBytes atomic.Int64
	sample := func() {
		out, err := cl.DB.GetItem(bg, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "Q#" + queue}, "sk": &types.AttributeValueMemberS{Value: "state"}}})
		if err == nil && out.Item != nil {
			n := int64(awssim.ItemSize(out.Item))
			for {
				old := itemBytes.Load()
				if n <= old || itemBytes.CompareAndSwap(old, n) {
					break
				}
			}
		}
	}
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-bg.Done():
				return
			case <-tick.C:
				sample()
			}
		}
	})

	// Producers: each enqueues its share in calls of batch jobs, a random
	// gap of up to one tick between calls.
	var calls atomic.Int64
	var pwg sync.WaitGroup
	perrs := make(chan error, ceilingProducers)
	for p := range ceilingProducers {
		rnd := rand.New(rand.NewPCG(uint64(p), uint64(rate)))
		pwg.Go(func() {
			for n := 0; n < jobs/ceilingProducers; n += batch {
				req := job.EnqueueRequest{Queue: queue}
				for i := range batch {
					req.Jobs = append(req.Jobs, job.Spec{Kind: "ceiling", Payload: json.RawMessage(fmt.Sprintf(`{"p":%d,"n":%d}`, p, n+i))})
				}
				if _, err := producer.Enqueue(ctx, req); err != nil {
					perrs <- fmt.Errorf("producer %d: %w", p, err)
					return
				}
				calls.Add(1)
				time.Sleep(time.Duration(rnd.Int64N(int64(per))))
			}
		})
	}
	pwg.Wait()
	close(perrs)
	for err := range perrs {
		t.Fatal(err)
	}
	ideal := timeline.Ideal(cfg.LimitList(), jobs)
	// A rate the store cannot keep leaves jobs behind: the run waits a
	// while past twice the ideal, then counts them and is judged on the
	// starts it saw.
	wait := 2*ideal + 30*time.Second
	select {
	case <-done:
	case <-time.After(wait):
		run.unstarted = int(left.Load())
	}
	sample()
	stop()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for _, n := range seen {
		run.again += n - 1
	}
	slices.SortFunc(starts, time.Time.Compare)
	run.ratio = float64(starts[len(starts)-1].Sub(starts[0])) / float64(ideal)
	run.breaches = len(slot.Breaches(cfg.LimitList(), cfg.Skew, starts))
	run.mostRetickets = most
	run.enqueueCalls = calls.Load()
	run.itemBytes = int(itemBytes.Load())

	// The writes on the state item, by step. Every write op counts,
	// whatever it is (UpdateItem, PutItem, a transaction that touches the
	// item); a failed condition costs a write too.
	stateWrite := func(op string) bool {
		if _, after, ok := strings.Cut(op, ": "); ok {
			op = after
		}
		return strings.Contains(op, "state") && (strings.HasPrefix(op, "UpdateItem") ||
			strings.HasPrefix(op, "PutItem") || strings.HasPrefix(op, "TransactWriteItems"))
	}
	tally := func(m map[string]awsmeter.Count, producers bool) {
		for op, c := range m {
			if !stateWrite(op) {
				continue
			}
			run.failedWrites += c.CondFailed
			switch label, _, _ := strings.Cut(op, ": "); {
			case producers && label == "take":
				run.takeWrites += c.Calls
			case label == "gate":
				run.gateWrites += c.Calls
			default:
				run.otherWrites += c.Calls
			}
		}
	}
	tally(prodMeter.Labelled(), true)
	tally(workMeter.Labelled(), false)
	// Writes outside any label (none expected) count as other writes too.
	for _, m := range []*awsmeter.DynamoDB{prodMeter, workMeter} {
		var all, lab int64
		for op, c := range m.Counts() {
			if stateWrite(op) {
				all += c.Calls
			}
		}
		for op, c := range m.Labelled() {
			if stateWrite(op) {
				lab += c.Calls
			}
		}
		run.otherWrites += all - lab
	}
	for _, m := range []*awsmeter.DynamoDB{prodMeter, workMeter} {
		for op, c := range m.Labelled() {
			if strings.HasPrefix(op, "read-queue: ") || strings.Contains(op, "state") && (strings.HasPrefix(op, "GetItem") || strings.HasPrefix(op, "BatchGetItem")) {
				run.stateReads += c.Calls
			}
		}
	}
	t.Logf("rate %d/1s, batches of %d: requests by step %v; unlabelled %v", rate, batch, workMeter.Labelled(), prodMeter.Counts())
	return run
}
