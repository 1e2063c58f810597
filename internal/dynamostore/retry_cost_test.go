package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/awsmeter"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// TestRetryTakesFromAFreshState: on DynamoDB Local, jobs enqueued one a
// call whose first attempt fails each take a new ticket for their retry
// from the queue as it is then, not as their gate saw it before the
// attempt: no write on the queue's state is refused, and the state takes
// one write per enqueue and one per retry, the retries booked in line
// and started by a read. A retry that took from the gate's state was
// refused once each (a write billed for nothing) and, scheduled off the
// line, turned the queue gated, so that every start after it wrote the
// gate.
func TestRetryTakesFromAFreshState(t *testing.T) {
	st, m, tr, eng := meteredWorker(t, runFunc(func(_ context.Context, j *job.Job, _ slot.Config) error {
		if j.Attempt == 1 {
			return errors.New("first attempt fails on purpose")
		}
		return nil
	}))
	const n, rounds = 3, 5
	for round := range rounds {
		queue := fmt.Sprintf("retried-%d", round)
		if _, err := eng.CreateQueue(t.Context(), queue, slot.Config{Interval: time.Second, Skew: 900 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		before := m.Counts()
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("j%d", i)
			spec := job.Spec{ID: ids[i], Kind: "sim"}
			if _, err := eng.Enqueue(t.Context(), job.EnqueueRequest{Queue: queue, Job: &spec}); err != nil {
				t.Fatal(err)
			}
		}
		jobs := awaitSucceeded(t, st, tr, queue, ids)
		after := m.Counts()
		state := after["UpdateItem state"]
		calls, refused := state.Calls-before["UpdateItem state"].Calls, state.CondFailed-before["UpdateItem state"].CondFailed
		if j, ok := missedAStart(jobs); ok {
			t.Logf("round %d: %s missed a start (the host stalled more than the skew); %d writes of the state, %d refused; measuring again",
				round, j, calls, refused)
			continue
		}
		t.Logf("%d jobs retried once: %d writes of the queue's state, %d refused", n, calls, refused)
		if refused != 0 {
			t.Errorf("%d writes of the queue's state refused, want none (a retry's take from the state its gate saw)", refused)
		}
		if calls != 2*n {
			t.Errorf("%d writes of the queue's state for %d jobs retried once, want %d (each enqueue's take and each retry's; the starts pass by a read)",
				calls, n, 2*n)
		}
		return
	}
	t.Fatalf("each of %d rounds had a start missed: the host stalled more than the skew in each", rounds)
}

// missedAStart names a job whose history shows a start given up (a new
// ticket for being late) rather than its two attempts alone.
func missedAStart(jobs []job.Job) (string, bool) {
	for _, j := range jobs {
		for _, ev := range j.History {
			if ev.Kind == job.Reticketed || ev.Kind == job.SlotMissed {
				return j.ID, true
			}
		}
	}
	return "", false
}

// meteredWorker is an engine on DynamoDB Local whose calls m counts, run
// by one worker on tr, so that no two writes of a queue's state meet (a
// conflict's retry is a write too); the lead is a second, the interval
// the tests give their queues, as much as one worker has.
func meteredWorker(t *testing.T, runner engine.Runner) (*dynamostore.Store, *awsmeter.DynamoDB, *memstore.Transport, *engine.Engine) {
	t.Helper()
	client := newClient(t, nil)
	m := awsmeter.NewDynamoDB(client)
	st := dynamostore.New(m, newTable(t, client), dynamostore.Options{})
	tr := memstore.NewTransport(memstore.TransportOptions{Seed: 3})
	eng := testenv.NewEngine(t, engine.Options{State: st, Transport: tr, Runner: runner, NoAutoCreate: true, Lead: time.Second})
	testenv.RunWorkers(t, tr, 1, eng)
	return st, m, tr, eng
}

// awaitSucceeded waits until every job of ids on queue succeeded and its
// delivery returned (the meter counts a write after its answer, which a
// reader of the record may see first), and returns their records.
func awaitSucceeded(t *testing.T, st *dynamostore.Store, tr *memstore.Transport, queue string, ids []string) []job.Job {
	t.Helper()
	var jobs []job.Job
	testenv.WaitFor(t, "every job of "+queue+" succeeded and its delivery returned", func() bool {
		if tr.Pending() > 0 {
			return false
		}
		jobs = jobs[:0]
		for _, id := range ids {
			j, err := st.GetJob(t.Context(), job.Ref{Queue: queue, ID: id})
			if err != nil || j.Status != job.Succeeded {
				return false
			}
			jobs = append(jobs, j)
		}
		return true
	})
	return jobs
}
