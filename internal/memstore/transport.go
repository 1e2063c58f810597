package memstore

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

var _ engine.Transport = (*Transport)(nil)

// Transport defaults.
const (
	// DefaultMaxDelay is the longest delay Send accepts, as on SQS.
	DefaultMaxDelay = 15 * time.Minute
	// DefaultVisibilityTimeout is how long a message whose handler failed
	// stays hidden before it is delivered again, as on SQS.
	DefaultVisibilityTimeout = 30 * time.Second
)

// ErrRunning is Run's answer when another Run of the same Transport has not
// returned yet.
var ErrRunning = errors.New("memstore: transport already running")

// TransportOptions configures a Transport. The zero value is a faithful,
// fault-free transport with exact delays.
type TransportOptions struct {
	// MaxDelay is the longest delay Send accepts. Default 15 minutes.
	MaxDelay time.Duration
	// WholeSeconds rounds each delay down to whole seconds, as SQS's
	// DelaySeconds does. Default false: delays are exact.
	WholeSeconds bool
	// VisibilityTimeout is how long after it was received a message whose
	// handler returned an error is delivered again. Default 30s.
	VisibilityTimeout time.Duration
	// MaxReceiveCount is the redrive policy of the pull side (Receive): a
	// message received this many times is moved to the dead-letter list
	// (DeadLetters) on its next receive, as SQS does. Default 0: never.
	MaxReceiveCount int

	// Jitter delays each delivery by a random extra in [0, Jitter).
	// Default 0.
	Jitter time.Duration
	// DuplicateRate is the probability that a sent message is delivered
	// twice; the copy gets its own jitter. Default 0.
	DuplicateRate float64
	// DropRate is the probability that a sent message is silently lost:
	// Send reports success but it is never delivered. Default 0.
	DropRate float64
	// SendFailure, if set, is asked about each message Send gets; a
	// non-nil answer fails that message, which Send reports in an
	// *engine.SendError. It is called without the transport's lock, maybe
	// from several Send calls at once. Default nil: nothing fails.
	SendFailure func(job.Envelope) error
	// Rand draws jitter, duplicates and drops. Default: a generator seeded
	// with Seed.
	Rand *rand.Rand
	// Seed seeds the default Rand. Default 0, so runs repeat.
	Seed uint64
}

// TransportStats counts what a Transport did. Each count only grows.
type TransportStats struct {
	// SendCalls is the number of Send calls.
	SendCalls int64
	// Sent is the number of messages Send accepted (dropped ones
	// included, duplicates not).
	Sent int64
	// Failed is the number of messages SendFailure or a bad delay refused.
	Failed int64
	// Dropped is the number of accepted messages lost by DropRate.
	Dropped int64
	// Duplicated is the number of extra copies added by DuplicateRate.
	Duplicated int64
	// Delivered is the number of handler calls.
	Delivered int64
	// Redelivered is the number of deliveries scheduled again because the
	// handler returned an error.
	Redelivered int64
}

// Transport is an engine.Transport held in memory, with a consumer (Run)
// that plays SQS and the worker's event source. It waits only on timers and
// channels, so it works inside a testing/synctest bubble; there, create it,
// Send and Run all inside the bubble.
type Transport struct {
	opts TransportOptions

	sendCalls, sent, failed, dropped, duplicated, delivered, redelivered atomic.Int64

	mu       sync.Mutex
	rnd      *rand.Rand
	waiting  messageHeap
	inFlight int
	seq      uint64
	wake     chan struct{} // set while Run runs
	pull     pullState     // Receive's leases and dead letters (queue.go)
}

// NewTransport returns a Transport with opts' defaults applied.
func NewTransport(opts TransportOptions) *Transport {
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	if opts.VisibilityTimeout <= 0 {
		opts.VisibilityTimeout = DefaultVisibilityTimeout
	}
	rnd := opts.Rand
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	}
	return &Transport{opts: opts, rnd: rnd}
}

// MaxDelay is the longest delay Send accepts.
func (t *Transport) MaxDelay() time.Duration { return t.opts.MaxDelay }

// Send schedules each message for delivery after its delay (rounded down to
// whole seconds with WholeSeconds). A message with a negative delay or one
// over MaxDelay, or one SendFailure refuses, is not sent; Send then returns
// an *engine.SendError naming those, and the others are sent.
func (t *Transport) Send(ctx context.Context, msgs []engine.Message) error {
	t.sendCalls.Add(1)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	var failed map[int]error
	for i, m := range msgs {
		var err error
		switch {
		case m.Delay < 0 || m.Delay > t.opts.MaxDelay:
			err = fmt.Errorf("delay %s outside [0, %s]", m.Delay, t.opts.MaxDelay)
		case t.opts.SendFailure != nil:
			err = t.opts.SendFailure(m.Envelope)
		}
		if err != nil {
			if failed == nil {
				failed = make(map[int]error)
			}
			failed[i] = err
		}
	}
	now := time.Now()
	t.mu.Lock()
	for i, m := range msgs {
		if _, ok := failed[i]; ok {
			continue
		}
		t.sent.Add(1)
		if t.opts.DropRate > 0 && t.rnd.Float64() < t.opts.DropRate {
			t.dropped.Add(1)
			continue
		}
		delay := m.Delay
		if t.opts.WholeSeconds {
			delay = delay.Truncate(time.Second)
		}
		env := copyEnvelope(m.Envelope)
		t.pushLocked(env, now.Add(delay+t.jitterLocked())).sent = now
		if t.opts.DuplicateRate > 0 && t.rnd.Float64() < t.opts.DuplicateRate {
			t.duplicated.Add(1)
			t.pushLocked(copyEnvelope(env), now.Add(delay+t.jitterLocked())).sent = now
		}
	}
	t.mu.Unlock()
	if failed != nil {
		t.failed.Add(int64(len(failed)))
		return &engine.SendError{Failed: failed}
	}
	return nil
}

