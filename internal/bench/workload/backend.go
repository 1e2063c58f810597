package workload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// backend is what the demo, lanes and fair workloads share: an engine on
// the embedded backend (a memstore and its transport), the queue the
// workload fills, and how it runs.
type backend struct {
	eng       *engine.Engine
	store     *memstore.Store
	transport *memstore.Transport
	queue     string
	// skew is the queue's skew, as created.
	skew time.Duration
	// workers is the number of concurrent worker invocations.
	workers int
	// timeout bounds the run.
	timeout time.Duration
	log     *slog.Logger
}

// backendOptions say how newBackend builds a backend.
type backendOptions struct {
	Queue   string
	Config  slot.Config
	Workers int
	Timeout time.Duration
	Logger  *slog.Logger
	// Mux holds the workload's handlers.
	Mux *target.Mux
	// Seed and Jitter are the transport's (memstore.TransportOptions).
	Seed   uint64
	Jitter time.Duration
	// Lead is the engine's (engine.Options).
	Lead time.Duration
	// State, if not nil, is the engine's state over the store: a wrapper
	// that records or slows its writes.
	State func(*memstore.Store) engine.State
	// Observer, if not nil, hears the engine's events.
	Observer engine.Observer
}

// newBackend builds a fresh embedded backend: an engine running o.Mux's
// handlers, and its queue.
func newBackend(ctx context.Context, o backendOptions) (backend, error) {
	store := memstore.New(memstore.Options{})
	transport := memstore.NewTransport(memstore.TransportOptions{Jitter: o.Jitter, Seed: o.Seed})
	var state engine.State = store
	if o.State != nil {
		state = o.State(store)
	}
	eng := engine.New(engine.Options{
		State: state, Transport: transport, Runner: &dispatch.Dispatcher{Mux: o.Mux}, Logger: o.Logger, Lead: o.Lead,
		Observer: o.Observer,
	})
	q, err := eng.CreateQueue(ctx, o.Queue, o.Config)
	if err != nil {
		return backend{}, err
	}
	return backend{eng: eng, store: store, transport: transport, queue: o.Queue, skew: q.Config.Skew,
		workers: o.Workers, timeout: o.Timeout, log: o.Logger}, nil
}

// run runs the workload: while produce enqueues, w.workers worker
// goroutines take deliveries from the transport, as that many Lambda
// invocations would, each under a free worker id (workerFrom), and the
// resume function runs once a minute (runEmbedded). Once produce returns
// without an error, run waits until every job of the queue is final, ctx
// is done or the timeout passes (jobs left then are unfinished, not an
// error). It returns produce's error, once every goroutine it started
// has returned.
func (w backend) run(ctx context.Context, produce func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	// The workers stop with the run, but carry no deadline: an embedded
	// worker is not a Lambda invocation with a time limit, and a deadline
	// would make Work hand back every job whose target timeout it cannot
	// fit before it.
	runCtx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	defer context.AfterFunc(ctx, stopWorkers)()

	// The workers: each delivery runs under a free worker id, so the ids
	// name the concurrent invocations.
	ids := make(chan string, w.workers)
	for i := range w.workers {
		ids <- fmt.Sprintf("w%d", i+1)
	}
	bg := runEmbedded(runCtx, w.eng, w.transport, w.workers, w.log, func(ctx context.Context, env job.Envelope) error {
		id := <-ids
		defer func() { ids <- id }()
		return w.eng.Work(context.WithValue(ctx, workerKey{}, id), env)
	})

	err := produce(ctx)
	if err == nil {
		err = waitDone(ctx, w.store, w.queue)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			err = nil // reported as unfinished jobs
		}
	}
	stopWorkers()
	bg.Wait()
	return err
}

// jobCounts is what a workload's accepted jobs came to, read back from
// the engine once the run ended.
type jobCounts struct {
	// Succeeded counts accepted jobs that ended succeeded; Unfinished
	// those that had not when the run ended (timeout or interrupt).
	Succeeded, Unfinished int
	// StartedTwice counts jobs whose handler ran more than once; Unstarted
	// accepted jobs whose handler never ran.
	StartedTwice, Unstarted int
	// Retickets is the sum of the jobs' re-ticket counts, as the engine
	// recorded them (job.Job.Retickets).
	Retickets int
}

