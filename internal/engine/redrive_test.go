package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// sendLog is a Transport that records every message it sends, then
// passes it on.
type sendLog struct {
	engine.Transport
	mu   sync.Mutex
	sent []engine.Message
}

func (s *sendLog) Send(ctx context.Context, msgs []engine.Message) error {
	s.mu.Lock()
	s.sent = append(s.sent, msgs...)
	s.mu.Unlock()
	return s.Transport.Send(ctx, msgs)
}

// deadList is a dead-letter queue holding the envelopes given.
type deadList struct{ envs []job.Envelope }

func (d *deadList) ReceiveDead(_ context.Context, n int) ([]engine.DeadLetter, error) {
	var out []engine.DeadLetter
	for len(d.envs) > 0 && len(out) < n {
		out = append(out, engine.DeadLetter{Handle: d.envs[0].JobID, Envelope: d.envs[0]})
		d.envs = d.envs[1:]
	}
	return out, nil
}

func (d *deadList) DeleteDead(context.Context, ...string) error { return nil }

// A redriven message whose slot is still ahead arrives Lead before it, as
// every message for a start is sent (its delay is slot − Lead − now): the
// worker comes in time to pass the gate for a start at the slot.
func TestRedriveKeepsLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const lead = 300 * time.Millisecond
		tr := &sendLog{Transport: memstore.NewTransport(memstore.TransportOptions{})}
		eng := testenv.NewEngine(t, engine.Options{Transport: tr, Lead: lead})
		if _, err := eng.CreateQueue(ctx, "later", slot.Config{Interval: time.Minute}); err != nil {
			t.Fatal(err)
		}
		// The second job's slot is a minute ahead of the first's.
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "later", Jobs: []job.Spec{{ID: "a", Kind: "k"}, {ID: "b", Kind: "k"}}}); err != nil {
			t.Fatal(err)
		}
		b, err := eng.Job(ctx, job.Ref{Queue: "later", ID: "b"})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // the message went dead meanwhile
		tr.sent = nil
		rep, err := eng.Redrive(ctx, &deadList{envs: []job.Envelope{b.Envelope()}}, 0)
		if err != nil || rep.Redriven != 1 {
			t.Fatalf("redrive: %+v, %v", rep, err)
		}
		want := b.SlotAt.Sub(time.Now()) - lead
		if len(tr.sent) != 1 || tr.sent[0].Delay != want {
			t.Fatalf("redriven with %v, want slot − lead − now = %v", tr.sent, want)
		}
	})
}
