package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// sendLog is a transport that records every message its transport
// accepted, and kills the run whose sends pass killAfter (cancels the
// context it was given), right after that send returned: the process
// dies between a batch's send and its records' writes.
type sendLog struct {
	engine.Transport
	mu        sync.Mutex
	sent      map[string][]job.Envelope // queue/id → the messages accepted
	accepted  int
	killAfter int
	kill      context.CancelFunc
}

func (l *sendLog) Send(ctx context.Context, msgs []engine.Message) error {
	err := l.Transport.Send(ctx, msgs)
	var se *engine.SendError
	if err != nil && !errors.As(err, &se) {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, m := range msgs {
		if se != nil && se.Failed[i] != nil {
			continue
		}
		k := m.Envelope.Queue + "/" + m.Envelope.JobID
		l.sent[k] = append(l.sent[k], m.Envelope)
		l.accepted++
	}
	if l.kill != nil && l.accepted >= l.killAfter {
		l.kill()
		l.kill = nil
	}
	return err
}

// 3,000 far-parked jobs over three queues on DynamoDB Local, all due at
// once, are released by resume runs that make their calls at once (the
// default ResumeConcurrency: real concurrency on the table). The first
// run dies right after a send, once 800 messages were accepted, and
// nothing it would write on its way out lands (its queues' leases hold
// until they end); one job in 13 has its first message refused (an entry
// SendMessageBatch failed). The runs after it skip the queues it holds,
// then, once its leases ended, release the rest: every record ends queued at the
// ticket and slot enqueue told, with at least one message at that ticket;
// no job was sent at any other ticket, and the dead run's sent but
// unwritten jobs were sent again at the same ticket (copies the worker's
// claim drops: internal/engine's TestFarParkedReleasedOnceThroughCrash
// runs them).
func TestFarParkedReleasedOnDynamoDB(t *testing.T) {
	// deadLease outlasts the lease a run takes on a queue (at most a
	// minute past its round's due time, two minutes otherwise), and
	// leaves every slot minutes ahead.
	const deadLease = 3 * time.Minute
	st := newStore(t)
	ctx := t.Context()
	var shift atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	refuse, refused := testenv.RefuseOnce(13)
	tr := memstore.NewTransport(memstore.TransportOptions{SendFailure: refuse})
	log := &sendLog{Transport: tr, sent: map[string][]job.Envelope{}}
	eng := testenv.NewEngine(t, engine.Options{State: st, Transport: log, Now: now})

	const queues, perQueue, interval = 3, 1000, 10 * time.Millisecond
	prefix := fmt.Sprintf("far-%d", time.Now().UnixNano())
	told := map[string]job.Job{}
	t0 := now().Add(20 * time.Minute)
	gens := make([]int64, queues)
	for q := range queues {
		name := fmt.Sprintf("%s-%d", prefix, q)
		created, err := eng.CreateQueue(ctx, name, slot.Config{Interval: interval})
		if err != nil {
			t.Fatal(err)
		}
		gens[q] = created.Gen
		for first := 0; first < perQueue; first += job.MaxBatch {
			req := job.EnqueueRequest{Queue: name}
			for i := first; i < min(perQueue, first+job.MaxBatch); i++ {
				nb := t0.Add(time.Duration(i) * interval)
				req.Jobs = append(req.Jobs, job.Spec{ID: fmt.Sprintf("j%04d", i), Kind: "k", NotBefore: &nb})
			}
			res, err := eng.Enqueue(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range res.Jobs {
				told[name+"/"+a.JobID] = job.Job{Queue: name, ID: a.JobID, Ticket: a.Ticket, SlotAt: a.SlotAt}
			}
		}
	}
	if len(log.sent) != 0 {
		t.Fatalf("%d jobs sent at enqueue; want all parked", len(log.sent))
	}
	// Every job due (a transport's reach before its slot), every slot
	// still minutes away.
	shift.Store(int64(5*time.Minute + perQueue*interval))

	rctx, kill := context.WithTimeout(ctx, time.Minute)
	log.mu.Lock()
	log.killAfter, log.kill = 800, kill
	log.mu.Unlock()
	// The dead run dies as a run killed at its function's timeout does:
	// whatever it would write on its way out (its leases' release)
	// never lands, so its leases hold until they end.
	dead := testenv.NewEngine(t, engine.Options{State: st, Transport: log, Now: now, RecordTimeout: time.Nanosecond})
	rep, err := dead.Resume(rctx)
	kill()
	t.Logf("dead run: %+v (%v)", rep, err)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v; want it killed midway", err)
	}
	parked := func() int {
		n := 0
		for q := range queues {
			c, err := st.CountJobs(ctx, fmt.Sprintf("%s-%d", prefix, q), gens[q], job.Parked)
			if err != nil {
				t.Fatal(err)
			}
			n += c
		}
		return n
	}
	if left := parked(); left == 0 || left == queues*perQueue {
		t.Fatalf("the dead run left %d of %d jobs parked; want it cut short midway", left, queues*perQueue)
	}
	for run := 2; parked() > 0; run++ {
		if run > 6 {
			t.Fatalf("%d jobs still parked after %d runs", parked(), run-1)
		}
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		rep, err := eng.Resume(rctx)
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		t.Logf("run %d: %+v", run, rep)
		if rep.Busy > 0 {
			// A queue's lease is still the dead run's: the next run
			// comes after its end, as the schedule's would.
			shift.Add(int64(deadLease))
		}
	}

	twice := 0
	for k, want := range told {
		j, err := st.GetJob(ctx, job.Ref{Queue: want.Queue, ID: want.ID})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != job.Queued || j.Ticket != want.Ticket || !j.SlotAt.Equal(want.SlotAt) {
			t.Fatalf("job %s: %s at ticket %d, slot %v; want queued at ticket %d, slot %v", k, j.Status, j.Ticket, j.SlotAt, want.Ticket, want.SlotAt)
		}
		sent := log.sent[k]
		if len(sent) == 0 {
			t.Fatalf("job %s queued but never sent", k)
		}
		for _, env := range sent {
			if env.Ticket != j.Ticket || env.Attempt != j.Attempt || env.Gen != j.Gen {
				t.Fatalf("job %s sent at ticket %d, attempt %d; its record is at ticket %d, attempt %d", k, env.Ticket, env.Attempt, j.Ticket, j.Attempt)
			}
		}
		if len(sent) > 1 {
			twice++
		}
	}
	if twice == 0 {
		t.Fatal("no job was sent by the dead run and left unwritten: the crash came between no send and its writes")
	}
	nRefused := refused()
	if nRefused < queues*perQueue/13 {
		t.Fatalf("%d jobs' first messages refused; want every 13th", nRefused)
	}
	t.Logf("%d jobs released, each queued at its ticket; %d sent twice at one ticket, %d refused once", len(told), twice, nRefused)
}
