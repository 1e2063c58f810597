package esm_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/internal/dev/motoserver"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/local/esm"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/sqstransport"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A queue under test: the mapping's Queue, a way to send to it and to see
// its dead letters.
type testQueue struct {
	esm.Queue
	send func(t *testing.T, ids ...string)
	dead func(t *testing.T) []string
}

const (
	visibility = time.Second // SQS counts whole seconds
	maxRx      = sqstransport.MaxReceiveCount
)

func envelope(id string) job.Envelope {
	return job.Envelope{V: job.EnvelopeVersion, Queue: "q", JobID: id, Ticket: 1, Attempt: 1, SlotAt: time.Now(), Kind: "echo"}
}

func memoryQueue(t *testing.T) testQueue {
	tr := memstore.NewTransport(memstore.TransportOptions{VisibilityTimeout: visibility, MaxReceiveCount: maxRx})
	return testQueue{
		Queue: esm.NewMemory(tr, ""),
		send: func(t *testing.T, ids ...string) {
			for _, id := range ids {
				if err := tr.Send(context.Background(), []engine.Message{{Envelope: envelope(id)}}); err != nil {
					t.Fatal(err)
				}
			}
		},
		dead: func(t *testing.T) []string {
			var ids []string
			for _, e := range tr.DeadLetters() {
				ids = append(ids, e.JobID)
			}
			return ids
		},
	}
}

var seq atomic.Int64

func sqsQueue(t *testing.T) testQueue {
	motoserver.Require(t)
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	name := fmt.Sprintf("%.60s-%d", regexp.MustCompile(`[^A-Za-z0-9_-]`).ReplaceAllString(t.Name(), "-"), seq.Add(1))
	url, dlq, err := sqstransport.CreateQueues(t.Context(), client, name, visibility)
	if err != nil {
		t.Fatal(err)
	}
	tr := sqstransport.New(client, url, sqstransport.Options{})
	return testQueue{
		Queue: esm.NewSQS(client, url),
		send: func(t *testing.T, ids ...string) {
			var msgs []engine.Message
			for _, id := range ids {
				msgs = append(msgs, engine.Message{Envelope: envelope(id)})
			}
			if err := tr.Send(context.Background(), msgs); err != nil {
				t.Fatal(err)
			}
		},
		dead: func(t *testing.T) []string {
			var ids []string
			err := sqstransport.New(client, dlq, sqstransport.Options{}).Receive(ctxFor(t, 1500*time.Millisecond), sqstransport.ReceiveOptions{WaitTime: time.Second},
				func(_ context.Context, batch []events.SQSMessage) events.SQSEventResponse {
					for _, m := range batch {
						env, _ := sqstransport.EnvelopeOf(m)
						ids = append(ids, env.JobID)
					}
					return events.SQSEventResponse{}
				})
			if err != nil {
				t.Fatal(err)
			}
			return ids
		},
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// eachQueue runs f on the embedded queue and on SQS (moto), at once.
func eachQueue(t *testing.T, f func(t *testing.T, q testQueue)) {
	// Made here: moto's environment is set on t, which a parallel
	// subtest may not do.
	qs := map[string]testQueue{"memory": memoryQueue(t), "sqs": sqsQueue(t)}
	for name, q := range qs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, q)
		})
	}
}

// receipt is one delivery the function saw.
type receipt struct {
	id       string
	at       time.Time
	receives int
	// firstRx is when the queue first handed the message out
	// (ApproximateFirstReceiveTimestamp, in ms): the visibility timeout
	// counts from a receive, which comes before the function sees the
	// batch by however long a loaded host takes.
	firstRx time.Time
}

// firstReceive reads m's ApproximateFirstReceiveTimestamp.
func firstReceive(m events.SQSMessage) time.Time {
	ms, _ := strconv.ParseInt(m.Attributes["ApproximateFirstReceiveTimestamp"], 10, 64)
	return time.UnixMilli(ms)
}

// recorder is a function that records its deliveries and fails the
// messages fail says to fail.
type recorder struct {
	mu   sync.Mutex
	seen []receipt
	fail func(id string, receives int) bool
}

func (r *recorder) invoke(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range ev.Records {
		env, err := sqstransport.EnvelopeOf(m)
		if err != nil {
			return resp, err
		}
		n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
		r.seen = append(r.seen, receipt{env.JobID, time.Now(), n, firstReceive(m)})
		if r.fail(env.JobID, n) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp, nil
}

func (r *recorder) receipts(id string) []receipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []receipt
	for _, s := range r.seen {
		if s.id == id {
			out = append(out, s)
		}
	}
	return out
}

// runUntil runs run (a mapping's or a schedule's Run) until cond holds,
// waited for as testenv.WaitFor does, then stops it and waits for it to
// return.
func runUntil(t *testing.T, run func(context.Context) error, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	testenv.WaitFor(t, what, cond)
}

