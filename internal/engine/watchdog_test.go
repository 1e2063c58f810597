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