// Pending is the number of messages sent and not yet handled successfully:
// those waiting for their time and those a handler is working on.
func (t *Transport) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.waiting) + t.inFlight
}

// Stats returns the transport's counters.
func (t *Transport) Stats() TransportStats {
	return TransportStats{
		SendCalls:   t.sendCalls.Load(),
		Sent:        t.sent.Load(),
		Failed:      t.failed.Load(),
		Dropped:     t.dropped.Load(),
		Duplicated:  t.duplicated.Load(),
		Delivered:   t.delivered.Load(),
		Redelivered: t.redelivered.Load(),
	}
}

// Run delivers due messages to workers goroutines that call handle, until
// ctx is done; then it waits for the handlers running and returns nil. A
// message whose handler returns an error is delivered again
// VisibilityTimeout after it was received. Messages not delivered when Run
// returns stay pending for the next Run. Only one Run may be active at a
// time (ErrRunning).
func (t *Transport) Run(ctx context.Context, workers int, handle func(context.Context, job.Envelope) error) error {
	if workers < 1 {
		return fmt.Errorf("memstore: run with %d workers; want at least 1", workers)
	}
	wake := make(chan struct{}, 1)
	t.mu.Lock()
	if t.wake != nil {
		t.mu.Unlock()
		return ErrRunning
	}
	t.wake = wake
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.wake = nil
		t.mu.Unlock()
	}()

	work := make(chan *message)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for m := range work {
				t.deliver(ctx, m, handle)
			}
		})
	}
	t.dispatch(ctx, wake, work)
	close(work)
	wg.Wait()
	return nil
}

// dispatch hands each message to a worker when it falls due, until ctx is
// done. A message is in flight from the moment it leaves the heap.
func (t *Transport) dispatch(ctx context.Context, wake <-chan struct{}, work chan<- *message) {
	timer := time.NewTimer(0)
	timer.Stop()
	defer timer.Stop()
	for {
		t.mu.Lock()
		var next *message
		var wait time.Duration
		if len(t.waiting) > 0 {
			wait = time.Until(t.waiting[0].due)
			if wait <= 0 {
				next = heap.Pop(&t.waiting).(*message)
				t.inFlight++
			}
		}
		t.mu.Unlock()

		if next != nil {
			select {
			case work <- next:
				continue
			case <-ctx.Done():
				t.mu.Lock()
				t.inFlight--
				heap.Push(&t.waiting, next)
				t.mu.Unlock()
				return
			}
		}

		var fire <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-fire:
		}
	}
}

func (t *Transport) deliver(ctx context.Context, m *message, handle func(context.Context, job.Envelope) error) {
	received := time.Now()
	t.delivered.Add(1)
	err := handle(ctx, copyEnvelope(m.env))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
	if err == nil {
		return
	}
	t.redelivered.Add(1)
	due := received.Add(t.opts.VisibilityTimeout)
	if now := time.Now(); due.Before(now) {
		due = now
	}
	t.pushLocked(m.env, due.Add(t.jitterLocked()))
}

// pushLocked queues env for due and wakes the dispatcher, which may be
// waiting for a later message.
func (t *Transport) pushLocked(env job.Envelope, due time.Time) *message {
	t.seq++
	m := &message{env: env, due: due, seq: t.seq}
	heap.Push(&t.waiting, m)
	if t.wake != nil {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
	return m
}

func (t *Transport) jitterLocked() time.Duration {
	if t.opts.Jitter <= 0 {
		return 0
	}
	return time.Duration(t.rnd.Int64N(int64(t.opts.Jitter)))
}

func copyEnvelope(e job.Envelope) job.Envelope {
	e.Payload = slices.Clone(e.Payload)
	return e
}

// message is an envelope waiting for its delivery time; seq keeps messages
// due at the same time in send order.
type message struct {
	env job.Envelope
	due time.Time
	seq uint64
	// Set by Receive (queue.go): the message's id, how often it was
	// received, and when it was sent and first received.
	id            string
	receives      int
	sent, firstRx time.Time
}

type messageHeap []*message

func (h messageHeap) Len() int { return len(h) }
func (h messageHeap) Less(i, j int) bool {
	if c := h[i].due.Compare(h[j].due); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}
func (h messageHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *messageHeap) Push(x any)   { *h = append(*h, x.(*message)) }
func (h *messageHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return m
}
