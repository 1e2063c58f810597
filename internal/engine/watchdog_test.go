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

// pausedKey marks the context of the delivery whose first read of the
// job pauseRead holds.
type pausedKey struct{}

// pauseRead is a State whose first GetJob on a context marked pausedKey
// returns what it read only once resume is closed: a delivery that read
// the job queued and is held up before it goes on.
type pauseRead struct {
	engine.State
	first  atomic.Bool
	read   chan struct{}
	resume chan struct{}
}

func (p *pauseRead) GetJob(ctx context.Context, k job.Ref) (job.Job, error) {
	j, err := p.State.GetJob(ctx, k)
	if ctx.Value(pausedKey{}) != nil && p.first.CompareAndSwap(false, true) {
		close(p.read)
		<-p.resume
	}
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
		ctx := context.Background()
		running, release := make(chan struct{}), make(chan struct{})
		var p *pauseRead
		b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error {
			close(running)
			<-release
			return nil
		})}, func(s engine.State) engine.State {
			p = &pauseRead{State: s, read: make(chan struct{}), resume: make(chan struct{})}
			return p
		})
		env := b.enqueue("dog", slot.Config{Interval: time.Second})
		dup := make(chan error, 1)
		go func() { dup <- b.eng.Work(context.WithValue(ctx, pausedKey{}, true), env) }()
		<-p.read // the duplicate read the job queued
		first := make(chan error, 1)
		go func() { first <- b.eng.Work(ctx, env) }()
		<-running // the other delivery claimed it and runs it
		close(p.resume)
		if err := <-dup; !errors.Is(err, engine.ErrStillRunning) {
			t.Errorf("the delivery that found the attempt claimed answered %v, want ErrStillRunning: its message is the attempt's watchdog", err)
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatalf("the running delivery: %v", err)
		}
		if j := b.job("dog", "j1"); j.Status != job.Succeeded {
			t.Fatalf("job %s, want succeeded", j.Status)
		}
	})
}

// pauseGate is a State whose first Gate on a context marked pausedKey
// waits for resume before it asks the store: a delivery held up on its
// way into the gate.
type pauseGate struct {
	engine.State
	first  atomic.Bool
	read   chan struct{}
	resume chan struct{}
}

func (p *pauseGate) Gate(ctx context.Context, r engine.GateRequest) (slot.State, error) {
	if ctx.Value(pausedKey{}) != nil && p.first.CompareAndSwap(false, true) {
		close(p.read)
		<-p.resume
	}
	return p.State.Gate(ctx, r)
}

// The same, for a delivery that was on its way into the gate when the
// other delivery of its message passed it and claimed the attempt.
func TestDuplicateAtGateKeepsWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		running, release := make(chan struct{}), make(chan struct{})
		var p *pauseGate
		b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error {
			close(running)
			<-release
			return nil
		})}, func(s engine.State) engine.State {
			p = &pauseGate{State: s, read: make(chan struct{}), resume: make(chan struct{})}
			return p
		})
		env := b.enqueue("dog", slot.Config{Interval: time.Second})
		dup := make(chan error, 1)
		go func() { dup <- b.eng.Work(context.WithValue(ctx, pausedKey{}, true), env) }()
		<-p.read // the duplicate is on its way into the gate
		first := make(chan error, 1)
		go func() { first <- b.eng.Work(ctx, env) }()
		<-running
		close(p.resume)
		if err := <-dup; !errors.Is(err, engine.ErrStillRunning) {
			t.Errorf("the delivery that found the attempt claimed answered %v, want ErrStillRunning: its message is the attempt's watchdog", err)
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatalf("the running delivery: %v", err)
		}
		if j := b.job("dog", "j1"); j.Status != job.Succeeded || j.Ticket != env.Ticket {
			t.Fatalf("job %s at ticket %d, want succeeded at %d", j.Status, j.Ticket, env.Ticket)
		}
	})
}

// pauseClaim is a State whose first claim (a job written running) on a
// context marked pausedKey waits for resume: a delivery that passed the
// gate and is held up before its claim.
type pauseClaim struct {
	engine.State
	first  atomic.Bool
	read   chan struct{}
	resume chan struct{}
}

func (p *pauseClaim) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if ctx.Value(pausedKey{}) != nil && j.Status == job.Running && p.first.CompareAndSwap(false, true) {
		close(p.read)
		<-p.resume
	}
	return p.State.UpdateJob(ctx, j, from)
}

// The same, for a delivery that passed the gate and lost the claim to
// the other delivery of its message.
func TestDuplicateClaimKeepsWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		running, release := make(chan struct{}), make(chan struct{})
		var p *pauseClaim
		b := newWorkBench(t, engine.Options{Runner: runFunc(func(context.Context, *job.Job, slot.Config) error {
			close(running)
			<-release
			return nil
		})}, func(s engine.State) engine.State {
			p = &pauseClaim{State: s, read: make(chan struct{}), resume: make(chan struct{})}
			return p
		})
		env := b.enqueue("dog", slot.Config{Interval: time.Second})
		dup := make(chan error, 1)
		go func() { dup <- b.eng.Work(context.WithValue(ctx, pausedKey{}, true), env) }()
		<-p.read // the duplicate passed the gate; its claim waits
		first := make(chan error, 1)
		go func() { first <- b.eng.Work(ctx, env) }()
		<-running
		close(p.resume)
		if err := <-dup; !errors.Is(err, engine.ErrStillRunning) {
			t.Errorf("the delivery that lost the claim answered %v, want ErrStillRunning: its message is the attempt's watchdog", err)
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatalf("the running delivery: %v", err)
		}
	})
}