// deleted reports whether m has deleted n messages: each was delivered
// and will not come back.
func deleted(m *esm.Mapping, n int64) func() bool {
	return func() bool { return m.Stats().Deleted >= n }
}

// A partial batch response deletes exactly the messages it does not
// list; the listed ones come back, after the visibility timeout.
func TestPartialBatchFailure(t *testing.T) {
	eachQueue(t, func(t *testing.T, q testQueue) {
		q.send(t, "a", "b", "c", "d", "e")
		r := &recorder{fail: func(id string, n int) bool { return (id == "b" || id == "d") && n == 1 }}
		m := &esm.Mapping{Queue: q, Invoke: r.invoke, Config: esm.Config{BatchSize: 10, ReportBatchItemFailures: true, Concurrency: 1, PollWait: 200 * time.Millisecond}}
		runUntil(t, m.Run, "the 5 messages deleted", deleted(m, 5))
		for _, id := range []string{"a", "c", "e"} {
			if got := r.receipts(id); len(got) != 1 {
				t.Errorf("%s delivered %d times, want once (deleted after its success)", id, len(got))
			}
		}
		for _, id := range []string{"b", "d"} {
			got := r.receipts(id)
			if len(got) != 2 {
				t.Fatalf("%s delivered %d times, want twice (failed once)", id, len(got))
			}
			if gap := got[1].at.Sub(got[1].firstRx); gap < visibility-50*time.Millisecond {
				t.Errorf("%s came back after %v, before the visibility timeout %v", id, gap, visibility)
			}
			if got[1].receives != 2 {
				t.Errorf("%s: ApproximateReceiveCount %d on its second delivery", id, got[1].receives)
			}
		}
		if s := m.Stats(); s.Deleted != 5 || s.Returned != 2 {
			t.Errorf("stats %+v, want 5 deleted, 2 returned", s)
		}
	})
}

// A message that fails every time goes to the dead-letter queue after
// maxReceiveCount receives, and is delivered no more.
func TestRedrive(t *testing.T) {
	eachQueue(t, func(t *testing.T, q testQueue) {
		a, err := q.Attributes(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if a.MaxReceiveCount != maxRx || a.VisibilityTimeout != visibility || a.DeadLetterARN == "" {
			t.Fatalf("attributes %+v", a)
		}
		q.send(t, "poison", "fine")
		r := &recorder{fail: func(id string, _ int) bool { return id == "poison" }}
		m := &esm.Mapping{Queue: q, Invoke: r.invoke, Config: esm.Config{ReportBatchItemFailures: true, Concurrency: 2, PollWait: 200 * time.Millisecond}}
		var dead []string
		runUntil(t, m.Run, "poison on the dead-letter queue", func() bool {
			if len(r.receipts("poison")) < maxRx {
				return false
			}
			dead = q.dead(t)
			return len(dead) > 0
		})
		if got := r.receipts("poison"); len(got) != maxRx {
			t.Errorf("poison delivered %d times, want %d (maxReceiveCount)", len(got), maxRx)
		}
		// Deleted after its success: once, or (SQS is at least once, and
		// a loaded moto may answer the delete after the visibility
		// timeout) a few times, but never kept until the dead-letter queue.
		if got := r.receipts("fine"); len(got) < 1 || len(got) >= maxRx {
			t.Errorf("fine delivered %d times, want at least once and fewer than %d", len(got), maxRx)
		}
		if !slices.Equal(dead, []string{"poison"}) {
			t.Errorf("dead letters %v, want [poison]", dead)
		}
	})
}

// A function error, or a response naming a message not in the batch,
// fails the whole batch: nothing is deleted, all of it comes back after
// the visibility timeout and not before.
func TestWholeBatchFails(t *testing.T) {
	for name, bad := range map[string]func(ev events.SQSEvent) (events.SQSEventResponse, error){
		"function error": func(events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, errors.New("boom")
		},
		"unknown identifier": func(events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "nope"}}}, nil
		},
		"empty identifier": func(events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{}}}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			q := memoryQueue(t)
			q.send(t, "a", "b", "c")
			var mu sync.Mutex
			var calls, firstRx []time.Time
			var sizes []int
			m := &esm.Mapping{Queue: q, Config: esm.Config{ReportBatchItemFailures: true, Concurrency: 1, PollWait: 100 * time.Millisecond},
				Invoke: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, time.Now())
					firstRx = append(firstRx, firstReceive(ev.Records[0]))
					sizes = append(sizes, len(ev.Records))
					if len(calls) == 1 {
						return bad(ev)
					}
					return events.SQSEventResponse{}, nil
				}}
			runUntil(t, m.Run, "the batch delivered again and deleted", deleted(m, 3))
			mu.Lock()
			defer mu.Unlock()
			if len(calls) != 2 || !slices.Equal(sizes, []int{3, 3}) {
				t.Fatalf("batches of %v, want [3 3]: the failed batch whole again", sizes)
			}
			if gap := calls[1].Sub(firstRx[1]); gap < visibility-20*time.Millisecond {
				t.Errorf("the batch came back after %v, before the visibility timeout", gap)
			}
		})
	}
}

