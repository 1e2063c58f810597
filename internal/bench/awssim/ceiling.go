package awssim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dev/awsmeter"
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
// CeilingBurst) on internal/dynamostore against DynamoDB Local, with
// producers enqueueing singles or batches and workers gating
// concurrently. The transport is memstore's embedded one: moto's SQS
// takes only 100–200 sends a second, so it would be the ceiling measured.
// Each run's Cells are a row of the ceiling table `make bench` writes into
// docs/performance.md (cmd/ceiling): the makespan against the form's
// ideal, re-tickets, breaches of the rate at the handler (slot.Breaches
// with the queue's skew), and the writes each start costs the queue's
// state item, by whom (the enqueue's take, the gate, everything else),
// with the item's size, which sets the write units of each write on
// DynamoDB (1 per started KB).

// Bounds and defaults of a ceiling run.
const (
	// CeilingBurst is the burst of the queue's rate.
	CeilingBurst = 10
	// CeilingLead is how long before a start its worker goes to the
	// gate: it covers a read, the gate and the claim on DynamoDB Local,
	// whose p99 on a loaded 2-core host is a few hundred ms (its JVM
	// waiting for a core; the stack's SlotLead is for DynamoDB itself).
	CeilingLead = 300 * time.Millisecond
	// CeilingProducers is how many producers enqueue at once.
	CeilingProducers = 8
	// CeilingKept is the makespan, as a multiple of the ideal, a rate is
	// kept at.
	CeilingKept = 1.05
)

// CeilingOptions are one run's settings.
type CeilingOptions struct {
	// Rate is the queue's rate per second; Batch the jobs per enqueue
	// call (1 or 10 in the table).
	Rate, Batch int
	// Jobs is how many jobs the run enqueues, a multiple of
	// CeilingProducers × Batch; 0 is max(320, 2×Rate).
	Jobs int
	// Lead is the workers' lead; 0 is CeilingLead.
	Lead time.Duration
	// Skew is the queue's skew; 0 is the stack's default, 10ms, capped at
	// a quarter of the time between two starts.
	Skew time.Duration
	// Wait is how long the run waits for its jobs beyond twice the ideal
	// makespan before it counts those not started; 0 is 30s.
	Wait time.Duration
	// Log hears of a worker's failures and of the requests by step; nil
	// discards them.
	Log io.Writer
}

// CeilingRun is what one run measured.
type CeilingRun struct {
	Rate, Batch, Jobs, Workers int
	Skew, Lead                 time.Duration
	// Ratio is the makespan against the ideal of the queue's limit.
	Ratio                 float64
	Retickets, Reticketed int
	// Again counts handler runs beyond a job's first (a lost attempt
	// retried: slotq is at-least-once).
	Again int
	// Unstarted counts the jobs not started when the run stopped waiting.
	Unstarted     int
	MostRetickets int
	Breaches      int
	EnqueueCalls  int64
	// Writes on the state item by whom: the enqueue's takes, the gates,
	// and the rest (re-ticket takes, ends of runs, slow-downs, skips);
	// failed conditions of each are in the counts.
	TakeWrites, GateWrites, OtherWrites, FailedWrites int64
	StateReads                                        int64
	// ItemBytes is the largest size of the state item seen.
	ItemBytes int
}

func (r CeilingRun) starts() float64 { return float64(r.Jobs) }

// UnitsPerStart is the write units each start costs the state item on
// DynamoDB: every write on it, at 1 unit per started KB of the item.
func (r CeilingRun) UnitsPerStart() float64 {
	return float64(r.TakeWrites+r.GateWrites+r.OtherWrites) / r.starts() * math.Max(1, math.Ceil(float64(r.ItemBytes)/1024))
}

// Kept reports whether the run kept its rate: every job started, in at
// most CeilingKept times the ideal makespan.
func (r CeilingRun) Kept() bool { return r.Unstarted == 0 && r.Ratio <= CeilingKept }

