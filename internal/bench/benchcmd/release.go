package benchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/slotq/slotq/internal/bench/benchdoc"
	"github.com/slotq/slotq/internal/bench/dynamomodel"
	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/internal/sqstransport"
)

// releaseInterval is each queue's interval in the release measurement: a
// queue of 500 jobs a second, the busy queue.
const releaseInterval = 2 * time.Millisecond

// SQSLatency is what one SendMessageBatch call takes in the release
// measurement: 10 ms at the median, 30 ms at the p99. SQS publishes no
// latency figure; this is an assumption, about twice DynamoDB's.
var SQSLatency = dynamomodel.Latency{Median: 10 * time.Millisecond, P99: 30 * time.Millisecond}

// runRelease measures how fast the stack releases far-parked jobs: jobs
// parked in the store because their slots lie beyond SQS's 15 minutes,
// spread over several queues, all due at once, and one resume run (the
// function's minute) on the model of DynamoDB (internal/bench/dynamomodel)
// sending through internal/sqstransport to an SQS of SQSLatency. It prints
// each run's jobs released a second and their median. Nothing here starts
// an emulator: the model and the SQS stand-in are in the process.
func runRelease(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jobs := fs.Int("jobs", 20000, "far-parked jobs, spread evenly over the queues")
	queues := fs.Int("queues", 8, "queues the jobs are parked on, each at 500 jobs a second")
	runs := fs.Int("runs", 3, "runs, each on a fresh store; the median is printed")
	timeout := fs.Duration("timeout", time.Minute, "the resume run's deadline (the stack's resume function: a minute)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *jobs < 1 || *queues < 1 || *runs < 1 || *timeout <= 0 {
		fmt.Fprintln(stderr, "release: --jobs, --queues, --runs and --timeout must be positive")
		return exitUsage
	}
	var rates []float64
	for i := range *runs {
		r, err := releaseOnce(ctx, uint64(i+1), *jobs, *queues, *timeout)
		if err != nil {
			fmt.Fprintln(stderr, "release:", err)
			return exitFail
		}
		fmt.Fprintf(stdout, "run %d: released %d of %d far-parked jobs over %d queues in %.2fs, %d left for the next run: %.0f jobs/s (%d store calls, %d SendMessageBatch calls)\n",
			i+1, r.released, *jobs, *queues, r.elapsed.Seconds(), r.left, r.rate(), r.calls, r.sends)
		rates = append(rates, r.rate())
	}
	slices.Sort(rates)
	fmt.Fprintf(stdout, "release: median of %d runs: %.0f jobs released a second, on the model of DynamoDB; load average %s\n", *runs, rates[len(rates)/2], benchdoc.LoadAverage())
	return exitOK
}

type releaseResult struct {
	released, left int
	elapsed        time.Duration
	calls, sends   int64
}

func (r releaseResult) rate() float64 { return float64(r.released) / r.elapsed.Seconds() }

// releaseOnce parks jobs over queues on the embedded store (no latency),
// moves the clock two minutes on so that all of them are due, and times
// one resume run on the model of it.
func releaseOnce(ctx context.Context, seed uint64, jobs, queues int, timeout time.Duration) (releaseResult, error) {
	mem := memstore.New(memstore.Options{})
	var shift atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	setup := engine.New(engine.Options{State: mem, Transport: memstore.NewTransport(memstore.TransportOptions{}), Now: now})
	notBefore := now().Add(sqstransport.MaxDelay + time.Minute)
	gens := make([]int64, queues)
	for q := range queues {
		name := fmt.Sprintf("release-%d", q)
		created, err := setup.CreateQueue(ctx, name, slot.Config{Interval: releaseInterval})
		if err != nil {
			return releaseResult{}, err
		}
		gens[q] = created.Gen
		n := jobs / queues
		if q < jobs%queues {
			n++
		}
		for first := 0; first < n; first += job.MaxBatch {
			req := job.EnqueueRequest{Queue: name}
			for i := first; i < min(n, first+job.MaxBatch); i++ {
				req.Jobs = append(req.Jobs, job.Spec{ID: "j" + strconv.Itoa(i), Kind: "k", NotBefore: &notBefore})
			}
			if _, err := setup.Enqueue(ctx, req); err != nil {
				return releaseResult{}, err
			}
		}
		if parked, err := mem.CountJobs(ctx, name, gens[q], job.Parked); err != nil || parked != n {
			return releaseResult{}, fmt.Errorf("queue %s: %d of %d jobs parked (%v)", name, parked, n, err)
		}
	}
	// Every parked job's due time (its slot less SQS's reach) passed.
	shift.Store(int64(2 * time.Minute))
	model := &countingModel{Model: dynamomodel.New(mem, dynamomodel.Options{Seed: seed})}
	sqsAPI := newLatentSQS(seed, SQSLatency)
	eng := engine.New(engine.Options{State: model, Transport: sqstransport.New(sqsAPI, "https://sqs.local/release", sqstransport.Options{}), Now: now})
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	began := time.Now()
	rep, err := eng.Resume(rctx)
	elapsed := time.Since(began)
	if err != nil && rctx.Err() == nil {
		return releaseResult{}, err
	}
	left := 0
	for q := range queues {
		n, err := mem.CountJobs(ctx, fmt.Sprintf("release-%d", q), gens[q], job.Parked)
		if err != nil {
			return releaseResult{}, err
		}
		left += n
	}
	return releaseResult{released: rep.Released, left: left, elapsed: elapsed, calls: model.calls.Load(), sends: sqsAPI.calls.Load()}, nil
}

// countingModel counts the calls the resume run makes on the job records,
// the ones a release makes per job.
type countingModel struct {
	*dynamomodel.Model
	calls atomic.Int64
}

func (m *countingModel) GetJob(ctx context.Context, k job.Ref) (job.Job, error) {
	m.calls.Add(1)
	return m.Model.GetJob(ctx, k)
}

func (m *countingModel) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	m.calls.Add(1)
	return m.Model.UpdateJob(ctx, j, from)
}

// latentSQS answers SendMessageBatch after a latency drawn from a
// log-normal of its median and p99, accepting every entry; it receives
// nothing.
type latentSQS struct {
	sqstransport.SQSAPI
	lat   dynamomodel.Latency
	sigma float64
	mu    sync.Mutex
	rnd   *rand.Rand
	calls atomic.Int64
}

func newLatentSQS(seed uint64, lat dynamomodel.Latency) *latentSQS {
	return &latentSQS{lat: lat, sigma: math.Log(float64(lat.P99)/float64(lat.Median)) / 2.3263, rnd: rand.New(rand.NewPCG(seed, 0x5e5))}
}

func (s *latentSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	s.calls.Add(1)
	s.mu.Lock()
	d := time.Duration(float64(s.lat.Median) * math.Exp(s.sigma*s.rnd.NormFloat64()))
	s.mu.Unlock()
	if err := clock.Sleep(ctx, d); err != nil {
		return nil, err
	}
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + aws.ToString(e.Id))})
	}
	return out, nil
}
