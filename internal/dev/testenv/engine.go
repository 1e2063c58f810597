package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
)

// NewEngine returns engine.New(o), with o's State and Transport the
// embedded backend's (memstore) where o leaves them out: the set-up most
// tests of an engine, a handler or a store begin with.
func NewEngine(t testing.TB, o engine.Options) *engine.Engine {
	t.Helper()
	if o.State == nil {
		o.State = memstore.New(memstore.Options{})
	}
	if o.Transport == nil {
		o.Transport = memstore.NewTransport(memstore.TransportOptions{})
	}
	return engine.New(o)
}

// RunWorkers runs n of tr's workers into eng.Work until the test ends,
// and waits for them to return before the test's other cleanups (those
// registered earlier, such as a table's deletion) run.
func RunWorkers(t testing.TB, tr *memstore.Transport, n int, eng *engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = tr.Run(ctx, n, eng.Work)
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// Written is everything a call could have written on the embedded
// backend: queues (with their tickets), jobs and messages. A test of a
// refused call compares it before and after.
type Written struct {
	Queues []engine.Queue
	Jobs   []job.Job
	// Sent counts the messages sent, or tried.
	Sent int64
}

// Contents reads what st and tr hold.
func Contents(st *memstore.Store, tr *memstore.Transport) Written {
	qs, js := st.Contents()
	return Written{Queues: qs, Jobs: js, Sent: tr.Stats().Sent + tr.Stats().Failed}
}

// RefuseOnce returns a memstore.TransportOptions.SendFailure that fails
// the first message of each job whose id ends in a number n with
// n%every == 0 ("j0013" for 13), as SQS fails some entries of a
// SendMessageBatch and sends the others, and refused, which counts the
// jobs it failed so far.
func RefuseOnce(every int) (refuse func(job.Envelope) error, refused func() int) {
	var mu sync.Mutex
	seen := map[string]bool{}
	refuse = func(env job.Envelope) error {
		var n int
		if _, err := fmt.Sscanf(env.JobID[len(strings.TrimRight(env.JobID, "0123456789")):], "%d", &n); err != nil || n%every != 0 {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if k := env.Queue + "/" + env.JobID; !seen[k] {
			seen[k] = true
			return errors.New("InternalError: injected failed entry")
		}
		return nil
	}
	refused = func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	return refuse, refused
}
