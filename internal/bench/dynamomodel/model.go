package dynamomodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/memstore"
)

// Latency is the time one call takes end to end, from a Lambda in the
// region: a log-normal body with Median and P99, and a share Spike of
// calls that take about SpikeAt instead.
type Latency struct {
	Median, P99 time.Duration
	// Spike is the share of calls (0–1) that take SpikeAt, ±20 %.
	Spike   float64
	SpikeAt time.Duration
}

// AWS is DynamoDB's latency as slotq designs against it: 5 ms at the
// median, 15 ms at the p99, about 1 call in 1,000 near 100 ms.
var AWS = Latency{Median: 5 * time.Millisecond, P99: 15 * time.Millisecond, Spike: 0.001, SpikeAt: 100 * time.Millisecond}

// Options say how a Model behaves. The zero value is DynamoDB as AWS runs
// it (AWS's latency, 1,000 write and 3,000 read units a second a
// partition).
type Options struct {
	// Seed seeds the latencies and the SDK's backoff jitter.
	Seed uint64
	// Latency is each call's; zero: AWS. NoLatency turns it off.
	Latency   Latency
	NoLatency bool
	// WriteUnits and ReadUnits are what one partition takes a second;
	// zero: 1,000 and 3,000 (DynamoDB's per-partition ceiling).
	WriteUnits, ReadUnits float64
	// MaxAttempts is how many times a throttled call is sent in all, as
	// the SDK's standard retryer does; zero: retry.DefaultMaxAttempts.
	MaxAttempts int
}

// Model is an engine.State (and engine.ScheduleState): the embedded store
// behind DynamoDB's latencies and per-partition limits, metering what
// each call would cost on DynamoDB. See the package doc.
type Model struct {
	store   *memstore.Store
	opts    Options
	sigma   float64
	backoff *retry.ExponentialJitterBackoff

	// stateMu makes a stale form's check and the write it precedes one
	// step (see call.stale).
	stateMu sync.Mutex

	mu      sync.Mutex
	off     bool
	rnd     *rand.Rand
	buckets map[string]*bucket
	sizes   map[string]int
	units   Units
	// second and secondUnits count the hot partitions' write units in
	// the current wall-clock second, for Units.HotPeakWriteUnits.
	second      int64
	secondUnits map[string]float64
}

var (
	_ engine.State         = (*Model)(nil)
	_ engine.ScheduleState = (*Model)(nil)
)

// New returns a model of DynamoDB over store.
func New(store *memstore.Store, opts Options) *Model {
	if opts.Latency == (Latency{}) {
		opts.Latency = AWS
	}
	if opts.WriteUnits == 0 {
		opts.WriteUnits = 1000
	}
	if opts.ReadUnits == 0 {
		opts.ReadUnits = 3000
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = retry.DefaultMaxAttempts
	}
	m := &Model{
		store: store, opts: opts,
		rnd:     rand.New(rand.NewPCG(opts.Seed, 0x5107)),
		buckets: map[string]*bucket{}, sizes: map[string]int{}, secondUnits: map[string]float64{},
	}
	m.backoff = retry.NewExponentialJitterBackoff(20 * time.Second)
	// P99 = Median·e^(z99·σ) for a log-normal body.
	if l := opts.Latency; l.Median > 0 && l.P99 > l.Median {
		m.sigma = math.Log(float64(l.P99)/float64(l.Median)) / 2.3263
	}
	return m
}

// Units are what the calls cost on DynamoDB, counted since the model was
// made (or since Reset). Hot is the queues' own partitions (Q#queue: the
// state item the gate and the take write, the config item and the resume
// lease beside it); All is every partition, the hot ones included.
type Units struct {
	Hot, All Meter
	// HotPeakWriteUnits is the most write units one queue's partition
	// took in one wall-clock second.
	HotPeakWriteUnits float64
}

// Meter counts one set of partitions' calls.
type Meter struct {
	// Writes and Reads count calls (a query is one read); WriteUnits and
	// ReadUnits are what they were billed (a refused condition is billed
	// as the write it would have been; a strongly consistent read of 4 KB
	// is one unit, an eventually consistent one half).
	Writes, Reads         int
	WriteUnits, ReadUnits float64
	// Refused counts conditional writes whose condition failed.
	Refused int
	// Throttled counts calls refused for the partition's throughput, each
	// sent again by the SDK's retryer or, after its last attempt, failed.
	Throttled int
}