// Cells are the run's row of the ceiling table, as benchdoc's cells
// format reads it: "name=value; name=value".
func (r CeilingRun) Cells() string {
	per := func(n int64) string { return strconv.FormatFloat(float64(n)/r.starts(), 'f', 2, 64) }
	kept := "no"
	if r.Kept() {
		kept = "yes"
	}
	return strings.Join([]string{
		fmt.Sprintf("rate=%d/1s burst %d", r.Rate, CeilingBurst),
		fmt.Sprintf("batch=%d", r.Batch),
		fmt.Sprintf("jobs=%d", r.Jobs),
		fmt.Sprintf("not started in time=%d", r.Unstarted),
		fmt.Sprintf("workers=%d", r.Workers),
		fmt.Sprintf("lead=%v", r.Lead),
		fmt.Sprintf("makespan × ideal=%.3f", r.Ratio),
		fmt.Sprintf("kept (≤ ×%.2f)=%s", CeilingKept, kept),
		fmt.Sprintf("re-ticketed starts=%.1f %%", 100*float64(r.Reticketed)/r.starts()),
		fmt.Sprintf("most re-tickets of a job=%d", r.MostRetickets),
		fmt.Sprintf("skew=%v", r.Skew),
		fmt.Sprintf("breaches=%d", r.Breaches),
		fmt.Sprintf("runs again=%d", r.Again),
		fmt.Sprintf("enqueue calls=%d", r.EnqueueCalls),
		fmt.Sprintf("take writes per call=%.2f", float64(r.TakeWrites)/float64(max(1, r.EnqueueCalls))),
		fmt.Sprintf("take writes per start=%s", per(r.TakeWrites)),
		fmt.Sprintf("gate writes per start=%s", per(r.GateWrites)),
		fmt.Sprintf("other writes per start=%s", per(r.OtherWrites)),
		fmt.Sprintf("failed conditions per start=%s", per(r.FailedWrites)),
		fmt.Sprintf("state reads per start=%s", per(r.StateReads)),
		fmt.Sprintf("state item bytes=%d", r.ItemBytes),
		fmt.Sprintf("write units per start=%.2f", r.UnitsPerStart()),
		fmt.Sprintf("starts/s at 1,000 units/s=%.0f", 1000/r.UnitsPerStart()),
	}, "; ")
}

// labelled is the store with each of the engine's writes of the queue's
// state labelled by its step, so the meter below it tells them apart.
type labelled struct{ engine.State }

// GetQueue reads the queue's config and state items.
func (l labelled) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	return l.State.GetQueue(awsmeter.WithLabel(ctx, "read-queue"), name)
}

