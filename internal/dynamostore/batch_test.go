package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// Batches on DynamoDB Local (issue 59): the engine's batch path — the
// batched take's compare-and-set, ListBatch, the leader's claims of its
// batch's jobs — with real concurrency on the table, and the faults
// DynamoDB Local never shows injected once each. ListBatch's contract is
// storetest's (batch.go), which TestState runs.

// bConfig is TestBatchesOnDynamoDB's batched queue: a start every 100 ms (a
// skew that a worker woken late on a loaded host keeps), up to 20 jobs
// a start, a batch's first job waiting 20 ms for more.
var bConfig = slot.Config{Interval: 100 * time.Millisecond, Skew: 50 * time.Millisecond, BatchMax: 20, BatchWait: 20 * time.Millisecond,
	MaxAttempts: 3, Backoff: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}

// bFaultConfig is the queue of the fault tests: one batch a second,
// its slot a second after its enqueue, so that its leader comes a lead
// before the slot and claims its batch before the start on a loaded
// host too (a batch whose leader comes later gives its start up, a
// path TestBatchesOnDynamoDB meets).
var bFaultConfig = slot.Config{Interval: time.Second, Skew: 50 * time.Millisecond, BatchMax: 20, BatchWait: time.Second,
	MaxAttempts: 3, Backoff: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}

// bLead covers DynamoDB Local's latency on a loaded host: the leader's
// gate, claim, list and its batch's claims end before its start.
const bLead = 500 * time.Millisecond

// bCall is one call of the batch handler.
type bCall struct {
	At   time.Time
	IDs  []string
	Jobs []api.Job
}

// bRig is a batched queue "b" on DynamoDB Local, worked by workers into
// an engine over the store (or a wrapper of it that injects a fault),
// with a batch handler that records its calls.
type bRig struct {
	t     *testing.T
	cfg   slot.Config
	sim   *localSim
	eng   *engine.Engine
	mu    sync.Mutex
	calls []bCall
	runs  map[string]int // job id → the calls that carried it
	// kill, when set, says whether a call's worker dies as the call
	// begins: no job of it runs, and the worker's later calls fail.
	kill func(ctx context.Context, jobs []*api.Job) bool
}

// newBatchRig builds the rig: opts tunes the engine (its State,
// Transport, Runner and Lead are the rig's), and wrap, when set, makes
// the State it uses from the rig's DynamoDB Local.
func newBatchRig(t *testing.T, cfg slot.Config, o memstore.TransportOptions, opts engine.Options, wrap func(*localSim) engine.State) *bRig {
	t.Helper()
	r := &bRig{t: t, cfg: cfg, sim: newLocalSim(t, o), runs: map[string]int{}}
	mux := target.NewMux()
	mux.HandleBatchFunc("b", r.handle)
	opts.State = r.sim.store
	if wrap != nil {
		opts.State = wrap(r.sim)
	}
	opts.Transport = dyingTransport{r.sim.tr}
	opts.Runner, opts.Lead, opts.NoAutoCreate = &dispatch.Dispatcher{Mux: mux}, bLead, true
	r.eng = engine.New(opts)
	if _, err := r.eng.CreateQueue(t.Context(), "b", cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *bRig) handle(ctx context.Context, jobs []*api.Job) []error {
	errs := make([]error, len(jobs))
	if r.kill != nil && r.kill(ctx, jobs) {
		die(ctx)
		for i := range errs {
			errs[i] = errors.New("the worker died")
		}
		return errs
	}
	c := bCall{At: time.Now()}
	for _, j := range jobs {
		c.IDs = append(c.IDs, j.ID)
		c.Jobs = append(c.Jobs, *j)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	for _, id := range c.IDs {
		r.runs[id]++
	}
	return errs
}

// enqueue enqueues ids in one request through eng (the rig's, if nil)
// and returns the answers.
func (r *bRig) enqueue(eng *engine.Engine, ids ...string) []api.Accepted {
	r.t.Helper()
	if eng == nil {
		eng = r.eng
	}
	req := job.EnqueueRequest{Queue: "b"}
	for _, id := range ids {
		req.Jobs = append(req.Jobs, job.Spec{ID: id, Kind: "b"})
	}
	// A producer sends a failed call again, as the enqueue function's
	// callers do with its retryable errors: the ids make it idempotent.
	// A batched take is a compare-and-set of the queue's state, which
	// the gates' and the other producers' writes may refuse more often
	// than its tries on a loaded host.
	var err error
	for range 5 {
		var res engine.EnqueueResult
		if res, err = eng.Enqueue(r.t.Context(), req); err == nil {
			return res.Jobs
		}
		var in *input.Error
		if errors.As(err, &in) {
			break
		}
	}
	r.t.Errorf("enqueue %v: %v", ids, err)
	return nil
}

// finish waits until every job of ids has run and its record is
// succeeded, then until every message sent has been handled (the
// batch's watch messages come a second after its slot), and stops the
// workers. It returns the records, read from the store without faults.
func (r *bRig) finish(ids []string) map[string]job.Job {
	r.t.Helper()
	ctx := r.t.Context()
	allRan := false
	defer func() {
		if allRan {
			return
		}
		// The wait failed: say where the jobs that never ran stand.
		for _, id := range ids {
			if _, ok := r.callOf(id); !ok {
				j, err := r.sim.store.GetJob(ctx, job.Ref{Queue: "b", ID: id})
				r.t.Errorf("job %s never ran: %s at ticket %d, attempt %d, started %v, slot %v (%v)", id, j.Status, j.Ticket, j.Attempt, j.StartedAt, j.SlotAt, err)
			}
		}
	}()
	testenv.WaitFor(r.t, fmt.Sprintf("%d jobs to run", len(ids)), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.runs) >= len(ids)
	})
	allRan = true
	final := map[string]job.Job{}
	testenv.WaitFor(r.t, fmt.Sprintf("%d jobs to succeed", len(ids)), func() bool {
		for _, id := range ids {
			if final[id].Status == job.Succeeded {
				continue
			}
			j, err := r.sim.store.GetJob(ctx, job.Ref{Queue: "b", ID: id})
			if err != nil || !j.Status.Final() {
				return false
			}
			final[id] = j
		}
		return true
	})
	testenv.WaitFor(r.t, "every message handled", func() bool { return r.sim.tr.Pending() == 0 })
	r.sim.stop()
	return final
}

