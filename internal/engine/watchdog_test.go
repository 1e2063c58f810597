package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// pausedKey marks the context of the delivery whose first call a hold
// holds.
type pausedKey struct{}

// hold holds up the first call it is asked about on a context marked
// pausedKey: it closes read, and waits until resume is closed.
type hold struct {
	first  atomic.Bool
	read   chan struct{}
	resume chan struct{}
}

func newHold() hold { return hold{read: make(chan struct{}), resume: make(chan struct{})} }

func (h *hold) wait(ctx context.Context) {
	if ctx.Value(pausedKey{}) != nil && h.first.CompareAndSwap(false, true) {
		close(h.read)
		<-h.resume
	}
}

// raceDuplicate runs two deliveries of one job's message on a state that
// wrap builds around the store, with the hold it makes: the duplicate,
// held up by the hold, and meanwhile the first, which claims the job and
// runs it. Once the job runs the duplicate goes on. It fails unless the
// duplicate (which found what "found" says) answered ErrStillRunning and
// the first delivery ended without error; it returns the bench and the
// message.
func raceDuplicate(t *testing.T, found string, wrap func(engine.State) (engine.State, *hold)) (*workBench, job.Envelope) {
	t.Helper()
	ctx := context.Background()
	running, release := make(chan struct{}), make(chan struct{})
	var h *hold
	b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error {
		close(running)
		<-release
		return nil
	})}, func(s engine.State) engine.State {
		st, held := wrap(s)
		h = held
		return st
	})
	env := b.enqueue("dog", slot.Config{Interval: time.Second})
	dup := make(chan error, 1)
	go func() { dup <- b.eng.Work(context.WithValue(ctx, pausedKey{}, true), env) }()
	<-h.read // the duplicate is held up on its way
	first := make(chan error, 1)
	go func() { first <- b.eng.Work(ctx, env) }()
	<-running // the other delivery claimed it and runs it
	close(h.resume)
	if err := <-dup; !errors.Is(err, engine.ErrStillRunning) {
		t.Errorf("the delivery that %s answered %v, want ErrStillRunning: its message is the attempt's watchdog", found, err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the running delivery: %v", err)
	}
	return b, env
}

// pauseRead is a State whose first GetJob on a context marked pausedKey
// returns what it read only once its hold lets it: a delivery that read
// the job queued and is held up before it goes on.
type pauseRead struct {
	engine.State
	hold
}

func (p *pauseRead) GetJob(ctx context.Context, k job.Ref) (job.Job, error) {
	j, err := p.State.GetJob(ctx, k)
	p.wait(ctx)
	return j, err
}

// The message of a running attempt is its watchdog: a delivery of it
// that read the job queued, and finds it claimed by another delivery of
// the same message by the time it comes to the gate, is not done with
// the message (the transport would delete it, and with it the watchdog
// of the attempt that runs): it answers ErrStillRunning, so the message
// comes again after the lease, and recovers the attempt if its worker
// died.
func TestDuplicateKeepsWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := raceDuplicate(t, "found the attempt claimed", func(s engine.State) (engine.State, *hold) {
			p := &pauseRead{State: s, hold: newHold()}
			return p, &p.hold
		})
		if j := b.job("dog", "j1"); j.Status != job.Succeeded {
			t.Fatalf("job %s, want succeeded", j.Status)
		}
	})
}

// pauseGate is a State whose first Gate on a context marked pausedKey
// waits for its hold before it asks the store: a delivery held up on its
// way into the gate.
type pauseGate struct {
	engine.State
	hold
}

func (p *pauseGate) Gate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	p.wait(ctx)
	return p.State.Gate(ctx, r)
}

func (p *pauseGate) Admit(ctx context.Context, r engine.AdmitRequest) (engine.Queue, error) {
	p.wait(ctx)
	return p.State.Admit(ctx, r)
}

// The same, for a delivery that was on its way into the gate when the
// other delivery of its message passed it and claimed the attempt.
func TestDuplicateAtGateKeepsWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, env := raceDuplicate(t, "found the attempt claimed", func(s engine.State) (engine.State, *hold) {
			p := &pauseGate{State: s, hold: newHold()}
			return p, &p.hold
		})
		if j := b.job("dog", "j1"); j.Status != job.Succeeded || j.Ticket != env.Ticket {
			t.Fatalf("job %s at ticket %d, want succeeded at %d", j.Status, j.Ticket, env.Ticket)
		}
	})
}

// pauseClaim is a State whose first claim (a job written running) on a
// context marked pausedKey waits for its hold: a delivery that passed
// the gate and is held up before its claim.
type pauseClaim struct {
	engine.State
	hold
}

func (p *pauseClaim) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if j.Status == job.Running {
		p.wait(ctx)
	}
	return p.State.UpdateJob(ctx, j, from)
}

// The same, for a delivery that passed the gate and lost the claim to
// the other delivery of its message.
func TestDuplicateClaimKeepsWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raceDuplicate(t, "lost the claim", func(s engine.State) (engine.State, *hold) {
			p := &pauseClaim{State: s, hold: newHold()}
			return p, &p.hold
		})
	})
}
