package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/slotq/slotq/internal/bench/dynamomodel"
	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// demoKind is the job kind the demo's handler runs.
const demoKind = "demo.tick"

// Config is one run of the demo workload (slotq demo, slotq bench). Zero
// fields are not defaults: the flags fill every field, from DefaultDemo or
// DefaultBench.
type Config struct {
	// Queue is the queue the producers enqueue onto.
	Queue string
	// Producers each enqueue Jobs jobs, in calls of 1 to Batch jobs with a
	// random gap of up to one Interval between calls.
	Producers, Jobs, Batch int
	// Workers is the number of concurrent worker invocations.
	Workers int
	// Interval is the queue's interval, unless Rate (with Burst) or
	// Window gives its limit in another form.
	Interval time.Duration
	Rate     api.Rate
	Burst    int
	Window   api.Rate
	// Keys spreads the jobs over that many keys (0: no keys), and
	// KeyRate (with KeyBurst) or KeyWindow gives each key a limit of its
	// own; KeyMaxRunning is how many jobs of a key run at once (0: no
	// cap, 1: one at a time).
	Keys          int
	KeyRate       api.Rate
	KeyBurst      int
	KeyWindow     api.Rate
	KeyMaxRunning int
	// IntervalSet says --interval was given: beside --rate or --window it
	// is a second form, refused.
	IntervalSet bool
	// WorkersSet says --workers was given; if not, a run on the model of
	// DynamoDB takes at least as many workers as the stack would run
	// (modelWorkers).
	WorkersSet bool
	// Skew is the queue's clock allowance: starts may come Interval−Skew
	// apart.
	Skew time.Duration
	// Jitter delays each delivery by a random extra in [0, Jitter).
	Jitter time.Duration
	// Seed seeds the producers' gaps and batch sizes and the transport's
	// jitter.
	Seed uint64
	// Timeout bounds the wait for all jobs to finish; 0 means twice the
	// ideal makespan plus 30s.
	Timeout time.Duration
	// Lead is the engine's Lead: how long before a start its worker goes
	// to the gate (0: slot.DefaultLead).
	Lead time.Duration
	// Stall, if set, stalls one worker once, halfway through the run: the
	// first read of the queue after the middle of the ideal makespan
	// sleeps that long (a worker descheduled as it wakes for its job).
	Stall time.Duration
	// SlowGates is the share of gate writes that take 20–50ms longer
	// (the store's latency tail), each applied at a random moment of it.
	SlowGates float64
	// Store is the state store the run uses: StoreEmbedded (the
	// default) or StoreModel, the embedded store behind DynamoDB's
	// latencies and limits (internal/bench/dynamomodel).
	Store string
	// Logger gets the engine's logs.
	Logger *slog.Logger
}

func (c Config) validate() error {
	switch {
	case c.Producers < 1:
		return errors.New("--producers must be at least 1")
	case c.Jobs < 1:
		return errors.New("--jobs must be at least 1")
	case c.Batch < 1 || c.Batch > job.MaxBatch:
		return fmt.Errorf("--batch must be between 1 and %d", job.MaxBatch)
	case c.Workers < 1:
		return errors.New("--workers must be at least 1")
	case c.Interval <= 0 && c.Rate.IsZero() && c.Window.IsZero():
		return errors.New("--interval must be greater than 0")
	case c.Burst != 0 && c.Rate.IsZero():
		return errors.New("--burst goes with --rate")
	case !c.Rate.IsZero() && !c.Window.IsZero():
		return errors.New("give one of --rate and --window")
	case c.IntervalSet && (!c.Rate.IsZero() || !c.Window.IsZero()):
		return errors.New("give one of --interval, --rate and --window: each is the queue's limit in one form")
	case c.Skew < 0 || c.Skew >= c.tick():
		return fmt.Errorf("--skew must be at least 0 and less than %s, the limit's average time between starts", c.tick())
	case c.Jitter < 0:
		return errors.New("--jitter must not be negative")
	case c.Timeout < 0:
		return errors.New("--timeout must not be negative")
	case c.Lead < 0:
		return errors.New("--lead must not be negative")
	case c.Stall < 0:
		return errors.New("--stall must not be negative")
	case c.SlowGates < 0 || c.SlowGates > 1:
		return errors.New("--slow-gates must be between 0 and 1")
	case c.Store != "" && c.Store != StoreEmbedded && c.Store != StoreModel:
		return fmt.Errorf("--store must be %s or %s", StoreEmbedded, StoreModel)
	case c.Keys < 0:
		return errors.New("--keys must not be negative")
	case c.Keys == 0 && (len(c.keyLimits()) > 0 || c.KeyBurst != 0):
		return errors.New("--key-rate, --key-burst and --key-window need --keys")
	case c.KeyBurst != 0 && c.KeyRate.IsZero():
		return errors.New("--key-burst goes with --key-rate")
	case !c.KeyRate.IsZero() && !c.KeyWindow.IsZero():
		return errors.New("give one of --key-rate and --key-window")
	case c.KeyMaxRunning < 0 || c.KeyMaxRunning > slot.MaxKeyRunning:
		return fmt.Errorf("--key-max-running must be 1 to %d jobs of a key at once, or 0 (no cap)", slot.MaxKeyRunning)
	case c.Keys > 0 && c.KeyMaxRunning == 0 && len(c.keyLimits()) == 0:
		return errors.New("--key-max-running 0 needs --key-rate or --key-window")
	}
	if err := c.queueConfig().WithDefaults().Validate(); err != nil {
		return fmt.Errorf("the queue's limit: %w", err)
	}
	return slot.ValidateName(c.Queue)
}