// Without ReportBatchItemFailures a successful invocation deletes the
// whole batch, whatever it answers.
func TestNoReportDeletesAll(t *testing.T) {
	q := memoryQueue(t)
	q.send(t, "a", "b")
	r := &recorder{fail: func(string, int) bool { return true }}
	m := &esm.Mapping{Queue: q, Invoke: r.invoke, Config: esm.Config{Concurrency: 1, PollWait: 100 * time.Millisecond}}
	runUntil(t, m.Run, "both messages deleted", deleted(m, 2))
	if len(r.receipts("a")) != 1 || len(r.receipts("b")) != 1 {
		t.Errorf("deliveries %v, want each once", r.seen)
	}
}

// Batches run at once, up to Concurrency; BatchSize bounds each, and a
// batching window gathers messages sent a little apart into one batch.
func TestConcurrencyAndBatching(t *testing.T) {
	t.Run("concurrency", func(t *testing.T) {
		q := memoryQueue(t)
		var ids []string
		for i := range 6 {
			ids = append(ids, fmt.Sprint(i))
		}
		q.send(t, ids...)
		// Each invocation holds its batch until three run at once (or
		// for testenv.Patience, if they never do).
		var inFlight, most atomic.Int32
		three := make(chan struct{})
		var once sync.Once
		m := &esm.Mapping{Queue: q, Config: esm.Config{BatchSize: 2, Concurrency: 3, PollWait: 100 * time.Millisecond},
			Invoke: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				if len(ev.Records) > 2 {
					t.Errorf("batch of %d, over BatchSize 2", len(ev.Records))
				}
				n := inFlight.Add(1)
				for o := most.Load(); n > o && !most.CompareAndSwap(o, n); o = most.Load() {
				}
				if n == 3 {
					once.Do(func() { close(three) })
				}
				select {
				case <-three:
				case <-time.After(testenv.Patience):
				}
				inFlight.Add(-1)
				return events.SQSEventResponse{}, nil
			}}
		runUntil(t, m.Run, "the 6 messages deleted", deleted(m, 6))
		if most.Load() != 3 {
			t.Errorf("at most %d invocations at once, want 3", most.Load())
		}
	})
	t.Run("window", func(t *testing.T) {
		q := memoryQueue(t)
		var sizes []int
		var mu sync.Mutex
		m := &esm.Mapping{Queue: q, Config: esm.Config{BatchSize: 10, BatchingWindow: 300 * time.Millisecond, Concurrency: 1, PollWait: 100 * time.Millisecond},
			Invoke: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				mu.Lock()
				sizes = append(sizes, len(ev.Records))
				mu.Unlock()
				return events.SQSEventResponse{}, nil
			}}
		go func() {
			for _, id := range []string{"a", "b", "c"} {
				q.send(t, id)
				time.Sleep(50 * time.Millisecond)
			}
		}()
		runUntil(t, m.Run, "the 3 messages delivered", deleted(m, 3))
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(sizes, []int{3}) {
			t.Errorf("batches %v, want one of 3 within the window", sizes)
		}
	})
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"rate(1 minute)": time.Minute, "rate(5 minutes)": 5 * time.Minute, "rate(2 hours)": 2 * time.Hour, "rate(1 day)": 24 * time.Hour,
	} {
		if got, err := esm.ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"cron(0 * * * ? *)", "rate(0 minutes)", "rate(1 fortnight)", "rate(minute)"} {
		if _, err := esm.ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) accepted", in)
		}
	}
}

// The schedule fires at once and then every period with its input, and
// retries a failure up to Retries times.
func TestSchedule(t *testing.T) {
	var mu sync.Mutex
	var got []string
	fails := 2
	s := &esm.Schedule{Every: 300 * time.Millisecond, Input: []byte(`{"source":"slotq.schedule"}`), Retries: 2,
		Invoke: func(_ context.Context, in []byte) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, string(in))
			if fails > 0 {
				fails--
				return errors.New("boom")
			}
			return nil
		}}
	// Fails twice at once (retries after 1s would pass the period: the
	// backoff is capped at it), succeeds on the second retry, then ticks.
	runUntil(t, s.Run, "4 invocations", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 4
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 4 || got[0] != `{"source":"slotq.schedule"}` {
		t.Errorf("invocations %v: want 3 for the first tick (two retries) and more after", got)
	}
}