// Units returns what the calls have cost so far.
func (m *Model) Units() Units {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.units
	for _, n := range m.secondUnits {
		u.HotPeakWriteUnits = max(u.HotPeakWriteUnits, n)
	}
	return u
}

// Off makes every later call the embedded store's own: no latency, no
// limit, not billed. A workload reads its results back through it once
// its figures are taken.
func (m *Model) Off() {
	m.mu.Lock()
	m.off = true
	m.mu.Unlock()
}

// Reset starts the count afresh.
func (m *Model) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.units, m.secondUnits = Units{}, map[string]float64{}
}

// call is one DynamoDB request as a State method makes it.
type call struct {
	// part is the partition key (as internal/dynamostore writes it: Q#,
	// J#, L#, M#, W#, …) and item the item within it, for its size.
	part, item string
	write      bool
	// eventual marks a read that may be eventually consistent (an index
	// query): half the units.
	eventual bool
	// items is how many items the call writes or reads (a batch, a
	// query's page); 0: one.
	items int
	// spread marks a call whose items lie in partitions of their own (a
	// batch of new jobs): no one partition's throughput bounds it.
	spread bool
	// stale, if set, says whether internal/dynamostore's write would be
	// refused for a form picked from a stale read, as it lands (on the
	// store's state then): a write billed, and sent again after a round
	// trip (the refusal's answer and the new request).
	stale func() bool
}

// ErrThrottled is what a call returns once the SDK's retryer gave up on a
// partition's throughput: the ProvisionedThroughputExceededException
// internal/dynamostore would get from the SDK.
var ErrThrottled = &types.ProvisionedThroughputExceededException{Message: strPtr("partition throughput exceeded (dynamodb model)")}

func strPtr(s string) *string { return &s }

// do makes c: half the call's latency on the way there, the partition's
// throughput checked (and, when it is spent, the SDK's backoff and the
// call sent again), op applied atomically by the embedded store, the units
// billed, and the other half on the way back. size, if not nil, gives the
// item's size in bytes after op, for the next call's units.
func (m *Model) do(ctx context.Context, c call, op func() (int, error), size func() int) error {
	m.mu.Lock()
	off := m.off
	m.mu.Unlock()
	if off {
		_, err := op()
		return err
	}
	for attempt, resends := 1, 0; ; {
		there, back := m.latency()
		if err := clock.Sleep(ctx, there); err != nil {
			return err
		}
		units := m.unitsOf(c)
		if !c.spread && !m.admit(c, units) {
			if attempt >= m.opts.MaxAttempts {
				return fmt.Errorf("dynamodb model %s: %w", c.part, ErrThrottled)
			}
			d, _ := m.backoff.BackoffDelay(attempt, ErrThrottled)
			if err := clock.Sleep(ctx, back+d); err != nil {
				return err
			}
			attempt++
			continue
		}
		n, err, refusedStale := m.apply(c, op, resends)
		if refusedStale {
			m.bill(c, units, 1)
			resends++
			if err := clock.Sleep(ctx, back); err != nil {
				return err
			}
			continue
		}
		if refused(err) {
			n++
		}
		m.bill(c, units, n)
		if size != nil && err == nil {
			if n := size(); n > 0 {
				m.mu.Lock()
				m.sizes[c.part+"|"+c.item] = n
				m.mu.Unlock()
			}
		}
		if serr := clock.Sleep(ctx, back); serr != nil && err == nil {
			// The write landed; its answer was lost with the context.
			return serr
		}
		return err
	}
}

// maxResends bounds the writes sent again after a stale form's refusal,
// as internal/dynamostore's tries do.
const maxResends = 20

// apply applies op, unless c's form is stale on the state op would meet
// (refusedStale; then nothing is applied). The check and op are one
// atomic step among the model's calls.
func (m *Model) apply(c call, op func() (int, error), resends int) (n int, err error, refusedStale bool) {
	if c.stale == nil {
		n, err = op()
		return n, err, false
	}
	m.stateMu.Lock()
	defer m.stateMu.Unlock()
	if resends < maxResends && c.stale() {
		return 0, nil, true
	}
	n, err = op()
	return n, err, false
}

