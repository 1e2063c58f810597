package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// dyingRun kills a resume run midway, as Lambda kills a function at its
// deadline: once after releases have written records queued, it cancels
// the run's context, and from then on no call made with that context
// writes anything (the process is gone). Sends already made stay made.
// Each release's write takes 5 ms, so that many batches are between their send
// and their writes when it dies.
type dyingRun struct {
	engine.State
	mu       sync.Mutex
	after    int
	released int
	kill     context.CancelFunc
}

// arm makes the run of kill die after n more releases.
func (d *dyingRun) arm(n int, kill context.CancelFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.after, d.released, d.kill = n, 0, kill
}

func (d *dyingRun) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if err := ctx.Err(); err != nil {
		return err // a dead run writes nothing
	}
	if from.Status == job.Parked && j.Status == job.Queued {
		// A release's round trip: a batch's send and its writes are
		// apart.
		if err := clock.Sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
		d.mu.Lock()
		var kill context.CancelFunc
		if d.kill != nil {
			if d.released++; d.released > d.after {
				kill, d.kill = d.kill, nil
			}
		}
		d.mu.Unlock()
		if kill != nil {
			kill()
			return ctx.Err()
		}
	}
	return d.State.UpdateJob(ctx, j, from)
}

// 3,000 far-parked jobs over four queues (their slots 20 minutes away,
// beyond the transport's 15), all due at once, are released by the resume
// function, many batches at once. The first run dies midway: after 700
// records written queued, its context is cancelled, and nothing it writes
// after lands, though batches it sent stay sent. One job in 13 has its
// first message refused by the transport (an entry SendMessageBatch
// reports failed, among entries that were sent). The runs after release
// what is left, the refused jobs again: every job starts once, on the
// ticket and at the slot enqueue told, none lost and none failed; the
// jobs the dead run sent but did not write are sent twice, and the
// worker's claim drops the extra copy.
func TestFarParkedReleasedOnceThroughCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const queues, perQueue = 4, 750
		refuse, refused := testenv.RefuseOnce(13)
		dying := &dyingRun{}
		s := newSim(t, simOptions{Workers: 64, ResumeEvery: 24 * time.Hour, Seed: 54,
			Transport: memstore.TransportOptions{SendFailure: refuse},
			Wrap:      func(st engine.State) engine.State { dying.State = st; return dying }})
		defer s.stop()
		ctx := context.Background()
		told := map[string]job.Job{}
		// Each job's own time, 20 minutes on: jobs that share one
		// not_before are told slots that collide (a matter of the
		// booking, apart from the release).
		const interval = 20 * time.Millisecond
		t0 := time.Now().Add(20 * time.Minute)
		for q := range queues {
			name := fmt.Sprintf("far%d", q)
			s.createQueue(name, slot.Config{Interval: interval})
			for first := 0; first < perQueue; first += job.MaxBatch {
				res := s.enqueue(name, min(job.MaxBatch, perQueue-first), func(i int, sp *job.Spec) {
					nb := t0.Add(time.Duration(first+i) * interval)
					sp.ID, sp.NotBefore = fmt.Sprintf("j%04d", first+i), &nb
				})
				for _, a := range res.Jobs {
					told[name+"/"+a.JobID] = job.Job{Ticket: a.Ticket, SlotAt: a.SlotAt}
				}
			}
			if n := len(s.jobs(name, job.Parked)); n != perQueue {
				t.Fatalf("queue %s: %d of %d jobs parked", name, n, perQueue)
			}
		}
		// Every job due (a transport's reach before its slot), every slot
		// still minutes away.
		_ = clock.Sleep(ctx, 5*time.Minute+perQueue*interval)

		parked := func() (n int) {
			for q := range queues {
				n += len(s.jobs(fmt.Sprintf("far%d", q), job.Parked))
			}
			return n
		}
		rctx, kill := context.WithTimeout(ctx, time.Minute)
		dying.arm(700, kill)
		rep, err := s.eng.Resume(rctx)
		kill()
		sentFirst := int(s.tr.Stats().Sent)
		left := parked()
		t.Logf("dead run: %+v; %d sent, %d still parked", rep, sentFirst, left)
		if !errors.Is(err, context.Canceled) || left == 0 || left == queues*perQueue {
			t.Fatalf("the first run died with %v and left %d of %d parked; want it cut short midway", err, left, queues*perQueue)
		}
		if sentFirst < queues*perQueue-left+100 {
			t.Fatalf("the dead run sent %d messages for %d jobs written queued: too few sent and left unwritten to show their copies dropped", sentFirst, queues*perQueue-left)
		}
		for run := 2; parked() > 0; run++ {
			if run > 6 {
				t.Fatalf("%d jobs still parked after %d runs", parked(), run-1)
			}
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			rep, err := s.eng.Resume(rctx)
			cancel()
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			t.Logf("run %d: %+v", run, rep)
			_ = clock.Sleep(ctx, time.Second)
		}
		for q := range queues {
			s.waitFinished(fmt.Sprintf("far%d", q), 20*time.Minute)
			s.checkNoneFailed(fmt.Sprintf("far%d", q))
		}
		stats := s.tr.Stats()
		if int(stats.Failed) != refused() || refused() < queues*perQueue/13 {
			t.Fatalf("transport refused %d messages, %d jobs' first; want every 13th job refused once", stats.Failed, refused())
		}
		if int(stats.Sent) < queues*perQueue+100 {
			t.Fatalf("%d messages sent for %d jobs: the dead run's sent jobs were not sent again", stats.Sent, queues*perQueue)
		}
		s.mu.Lock()
		starts := s.starts
		s.mu.Unlock()
		began := map[string]bool{}
		for _, x := range starts {
			k := x.Queue + "/" + x.ID
			if began[k] {
				t.Fatalf("job %s started twice", k)
			}
			began[k] = true
			want := told[k]
			if x.Ticket != want.Ticket || x.At.Before(want.SlotAt) || x.At.After(want.SlotAt.Add(slot.DefaultSkew)) {
				t.Errorf("job %s started on ticket %d at %v; told ticket %d at %v", k, x.Ticket, x.At, want.Ticket, want.SlotAt)
			}
		}
		if len(began) != queues*perQueue {
			t.Fatalf("%d of %d jobs started", len(began), queues*perQueue)
		}
		t.Logf("%d jobs started once each; %d messages sent, %d refused", len(began), stats.Sent, stats.Failed)
	})
}