// count reads each job of ids back from eng and counts it; ran is how
// many times each job's handler ran. each, if not nil, sees each job.
func (c *jobCounts) count(ctx context.Context, eng *engine.Engine, queue string, ids []string, ran map[string]int, each func(job.Job)) error {
	for _, id := range ids {
		j, err := eng.Job(ctx, job.Ref{Queue: queue, ID: id})
		if err != nil {
			return err
		}
		c.Retickets += j.Retickets
		if each != nil {
			each(j)
		}
		if j.Status == job.Succeeded {
			c.Succeeded++
		} else {
			c.Unfinished++
		}
		switch ran[id] {
		case 0:
			c.Unstarted++
		case 1:
		default:
			c.StartedTwice++
		}
	}
	return nil
}

// startLog holds the starts a workload's handler records.
type startLog struct {
	mu     sync.Mutex
	starts []timeline.Start
}

// add records s, then, under the same lock, calls then if not nil: the
// starts come one at a time.
func (l *startLog) add(s timeline.Start, then func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts = append(l.starts, s)
	if then != nil {
		then()
	}
}

// all returns the starts recorded so far.
func (l *startLog) all() []timeline.Start {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.starts
}

// callLog records when each job's worker last looked at the clock before
// it called the target (engine.EventStarted's Start.At): what the engine
// judged the start by, before the host ran the handler.
type callLog struct {
	mu    sync.Mutex
	calls map[string]time.Time
}

func (l *callLog) Observe(_ context.Context, ev engine.Event) {
	if ev.Kind != engine.EventStarted || ev.Start == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		l.calls = map[string]time.Time{}
	}
	l.calls[ev.Start.JobID] = ev.Start.At
}

// all returns the calls recorded so far, by job id.
func (l *callLog) all() map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// atCall returns a copy of starts timed by their worker's call (calls,
// by job id) instead of the handler's begin, where the call is known.
func atCall(starts []timeline.Start, calls map[string]time.Time) []timeline.Start {
	s := slices.Clone(starts)
	for i := range s {
		if at, ok := calls[s[i].JobID]; ok {
			s[i].At = at
		}
	}
	return s
}

// handlerStart is the start of job j whose handler began at at.
func handlerStart(ctx context.Context, j *api.Job, at time.Time) timeline.Start {
	return timeline.Start{Queue: j.Queue, Key: j.Key, Ticket: j.Ticket, SlotAt: j.SlotAt, JobID: j.ID,
		Worker: workerFrom(ctx), At: at, Gate: j.StartedAt, Retickets: j.Retickets}
}

// startsOf counts each job's starts.
func startsOf(starts []timeline.Start) map[string]int {
	ran := make(map[string]int, len(starts))
	for _, s := range starts {
		ran[s.JobID]++
	}
	return ran
}

// workerKey is the context key of the worker id.
type workerKey struct{}

func workerFrom(ctx context.Context) string {
	w, _ := ctx.Value(workerKey{}).(string)
	return w
}

// waitDone polls the store until every job of the queue is final. It polls
// seldom and copies nothing (memstore.AllFinal): each poll takes the
// store's lock, which the gate needs too.
func waitDone(ctx context.Context, store *memstore.Store, queue string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if store.AllFinal(queue) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// runEmbedded runs what AWS runs after deployment, on the embedded
// backend, until runCtx ends: workers taking the transport's messages
// through work (eng.Work, or a wrapper of it), and the resume function
// once a minute, as the schedule does. Wait on the group it returns.
func runEmbedded(runCtx context.Context, eng *engine.Engine, transport *memstore.Transport, workers int, log *slog.Logger,
	work func(context.Context, job.Envelope) error) *sync.WaitGroup {
	var bg sync.WaitGroup
	bg.Go(func() {
		err := transport.Run(runCtx, workers, func(ctx context.Context, env job.Envelope) error {
			err := work(ctx, env)
			if err != nil && runCtx.Err() == nil {
				log.WarnContext(ctx, "work failed; the message will be delivered again", "queue", env.Queue, "job_id", env.JobID, "error", err)
			}
			return err
		})
		if err != nil {
			log.Error("transport stopped", "error", err)
		}
	})
	bg.Go(func() {
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
				if _, err := eng.Resume(runCtx); err != nil && runCtx.Err() == nil {
					log.Error("resume", "error", err)
				}
			}
		}
	})
	return &bg
}