// refused reports whether err is a conditional write's failed condition,
// which DynamoDB bills as a write.
func refused(err error) bool {
	var ge *engine.GateError
	return errors.As(err, &ge) || errors.Is(err, engine.ErrConflict) || errors.Is(err, engine.ErrLeaseHeld) ||
		errors.Is(err, engine.ErrQueueExists) || errors.Is(err, engine.ErrLimitChanged) ||
		errors.Is(err, engine.ErrScheduleExists)
}

// latency draws one call's time, split into the way there and back.
func (m *Model) latency() (there, back time.Duration) {
	if m.opts.NoLatency {
		return 0, 0
	}
	l := m.opts.Latency
	m.mu.Lock()
	var d time.Duration
	if l.Spike > 0 && m.rnd.Float64() < l.Spike {
		d = time.Duration(float64(l.SpikeAt) * (0.8 + 0.4*m.rnd.Float64()))
	} else {
		d = time.Duration(float64(l.Median) * math.Exp(m.sigma*m.rnd.NormFloat64()))
	}
	m.mu.Unlock()
	return d / 2, d - d/2
}

// unitsOf is what c is billed: a write unit a KB written, a read unit per
// 4 KB read strongly (half eventually), at least one per item.
func (m *Model) unitsOf(c call) float64 {
	m.mu.Lock()
	size := m.sizes[c.part+"|"+c.item]
	m.mu.Unlock()
	n := max(c.items, 1)
	per := 1024.0
	if !c.write {
		per = 4096
	}
	u := float64(n) * math.Max(1, math.Ceil(float64(size)/per))
	if !c.write && c.eventual {
		u /= 2
	}
	return u
}

// admit takes c's units from its partition's budget, or reports that the
// partition is throttled (and counts it).
func (m *Model) admit(c call, units float64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	rate := m.opts.ReadUnits
	kind := "r"
	if c.write {
		rate, kind = m.opts.WriteUnits, "w"
	}
	b := m.buckets[kind+c.part]
	if b == nil {
		b = &bucket{level: rate, at: time.Now()}
		m.buckets[kind+c.part] = b
	}
	if b.take(time.Now(), rate, units) {
		return true
	}
	m.meters(c.part, func(mt *Meter) { mt.Throttled++ })
	return false
}

// bill counts a call that reached its partition.
func (m *Model) bill(c call, units float64, refused int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.meters(c.part, func(mt *Meter) {
		if c.write {
			mt.Writes++
			mt.WriteUnits += units
		} else {
			mt.Reads++
			mt.ReadUnits += units
		}
		mt.Refused += refused
	})
	if c.write && isHot(c.part) {
		m.rollSecond(time.Now())
		m.secondUnits[c.part] += units
	}
}

// rollSecond closes the wall-clock second before now, if now is in a new
// one, into the peak.
func (m *Model) rollSecond(now time.Time) {
	s := now.Unix()
	if s == m.second {
		return
	}
	for _, u := range m.secondUnits {
		m.units.HotPeakWriteUnits = max(m.units.HotPeakWriteUnits, u)
	}
	m.second, m.secondUnits = s, map[string]float64{}
}

// meters applies f to All and, for a hot partition, Hot. m.mu is held.
func (m *Model) meters(part string, f func(*Meter)) {
	f(&m.units.All)
	if isHot(part) {
		f(&m.units.Hot)
	}
}

func isHot(part string) bool { return strings.HasPrefix(part, "Q#") }

// bucket is one partition's throughput: a token bucket that fills at the
// partition's rate and holds one second of it.
type bucket struct {
	level float64
	at    time.Time
}

func (b *bucket) take(now time.Time, rate, units float64) bool {
	b.level = min(rate, b.level+rate*now.Sub(b.at).Seconds())
	b.at = now
	if b.level < units {
		return false
	}
	b.level -= units
	return true
}

// sizeOf is v's size as JSON: close enough to an item's size in DynamoDB
// (attribute names and values) to bill it in units.
func sizeOf(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}