// check asserts what holds of every batched run: each job succeeded
// and ran once (at the attempt its record ended at); each call's jobs
// share one ticket and one slot; the calls keep the queue's limit.
func (r *bRig) check(final map[string]job.Job) {
	t := r.t
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, j := range final {
		if j.Status != job.Succeeded {
			t.Errorf("job %s is %s (attempt %d, %q), want succeeded", id, j.Status, j.Attempt, j.LastError)
		}
		if n := r.runs[id]; n != 1 {
			t.Errorf("job %s ran %d times, want once", id, n)
		}
	}
	at := make([]time.Time, len(r.calls))
	for i, c := range r.calls {
		at[i] = c.At
		for _, j := range c.Jobs {
			if j.Ticket != c.Jobs[0].Ticket || !j.SlotAt.Equal(c.Jobs[0].SlotAt) {
				t.Errorf("call %d: job %s at ticket %d, slot %v; %s of the same call at ticket %d, slot %v",
					i, j.ID, j.Ticket, j.SlotAt, c.Jobs[0].ID, c.Jobs[0].Ticket, c.Jobs[0].SlotAt)
			}
			if j.Attempt != final[j.ID].Attempt {
				t.Errorf("call %d ran job %s at attempt %d; its record ended at attempt %d", i, j.ID, j.Attempt, final[j.ID].Attempt)
			}
		}
	}
	slices.SortFunc(at, time.Time.Compare)
	if v := timeline.Violations(at, r.cfg.Interval, r.cfg.Skew); v > 0 {
		t.Errorf("spacing: %d of %d calls break start_j − start_i ≥ (j−i)·%v − %v", v, len(at), r.cfg.Interval, r.cfg.Skew)
	}
}

// checkTold asserts that enqueue answered each job its batch's ticket
// and slot: a job that ran at its first ticket and attempt ran at the
// ticket and slot it was told.
func (r *bRig) checkTold(told []api.Accepted, final map[string]job.Job) {
	r.t.Helper()
	for _, a := range told {
		c, ok := r.callOf(a.JobID)
		if !ok {
			continue // check failed it
		}
		j := c.Jobs[slices.Index(c.IDs, a.JobID)]
		if final[a.JobID].Retickets == 0 && j.Attempt == 1 && (j.Ticket != a.Ticket || !j.SlotAt.Equal(a.SlotAt)) {
			r.t.Errorf("job %s ran at ticket %d, slot %v; enqueue told ticket %d, slot %v", a.JobID, j.Ticket, j.SlotAt, a.Ticket, a.SlotAt)
		}
	}
}