// queueConfig is the configuration of the run's queue: its limit in the
// form the flags gave, and its skew.
func (c Config) queueConfig() slot.Config {
	cfg := slot.Config{Skew: c.Skew}
	switch {
	case !c.Rate.IsZero():
		cfg.Rate, cfg.Burst = c.Rate, c.Burst
	case !c.Window.IsZero():
		cfg.Window = c.Window
	default:
		cfg.Interval = c.Interval
	}
	cfg.KeyLimits = c.keyLimits()
	if c.KeyMaxRunning == 0 && len(cfg.KeyLimits) > 0 {
		cfg.KeyMaxRunning = slot.NoKeyCap
	}
	return cfg
}

// keyLimits are the limit each key keeps, if --key-rate or --key-window
// gave one.
func (c Config) keyLimits() []api.Limit {
	switch {
	case !c.KeyRate.IsZero():
		return []api.Limit{{Rate: c.KeyRate, Burst: c.KeyBurst}}
	case !c.KeyWindow.IsZero():
		return []api.Limit{{Window: c.KeyWindow}}
	}
	return nil
}

// The state stores a workload runs on (--store).
const (
	StoreEmbedded = "embedded"
	StoreModel    = "dynamodb-model"
)

// modelLead is the lead on the model of DynamoDB when --lead is not given:
// a read of the queue, the gate and the claim at the model's p99 (15 ms
// each), with room to spare.
const modelLead = 50 * time.Millisecond

// lead is the engine's lead for the run: --lead, or on the model of
// DynamoDB modelLead.
func (c Config) lead() time.Duration {
	if c.Lead == 0 && c.Store == StoreModel {
		return modelLead
	}
	return c.Lead
}

// modelWorkers is how many workers run at once on the model of DynamoDB
// when --workers is not given: as many as the stack would run, one a
// message held from its delivery (lead before its start) through the
// gate's calls and its handler, at the limit's rate.
func (c Config) modelWorkers() int {
	hold := c.lead() + 150*time.Millisecond
	return int((hold+c.tick()-1)/c.tick()) + 8
}

// unitsPerStart is what a run's calls would cost on DynamoDB, per start:
// the `{"units": …}` line that ends `slotq demo --json` on the model.
// The hot fields are the queue's own partition (its state item, which
// every take and gate writes, and its config beside it); All is every
// partition together.
type unitsPerStart struct {
	Starts               int     `json:"starts"`
	HotWriteUnits        float64 `json:"hot_write_units"`
	HotReads             float64 `json:"hot_reads"`
	HotReadUnits         float64 `json:"hot_read_units"`
	RefusedConditions    float64 `json:"refused_conditions"`
	Throttled            float64 `json:"throttled"`
	HotPeakWriteUnitsSec float64 `json:"hot_peak_write_units_per_second"`
	All                  struct {
		WriteUnits        float64 `json:"write_units"`
		Writes            float64 `json:"writes"`
		Reads             float64 `json:"reads"`
		ReadUnits         float64 `json:"read_units"`
		RefusedConditions float64 `json:"refused_conditions"`
		Throttled         float64 `json:"throttled"`
	} `json:"all"`
}

