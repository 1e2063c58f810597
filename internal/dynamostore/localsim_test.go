package dynamostore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
)

// localSim is the DynamoDB Local setup the store's simulations share: a
// client on the test binary's DynamoDB Local with the SDK's own retryer
// on short waits (fastRetries), a table of the test's own, the store on
// it, memstore's transport (with the duplicate deliveries, delays and
// visibility timeout the test asks for), and what works it in the
// background — workers into an engine's Work, the resume function on a
// ticker — until stop, or the end of the test.
//
// A test builds its engines itself, over the store or over a wrapper of
// it (or of api) that records or injects what the test is about.
type localSim struct {
	api   *dynamodb.Client
	table string
	store *dynamostore.Store
	tr    *memstore.Transport

	bg   context.Context
	wg   sync.WaitGroup
	stop func() // ends the background and waits for it; again, it does nothing
}

func newLocalSim(t testing.TB, o memstore.TransportOptions) *localSim {
	t.Helper()
	api := newClient(t, nil, fastRetries)
	table := newTable(t, api)
	s := &localSim{api: api, table: table, store: dynamostore.New(api, table, dynamostore.Options{}), tr: memstore.NewTransport(o)}
	bg, cancel := context.WithCancel(context.Background())
	var once sync.Once
	s.bg, s.stop = bg, func() { once.Do(func() { cancel(); s.wg.Wait() }) }
	t.Cleanup(s.stop)
	return s
}

// work runs n of the transport's workers into eng.Work. onErr, if set,
// hears the errors of deliveries the stop did not end.
func (s *localSim) work(n int, eng *engine.Engine, onErr func(job.Envelope, error)) {
	s.wg.Go(func() {
		_ = s.tr.Run(s.bg, n, func(ctx context.Context, env job.Envelope) error {
			err := eng.Work(ctx, env)
			if err != nil && onErr != nil && ctx.Err() == nil {
				onErr(env, err)
			}
			return err
		})
	})
}

// resumeEvery runs eng.Resume every d, as the resume function's schedule
// does. onErr, if set, hears its errors before the stop.
func (s *localSim) resumeEvery(d time.Duration, eng *engine.Engine, onErr func(error)) {
	s.wg.Go(func() {
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-s.bg.Done():
				return
			case <-tick.C:
			}
			if _, err := eng.Resume(s.bg); err != nil && onErr != nil && s.bg.Err() == nil {
				onErr(err)
			}
		}
	})
}