// callOf returns the call that ran job id, and whether one did.
func (r *bRig) callOf(id string) (bCall, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if slices.Contains(c.IDs, id) {
			return c, true
		}
	}
	return bCall{}, false
}

// Four producers enqueue 300 jobs at once on DynamoDB Local, in
// requests of 3 to 10, while 32 workers work the queue, its messages
// delivered twice one time in ten: every enqueue is accepted; every job
// succeeds, once; each call of the batch handler carries jobs of one
// ticket and one slot; the calls keep the queue's limit (a start every
// 100 ms, less the skew); and most jobs run in batches (fewer calls
// than half the jobs). A job claimed by a leader that then could not
// run it nor take it back is retried when its lease (10 s) ends.
func TestBatchesOnDynamoDB(t *testing.T) {
	r := newBatchRig(t, bConfig, memstore.TransportOptions{VisibilityTimeout: 500 * time.Millisecond, Jitter: 5 * time.Millisecond, DuplicateRate: 0.1, Seed: 59},
		engine.Options{Lease: 10 * time.Second}, nil)
	var workErrs atomic.Int64
	r.work(32, func(job.Envelope, error) { workErrs.Add(1) })
	const producers, perProducer = 4, 75
	var mu sync.Mutex
	var ids []string
	var told []api.Accepted
	var wg sync.WaitGroup
	for p := range producers {
		rnd := rand.New(rand.NewPCG(59, uint64(p)))
		wg.Go(func() {
			for n := 0; n < perProducer; {
				k := min(perProducer-n, 3+rnd.IntN(8))
				var req []string
				for i := range k {
					req = append(req, fmt.Sprintf("p%d-%03d", p, n+i))
				}
				n += k
				res := r.enqueue(nil, req...)
				mu.Lock()
				for _, a := range res {
					told = append(told, a)
					ids = append(ids, a.JobID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(ids) != producers*perProducer {
		t.Errorf("%d jobs accepted, want %d", len(ids), producers*perProducer)
	}
	final := r.finish(ids)
	r.check(final)
	r.checkTold(told, final)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) >= len(ids)/2 {
		t.Errorf("%d calls for %d jobs: want most jobs in batches, fewer calls than %d", len(r.calls), len(ids), len(ids)/2)
	}
	largest := 0
	for _, c := range r.calls {
		largest = max(largest, len(c.IDs))
	}
	t.Logf("%d jobs in %d calls (largest %d); %d work errors (messages kept or sent again)", len(ids), len(r.calls), largest, workErrs.Load())
}

// idsOf returns n job ids with prefix.
func idsOf(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

// work runs n of the transport's workers into the rig's engine, each
// delivery with a life of its own (die ends it). onErr hears the errors
// of deliveries before the stop.
func (r *bRig) work(n int, onErr func(job.Envelope, error)) {
	r.sim.wg.Go(func() {
		_ = r.sim.tr.Run(r.sim.bg, n, func(ctx context.Context, env job.Envelope) error {
			l := new(life)
			err := r.eng.Work(context.WithValue(ctx, lifeKey{}, l), env)
			if l.dead.Load() {
				// A worker that died never answers: its message comes
				// again after the visibility timeout.
				err = errors.New("the worker died")
			}
			if err != nil && onErr != nil && ctx.Err() == nil {
				onErr(env, err)
			}
			return err
		})
	})
}

// life is one delivery's worker: once dead, every call it makes to
// DynamoDB (dyingDB) or the transport (dyingTransport) fails, as if its
// process were gone, whatever context the engine derived for the call.
type life struct{ dead atomic.Bool }

type lifeKey struct{}

var errDead = errors.New("the worker's process is gone")

// die ends the life of the delivery ctx belongs to.
func die(ctx context.Context) {
	if l, ok := ctx.Value(lifeKey{}).(*life); ok {
		l.dead.Store(true)
	}
}

func dead(ctx context.Context) bool {
	l, ok := ctx.Value(lifeKey{}).(*life)
	return ok && l.dead.Load()
}

// dyingTransport is the rig's transport: a dead delivery sends nothing.
type dyingTransport struct{ engine.Transport }

func (d dyingTransport) Send(ctx context.Context, msgs []engine.Message) error {
	if dead(ctx) {
		return errDead
	}
	return d.Transport.Send(ctx, msgs)
}

// dyingDB is a DynamoDB client whose calls fail for a dead delivery.
type dyingDB struct{ dynamostore.DynamoDBAPI }

// unlessDead makes call, unless ctx's delivery is dead.
func unlessDead[I, O any](ctx context.Context, call func(context.Context, I, ...func(*dynamodb.Options)) (O, error), in I, o []func(*dynamodb.Options)) (O, error) {
	if dead(ctx) {
		var zero O
		return zero, errDead
	}
	return call(ctx, in, o...)
}

func (d dyingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return unlessDead(ctx, d.DynamoDBAPI.GetItem, in, o)
}

func (d dyingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return unlessDead(ctx, d.DynamoDBAPI.PutItem, in, o)
}

func (d dyingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return unlessDead(ctx, d.DynamoDBAPI.UpdateItem, in, o)
}

func (d dyingDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return unlessDead(ctx, d.DynamoDBAPI.DeleteItem, in, o)
}

func (d dyingDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return unlessDead(ctx, d.DynamoDBAPI.Query, in, o)
}

func (d dyingDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return unlessDead(ctx, d.DynamoDBAPI.BatchGetItem, in, o)
}

func (d dyingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return unlessDead(ctx, d.DynamoDBAPI.TransactWriteItems, in, o)
}

// runBatchOf enqueues 20 jobs in one request (one batch), works them
// with 8 workers and returns enqueue's answers and the records once all
// (and the jobs also, enqueued otherwise) succeeded.
func (r *bRig) runBatchOf(prefix string, also ...string) (told []api.Accepted, final map[string]job.Job) {
	r.t.Helper()
	r.work(8, func(env job.Envelope, err error) { r.t.Logf("work %s/%s: %v", env.Queue, env.JobID, err) })
	ids := idsOf(prefix, r.cfg.BatchMax)
	if told = r.enqueue(nil, ids...); len(told) != len(ids) {
		r.t.Fatalf("%d jobs accepted, want %d", len(told), len(ids))
	}
	final = r.finish(append(ids, also...))
	r.check(final)
	return told, final
}

// The faults of a batch DynamoDB Local never shows, injected once each
// into a batch of 20 jobs. Each job ends succeeded and ran once.
func TestBatchFaultsOnDynamoDB(t *testing.T) {
	// The leader's claim of one of its batch's jobs lands and its answer
	// is lost: the SDK sends it again, which meets the claim's own write
	// token, so the leader knows the job claimed and runs it in the
	// batch's call, once, at its first attempt (no retry).
	t.Run("ClaimAnswerLost", func(t *testing.T) {
		var f *faultyDB
		var lost string // the job whose claim's answer was lost
		r := newBatchRig(t, bFaultConfig, memstore.TransportOptions{VisibilityTimeout: 500 * time.Millisecond}, engine.Options{}, func(sim *localSim) engine.State {
			// A claim of a member (a job that joined the batch: its item
			// says batched), not the leader's claim of its own job.
			f = newFaultyDB(sim.api, 1, 0, faultRule{Op: "PutItem", Fault: faultLost, Rate: 1, N: 1, If: func(in any) bool {
				p, ok := in.(*dynamodb.PutItemInput)
				if !ok || lost != "" || !jobUpdate(in) || attrStr(p.Item, "status") != string(job.Running) {
					return false
				}
				if b, _ := p.Item["batched"].(*types.AttributeValueMemberBOOL); b == nil || !b.Value {
					return false
				}
				lost = attrStr(p.Item, "job_id")
				return true
			}})
			return dynamostore.New(f, sim.table, dynamostore.Options{})
		})
		_, final := r.runBatchOf("c")
		if n := f.Injected("PutItem", faultLost); n != 1 || lost == "" {
			t.Fatalf("%d lost answers injected (job %q); want one, on a claim of a batch's job", n, lost)
		}
		c, ok := r.callOf(lost)
		if !ok || len(c.IDs) < 2 {
			t.Errorf("job %s, whose claim's answer was lost, ran in call %v; want it in its batch's call", lost, c.IDs)
		}
		if j := final[lost]; j.Attempt != 1 {
			t.Errorf("job %s ended at attempt %d; want 1: its claim landed, nothing to retry", lost, j.Attempt)
		}
	})

	// The leader's worker dies after it claimed its batch's jobs, as
	// their call begins: no job of the batch runs, and the jobs stay
	// running. Their messages (the leader's, come again after the
	// visibility timeout; the others', their watches) are the attempts'
	// watchdogs: once the engine's lease (3 s) has passed they record
	// the attempt lost, and each job runs once, at its second attempt.
	t.Run("LeaderDiesBeforeCall", func(t *testing.T) {
		var killed atomic.Pointer[[]string]
		r := newBatchRig(t, bFaultConfig, memstore.TransportOptions{VisibilityTimeout: 500 * time.Millisecond}, engine.Options{Lease: 3 * time.Second}, func(sim *localSim) engine.State {
			return dynamostore.New(dyingDB{sim.api}, sim.table, dynamostore.Options{})
		})
		r.kill = func(_ context.Context, jobs []*api.Job) bool {
			var ids []string
			for _, j := range jobs {
				ids = append(ids, j.ID)
			}
			return len(jobs) > 1 && killed.CompareAndSwap(nil, &ids)
		}
		_, final := r.runBatchOf("d")
		died := killed.Load()
		if died == nil {
			t.Fatal("no batch's call began with more than one job: the fault was never injected")
		}
		for _, id := range *died {
			if j := final[id]; j.Attempt != 2 {
				t.Errorf("job %s of the dead worker's batch ended at attempt %d; want 2, its first attempt lost (last error %q)", id, j.Attempt, j.LastError)
			}
		}
		t.Logf("the worker died with %d jobs claimed; each ran once after its lease", len(*died))
	})

	// A batched take's compare-and-set loses to another enqueue's take,
	// which lands between the take's read of the queue and its write:
	// the store decides again on the state DynamoDB sends back, and the
	// take lands on it. No batch holds more than batch_max jobs, and
	// every job runs once, at the ticket and slot its enqueue answered.
	t.Run("TakeLosesToAnother", func(t *testing.T) {
		var other []api.Accepted
		var hooked, takes atomic.Int64
		var r *bRig
		r = newBatchRig(t, bFaultConfig, memstore.TransportOptions{VisibilityTimeout: 500 * time.Millisecond}, engine.Options{}, func(sim *localSim) engine.State {
			return dynamostore.New(beforeDB{DynamoDBAPI: sim.api, before: func(in *dynamodb.UpdateItemInput) {
				if _, batched := in.ExpressionAttributeValues[":new_ticket"]; !batched {
					return
				}
				if takes.Add(1); !hooked.CompareAndSwap(0, 1) {
					return
				}
				// An enqueue of another producer, on the store without
				// the hook, lands first.
				other = r.enqueue(engine.New(engine.Options{State: sim.store, Transport: dyingTransport{sim.tr}, NoAutoCreate: true}), "other")
			}}, sim.table, dynamostore.Options{})
		})
		told, final := r.runBatchOf("t", "other")
		if hooked.Load() != 1 || len(other) != 1 {
			t.Fatalf("the other enqueue ran %d times and answered %v; want once, inside a batched take", hooked.Load(), other)
		}
		if n := takes.Load(); n < 2 {
			t.Errorf("%d batched takes sent; want the hooked one refused and sent again", n)
		}
		r.checkTold(append(told, other...), final)
		perTicket := map[int64]int{}
		for _, c := range r.calls {
			for _, j := range c.Jobs {
				perTicket[j.Ticket]++
			}
		}
		for tk, n := range perTicket {
			if n > r.cfg.BatchMax {
				t.Errorf("ticket %d carried %d jobs, more than batch_max %d", tk, n, r.cfg.BatchMax)
			}
		}
	})
}

// beforeDB runs before ahead of each UpdateItem it sends on.
type beforeDB struct {
	dynamostore.DynamoDBAPI
	before func(*dynamodb.UpdateItemInput)
}

func (b beforeDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	b.before(in)
	return b.DynamoDBAPI.UpdateItem(ctx, in, o...)
}

func attrStr(m map[string]types.AttributeValue, name string) string {
	v, _ := m[name].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

func attrIs(m map[string]types.AttributeValue, name, want string) bool {
	return attrStr(m, name) == want
}