func newUnitsPerStart(u dynamomodel.Units, starts int) unitsPerStart {
	per := func(x float64) float64 {
		if starts == 0 {
			return 0
		}
		return math.Round(1000*x/float64(starts)) / 1000
	}
	p := unitsPerStart{Starts: starts,
		HotWriteUnits: per(u.Hot.WriteUnits), HotReads: per(float64(u.Hot.Reads)), HotReadUnits: per(u.Hot.ReadUnits),
		RefusedConditions: per(float64(u.Hot.Refused)), Throttled: per(float64(u.Hot.Throttled)),
		HotPeakWriteUnitsSec: u.HotPeakWriteUnits,
	}
	p.All.WriteUnits, p.All.Writes = per(u.All.WriteUnits), per(float64(u.All.Writes))
	p.All.Reads, p.All.ReadUnits = per(float64(u.All.Reads)), per(u.All.ReadUnits)
	p.All.RefusedConditions, p.All.Throttled = per(float64(u.All.Refused)), per(float64(u.All.Throttled))
	return p
}

// limits are the run's queue's limits.
func (c Config) limits() slot.Limits { return c.queueConfig().LimitList() }

// tick is the average time between two starts the limit allows.
func (c Config) tick() time.Duration { return c.queueConfig().Tick() }

// total is the number of jobs the run enqueues.
func (c Config) total() int { return c.Producers * c.Jobs }

// ideal is the least time the run's starts can take: under the queue's
// limit, or, with keys of a limit of their own, under a key's for the
// jobs one key would get were they spread evenly (the busiest gets more).
func (c Config) ideal() time.Duration {
	d := timeline.Ideal(c.limits(), c.total())
	if ls := c.keyLimits(); len(ls) > 0 && c.Keys > 0 {
		d = max(d, timeline.Ideal(ls, (c.total()+c.Keys-1)/c.Keys))
	}
	return d
}

// demoResult is what a demo run saw.
type demoResult struct {
	// Begin is when the run began, before the first enqueue.
	Begin time.Time
	// Skew is the queue's skew: --skew, or the default when it is 0.
	Skew time.Duration
	// Starts holds one record per handler call, in the order they were
	// recorded.
	Starts []timeline.Start
	// Enqueued counts accepted jobs.
	Enqueued int
	// jobCounts is what the accepted jobs came to.
	jobCounts
	// Promised is each accepted job's slot_at as its enqueue answered it.
	Promised map[string]time.Time
	// Missed holds the jobs that gave a slot up because their worker came
	// late for it (job.SlotMissed in their history).
	Missed map[string]bool
	// Transport is what the embedded transport did.
	Transport memstore.TransportStats
	// Units is what the run's calls would cost on DynamoDB, when it ran
	// on the model of it (Store StoreModel); nil otherwise.
	Units *dynamomodel.Units
	// Calls is, by job id, when the job's worker last looked at the
	// clock before it called the handler (callLog).
	Calls map[string]time.Time
}

// demoPayload is what a demo job carries.
type demoPayload struct {
	Producer string `json:"producer"`
	N        int    `json:"n"`
}

// runDemo runs the demo workload on the embedded backend: producers
// enqueue concurrently through the engine while Workers worker goroutines
// take deliveries from the transport, as that many Lambda invocations
// would. It returns when every accepted job has finished, ctx is done, or
// the timeout passes; by then every goroutine it started has returned.
// onStart, if not nil, is called for each start as it happens, one call at
// a time; j is the job the handler got.
func runDemo(ctx context.Context, cfg Config, onStart func(s timeline.Start, j *api.Job)) (demoResult, error) {
	if err := cfg.validate(); err != nil {
		return demoResult{}, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2*cfg.ideal() + 30*time.Second
	}

	var starts startLog
	mux := target.NewMux()
	mux.HandleFunc(demoKind, func(ctx context.Context, j *api.Job) error {
		at := time.Now() // first: the start is when the handler begins
		var p demoPayload
		_ = json.Unmarshal(j.Payload, &p)
		s := handlerStart(ctx, j, at)
		s.Producer = p.Producer
		starts.add(s, func() {
			if onStart != nil {
				onStart(s, j)
			}
		})
		return nil
	})

	var (
		hiccups *hiccupState
		model   *dynamomodel.Model
		calls   callLog
	)
	w, err := newBackend(ctx, backendOptions{
		Queue: cfg.Queue, Config: cfg.queueConfig(), Workers: cfg.Workers, Timeout: cfg.Timeout, Logger: cfg.Logger,
		Mux: mux, Seed: cfg.Seed, Jitter: cfg.Jitter, Lead: cfg.lead(), Observer: &calls,
		State: func(store *memstore.Store) engine.State {
			var st engine.State = store
			if cfg.Store == StoreModel {
				model = dynamomodel.New(store, dynamomodel.Options{Seed: cfg.Seed})
				st = model
			}
			hiccups = &hiccupState{State: st, slowGates: cfg.SlowGates, rnd: rand.New(rand.NewPCG(cfg.Seed, 22))}
			if cfg.Stall > 0 || cfg.SlowGates > 0 {
				return hiccups
			}
			return st
		},
	})
	if err != nil {
		return demoResult{}, err
	}

	res := demoResult{Begin: time.Now(), Skew: w.skew}
	if cfg.Stall > 0 {
		hiccups.stallAt(res.Begin.Add(timeline.Ideal(cfg.limits(), cfg.total())/2), cfg.Stall)
	}
	var accepted []string
	err = w.run(ctx, func(ctx context.Context) error {
		var promised map[string]time.Time
		var err error
		accepted, promised, err = produce(ctx, w.eng, cfg)
		res.Enqueued, res.Promised = len(accepted), promised
		return err
	})

	res.Starts, res.Calls = starts.all(), calls.all()
	res.Transport = w.transport.Stats()
	if model != nil {
		u := model.Units()
		res.Units = &u
		model.Off() // what follows reads the results back
	}
	cerr := res.count(context.WithoutCancel(ctx), w.eng, cfg.Queue, accepted, startsOf(res.Starts), func(j job.Job) {
		for _, ev := range j.History {
			if ev.Kind == job.SlotMissed {
				if res.Missed == nil {
					res.Missed = map[string]bool{}
				}
				res.Missed[j.ID] = true
			}
		}
	})
	if err == nil {
		err = cerr
	}
	return res, err
}

