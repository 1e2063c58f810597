package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// laggyState makes every read and Take of the queue take lag, as round
// trips to DynamoDB do.
type laggyState struct {
	engine.State
	lag time.Duration
}

func (s laggyState) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	time.Sleep(s.lag)
	return s.State.GetQueue(ctx, name)
}

func (s laggyState) GetJob(ctx context.Context, k job.Ref) (job.Job, error) {
	time.Sleep(s.lag)
	return s.State.GetJob(ctx, k)
}

func (s laggyState) Take(ctx context.Context, r engine.TakeRequest) (engine.Taken, error) {
	time.Sleep(s.lag)
	return s.State.Take(ctx, r)
}

// sentMessage is a message as a transport saw it, with the time it came.
type sentMessage struct {
	engine.Message
	At time.Time
}

// recordingTransport keeps what it is sent and delivers nothing.
type recordingTransport struct {
	mu   sync.Mutex
	sent []sentMessage
}

func (r *recordingTransport) MaxDelay() time.Duration { return 15 * time.Minute }

func (r *recordingTransport) Send(_ context.Context, msgs []engine.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.sent = append(r.sent, sentMessage{Message: m, At: time.Now()})
	}
	return nil
}

// checkDelay fails unless m was sent to arrive the engine's lead before
// slotAt, by the clock at the time it was sent.
func checkDelay(t *testing.T, m sentMessage, slotAt time.Time) {
	t.Helper()
	if want := max(0, slotAt.Sub(m.At)-slot.DefaultLead); m.Delay != want {
		t.Errorf("message delay %v; the slot less the lead was %v away when it was sent", m.Delay, want)
	}
	if !m.Envelope.SentAt.Equal(m.At) {
		t.Errorf("envelope sent_at %v, sent at %v", m.Envelope.SentAt, m.At)
	}
}

// A message's delay is the time from its sending to its slot: the round
// trips before the send (queue, ids, tickets) do not make it arrive late.
// And a slot is booked by the clock of the take, so a job due at once is
// not booked in the past.
func TestDelayFromSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		tr := &recordingTransport{}
		store := memstore.New(memstore.Options{})
		eng := engine.New(engine.Options{State: laggyState{store, 300 * time.Millisecond}, Transport: tr})
		if _, err := eng.CreateQueue(ctx, "lag", slot.Config{Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
		in := time.Now().Add(10 * time.Second)
		res, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "lag", Jobs: []job.Spec{{ID: "a", Kind: "k"}, {ID: "b", Kind: "k", NotBefore: &in}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.sent) != 2 {
			t.Fatalf("%d messages sent, want 2", len(tr.sent))
		}
		for i, m := range tr.sent {
			checkDelay(t, m, res.Jobs[i].SlotAt)
		}
		if a := res.Jobs[0]; a.SlotAt.Before(tr.sent[0].At.Add(-300 * time.Millisecond)) {
			t.Errorf("job due at once booked at %v, before the take (the send was at %v)", a.SlotAt, tr.sent[0].At)
		}

		// Handed back: the invocation has no time for the job's slot.
		j, err := store.GetJob(ctx, job.Ref{Queue: "lag", ID: "b"})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := eng.Work(wctx, j.Envelope()); err != nil {
			t.Fatalf("Work: %v", err)
		}
		if len(tr.sent) != 3 {
			t.Fatalf("%d messages sent, want the job handed back", len(tr.sent))
		}
		checkDelay(t, tr.sent[2], j.SlotAt)
	})
}