// Admit is the gate of a booked start: a read of the queue's items.
func (l labelled) Admit(ctx context.Context, r engine.AdmitRequest) (engine.Queue, error) {
	return l.State.Admit(awsmeter.WithLabel(ctx, "read-queue"), r)
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

// ceilingTables names each run's table apart.
var ceilingTables atomic.Int64

// Ceiling runs o on a table of its own on c's DynamoDB endpoint (DynamoDB
// Local: concurrent calls must be as atomic as DynamoDB's) and returns
// what it measured. It waits for the jobs up to twice the ideal makespan
// and o.Wait more, then counts those not started (Unstarted): a rate the
// store cannot keep leaves jobs behind.
func Ceiling(ctx context.Context, c *Clients, o CeilingOptions) (CeilingRun, error) {
	if o.Rate < 1 || o.Batch < 1 {
		return CeilingRun{}, fmt.Errorf("ceiling: rate %d and batch %d must be at least 1", o.Rate, o.Batch)
	}
	if o.Jobs == 0 {
		o.Jobs = max(320, 2*o.Rate)
	}
	if o.Jobs%(CeilingProducers*o.Batch) != 0 {
		return CeilingRun{}, fmt.Errorf("ceiling: %d jobs is not a multiple of %d producers × batches of %d", o.Jobs, CeilingProducers, o.Batch)
	}
	if o.Lead == 0 {
		o.Lead = CeilingLead
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(logw, format+"\n", args...)
	}
	table := fmt.Sprintf("ceiling-%d-%d", time.Now().UnixNano()%1e9, ceilingTables.Add(1))
	if err := c.NewTable(ctx, table); err != nil {
		return CeilingRun{}, fmt.Errorf("create table: %w", err)
	}
	// Producers and workers each write through a meter of their own: the
	// producers' state writes are the enqueue's takes.
	prodMeter, workMeter := awsmeter.NewDynamoDB(c.DB), awsmeter.NewDynamoDB(c.DB)

	per := time.Second / time.Duration(o.Rate)
	cfg := slot.Config{Rate: api.Rate{N: o.Rate, Per: time.Second}, Burst: CeilingBurst, Skew: o.Skew}
	if cfg.Skew == 0 {
		cfg.Skew = min(10*time.Millisecond, per/4)
	}
	if o.Wait == 0 {
		o.Wait = 30 * time.Second
	}
	// Enough workers that none waits for another: each holds its
	// delivery for the lead and the store's calls.
	workers := min(4000, max(32, int(2*time.Duration(o.Rate)*(o.Lead+time.Second)/time.Second)))
	run := CeilingRun{Rate: o.Rate, Batch: o.Batch, Jobs: o.Jobs, Workers: workers, Skew: cfg.Skew, Lead: o.Lead}

	var (
		mu     sync.Mutex
		starts []time.Time
		seen   = map[string]int{}
		done   = make(chan struct{})
		left   atomic.Int64
	)
	left.Store(int64(o.Jobs))
	mux := target.NewMux()
	mux.HandleFunc("ceiling", func(ctx context.Context, j *api.Job) error {
		at := time.Now()
		mu.Lock()
		defer mu.Unlock()
		starts = append(starts, at)
		seen[j.ID]++
		if j.Retickets > 0 {
			run.Reticketed++
			run.Retickets += j.Retickets
			run.MostRetickets = max(run.MostRetickets, j.Retickets)
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
			Runner: &dispatch.Dispatcher{Mux: mux}, NoAutoCreate: true, Lead: o.Lead,
			WorkerTimeout: 10 * time.Second, Lease: 12 * time.Second})
	}
	worker, producer := newEngine(workMeter), newEngine(prodMeter)
	const queue = "ceiling"
	// The queue is created unmetered: its creation is not the run's.
	admin := engine.New(engine.Options{State: dynamostore.New(c.DB, table, dynamostore.Options{}), Transport: tr, NoAutoCreate: true})
	if _, err := admin.CreateQueue(ctx, queue, cfg); err != nil {
		return run, err
	}

	bg, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() {
		_ = tr.Run(bg, workers, func(ctx context.Context, env job.Envelope) error {
			err := worker.Work(ctx, env)
			if err != nil && ctx.Err() == nil {
				logf("work %s ticket %d: %v", env.JobID, env.Ticket, err)
			}
			return err
		})
	})
	// The state item's size, sampled through the unmetered client: its
	// largest is what a write of it costs at worst.
	var itemBytes atomic.Int64
	sample := func() {
		out, err := c.DB.GetItem(bg, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "Q#" + queue}, "sk": &types.AttributeValueMemberS{Value: "state"}}})
		if err == nil && out.Item != nil {
			n := int64(ItemSize(out.Item))
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

	// Producers: each enqueues its share in calls of Batch jobs, a random
	// gap of up to one start's time between calls.
	var calls atomic.Int64
	var pwg sync.WaitGroup
	perrs := make(chan error, CeilingProducers)
	for p := range CeilingProducers {
		rnd := rand.New(rand.NewPCG(uint64(p), uint64(o.Rate)))
		pwg.Go(func() {
			for n := 0; n < o.Jobs/CeilingProducers; n += o.Batch {
				req := job.EnqueueRequest{Queue: queue}
				for i := range o.Batch {
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
	var errs []error
	for err := range perrs {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return run, err
	}
	ideal := slot.Ideal(cfg.LimitList(), o.Jobs)
	select {
	case <-done:
	case <-time.After(2*ideal + o.Wait):
		run.Unstarted = int(left.Load())
	case <-ctx.Done():
		return run, ctx.Err()
	}
	sample()
	stop()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for _, n := range seen {
		run.Again += n - 1
	}
	slices.SortFunc(starts, time.Time.Compare)
	if len(starts) > 1 && ideal > 0 {
		run.Ratio = float64(starts[len(starts)-1].Sub(starts[0])) / float64(ideal)
	}
	run.Breaches = len(slot.Breaches(cfg.LimitList(), cfg.Skew, starts))
	run.EnqueueCalls = calls.Load()
	run.ItemBytes = int(itemBytes.Load())
	run.tally(prodMeter, workMeter)
	logf("rate %d/1s, batches of %d: requests by step %v; unlabelled %v", o.Rate, o.Batch, workMeter.Labelled(), prodMeter.Counts())
	return run, nil
}

// tally counts the writes on the state item, by step. Every write op
// counts, whatever it is (UpdateItem, PutItem, a transaction that touches
// the item); a failed condition costs a write too.
func (r *CeilingRun) tally(prodMeter, workMeter *awsmeter.DynamoDB) {
	stateWrite := func(op string) bool {
		if _, after, ok := strings.Cut(op, ": "); ok {
			op = after
		}
		return strings.Contains(op, "state") && (strings.HasPrefix(op, "UpdateItem") ||
			strings.HasPrefix(op, "PutItem") || strings.HasPrefix(op, "TransactWriteItems"))
	}
	count := func(m map[string]awsmeter.Count, producers bool) {
		for op, c := range m {
			if !stateWrite(op) {
				continue
			}
			r.FailedWrites += c.CondFailed
			switch label, _, _ := strings.Cut(op, ": "); {
			case producers && label == "take":
				r.TakeWrites += c.Calls
			case label == "gate":
				r.GateWrites += c.Calls
			default:
				r.OtherWrites += c.Calls
			}
		}
	}
	count(prodMeter.Labelled(), true)
	count(workMeter.Labelled(), false)
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
		r.OtherWrites += all - lab
	}
	for _, m := range []*awsmeter.DynamoDB{prodMeter, workMeter} {
		for op, c := range m.Labelled() {
			if strings.HasPrefix(op, "read-queue: ") || strings.Contains(op, "state") && (strings.HasPrefix(op, "GetItem") || strings.HasPrefix(op, "BatchGetItem")) {
				r.StateReads += c.Calls
			}
		}
	}
}