// produce runs the producers and returns the ids of the accepted jobs and
// the slot_at each was promised.
func produce(ctx context.Context, eng *engine.Engine, cfg Config) ([]string, map[string]time.Time, error) {
	var (
		mu       sync.Mutex
		accepted []string
		promised = map[string]time.Time{}
		errs     []error
		wg       sync.WaitGroup
	)
	for p := range cfg.Producers {
		name := fmt.Sprintf("p%d", p+1)
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(p+1)))
		wg.Go(func() {
			for n := 0; n < cfg.Jobs; {
				k := min(1+rng.IntN(cfg.Batch), cfg.Jobs-n)
				req := job.EnqueueRequest{Queue: cfg.Queue}
				for i := range k {
					payload, _ := json.Marshal(demoPayload{Producer: name, N: n + i + 1})
					sp := job.Spec{Kind: demoKind, Payload: payload}
					if cfg.Keys > 0 {
						sp.Key = fmt.Sprintf("key%d", rng.IntN(cfg.Keys))
					}
					req.Jobs = append(req.Jobs, sp)
				}
				if k == 1 {
					req.Job, req.Jobs = &req.Jobs[0], nil
				}
				res, err := eng.Enqueue(ctx, req)
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("producer %s: %w", name, err))
					mu.Unlock()
					return
				}
				mu.Lock()
				for _, a := range res.Jobs {
					accepted = append(accepted, a.JobID)
					promised[a.JobID] = a.SlotAt
				}
				mu.Unlock()
				n += k
				if n < cfg.Jobs {
					gap := time.Duration(rng.Int64N(int64(cfg.tick())))
					select {
					case <-ctx.Done():
						return
					case <-time.After(gap):
					}
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return accepted, promised, nil // reported as unfinished jobs
	}
	return accepted, promised, errors.Join(errs...)
}

// hiccupState makes a run's state store hiccup as a production one does:
// one stalled worker (stallAt), and a share of slow gate writes.
type hiccupState struct {
	engine.State
	slowGates float64

	mu      sync.Mutex
	rnd     *rand.Rand
	stallOn time.Time
	stall   time.Duration
}

// stallAt makes the first read of a queue at or after on sleep d.
func (h *hiccupState) stallAt(on time.Time, d time.Duration) {
	h.mu.Lock()
	h.stallOn, h.stall = on, d
	h.mu.Unlock()
}

func (h *hiccupState) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	h.mu.Lock()
	var d time.Duration
	if !h.stallOn.IsZero() && !time.Now().Before(h.stallOn) {
		d, h.stallOn = h.stall, time.Time{}
	}
	h.mu.Unlock()
	time.Sleep(d)
	return h.State.GetQueue(ctx, name)
}

func (h *hiccupState) Gate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	var before, after time.Duration
	h.mu.Lock()
	if h.slowGates > 0 && h.rnd.Float64() < h.slowGates {
		d := 20*time.Millisecond + time.Duration(h.rnd.Int64N(int64(30*time.Millisecond)))
		before = time.Duration(h.rnd.Int64N(int64(d)))
		after = d - before
	}
	h.mu.Unlock()
	time.Sleep(before)
	st, err := h.State.Gate(ctx, r)
	time.Sleep(after)
	return st, err
}
