package sqstransport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/sqstransport"
)

// batchOf makes an SQS batch of envelopes: message i carries envs[i] and
// has id "m-<job id>".
func batchOf(t *testing.T, envs ...job.Envelope) []events.SQSMessage {
	t.Helper()
	var out []events.SQSMessage
	for _, env := range envs {
		b, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, events.SQSMessage{MessageId: "m-" + env.JobID, Body: string(b)})
	}
	return out
}

// A batch is worked concurrently across queues and in slot order within
// each queue (work that never says it started holds up the next message
// of its queue until it returns); failures are reported per message.
func TestWorkBatchConcurrentAcrossQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := time.Now()
		var envs []job.Envelope
		// Three queues of three jobs, listed out of slot order.
		for _, q := range []string{"a", "b", "c"} {
			for i := 3; i >= 1; i-- {
				envs = append(envs, job.Envelope{V: job.EnvelopeVersion, Queue: q, JobID: fmt.Sprintf("%s%d", q, i),
					Ticket: int64(i), SlotAt: base.Add(time.Duration(i) * time.Second), Attempt: 1, Kind: "k"})
			}
		}
		var mu sync.Mutex
		order := map[string][]string{}
		running := map[string]int{}
		work := func(_ context.Context, env job.Envelope) error {
			mu.Lock()
			running[env.Queue]++
			if running[env.Queue] > 1 {
				t.Errorf("queue %s: two messages worked at once", env.Queue)
			}
			order[env.Queue] = append(order[env.Queue], env.JobID)
			mu.Unlock()
			time.Sleep(10 * time.Second) // a slow target
			mu.Lock()
			running[env.Queue]--
			mu.Unlock()
			if env.JobID == "b2" {
				return errors.New("state store unavailable")
			}
			return nil
		}
		resp := sqstransport.WorkBatch(context.Background(), batchOf(t, envs...), work, nil)
		if took := time.Since(base); took != 30*time.Second {
			t.Errorf("the batch took %v, want 30s: three queues of three 10s jobs, queues at once", took)
		}
		for _, q := range []string{"a", "b", "c"} {
			if want := []string{q + "1", q + "2", q + "3"}; !slices.Equal(order[q], want) {
				t.Errorf("queue %s worked %v, want slot order %v", q, order[q], want)
			}
		}
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-b2" {
			t.Errorf("failures %+v, want m-b2", resp.BatchItemFailures)
		}
	})
}

// Within a queue the messages pass the gate one after another, but each
// target runs on its own: once a message's work says it started
// (engine.GateDone), the next one goes on, so a slow target does not hold
// up the queue's later jobs.
func TestWorkBatchRunsTargetsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := time.Now()
		var envs []job.Envelope
		for i := 1; i <= 3; i++ {
			envs = append(envs, job.Envelope{V: job.EnvelopeVersion, Queue: "q", JobID: fmt.Sprintf("j%d", i),
				Ticket: int64(i), SlotAt: base.Add(time.Duration(i) * time.Second), Attempt: 1, Kind: "k"})
		}
		var mu sync.Mutex
		gating := 0
		var begins []time.Duration
		work := func(ctx context.Context, env job.Envelope) error {
			mu.Lock()
			gating++
			if gating > 1 {
				t.Errorf("%s: two messages of one queue before their gate at once", env.JobID)
			}
			mu.Unlock()
			time.Sleep(time.Until(env.SlotAt)) // to the slot, then the gate
			mu.Lock()
			gating--
			begins = append(begins, time.Since(base))
			mu.Unlock()
			engine.GateDone(ctx)
			time.Sleep(10 * time.Second) // a slow target
			return nil
		}
		sqstransport.WorkBatch(context.Background(), batchOf(t, envs...), work, nil)
		if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !slices.Equal(begins, want) {
			t.Errorf("targets began at %v, want each at its slot %v", begins, want)
		}
		if took := time.Since(base); took != 13*time.Second {
			t.Errorf("the batch took %v, want 13s: the last slot, then its 10s target", took)
		}
	})
}
