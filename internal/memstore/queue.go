package memstore

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// The pull side of the Transport: Receive, Delete and ChangeVisibility
// model an SQS queue, for a consumer that polls it as the Lambda event
// source mapping polls SQS (the local runtime's, internal/local/esm). Use either
// Run or the pull side on one Transport, not both.
//
// As on SQS: a received message is invisible for the visibility timeout
// and then comes back unless it was deleted; each receive counts
// (ApproximateReceiveCount) and gets a new receipt handle; a message
// received MaxReceiveCount times goes to the dead-letter list on its next
// receive instead of being delivered.

// Delivery is one received message.
type Delivery struct {
	// MessageID stays the same across receives of one message.
	MessageID string
	// ReceiptHandle names this receive, for Delete and ChangeVisibility.
	ReceiptHandle string
	Envelope      job.Envelope
	// ReceiveCount counts the receives of the message, this one included.
	ReceiveCount int
	// SentAt and FirstReceivedAt are when the message was sent and first
	// received.
	SentAt, FirstReceivedAt time.Time
}

// pullState is what the pull side keeps beside the waiting heap.
type pullState struct {
	leased map[string]*rxLease // by receipt handle
	dead   []job.Envelope
	// deadLeased holds dead letters received for a redrive
	// (DeadLetterQueue), by handle, until deleted or their lease ends.
	deadLeased map[string]deadLease
}

type rxLease struct {
	m     *message
	until time.Time
}

// pollStep bounds how long Receive sleeps between looks at the queue: a
// message sent meanwhile with no delay waits at most this long.
const pollStep = 5 * time.Millisecond

// Receive waits up to wait for due messages and returns up to
// n (at least 1), each invisible for visibility (the transport's
// VisibilityTimeout if 0). It returns no messages, and no error, when
// wait passes or ctx ends first.
func (t *Transport) Receive(ctx context.Context, n int, wait, visibility time.Duration) ([]Delivery, error) {
	n = max(n, 1)
	if visibility <= 0 {
		visibility = t.opts.VisibilityTimeout
	}
	deadline := time.Now().Add(wait)
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for {
		now := time.Now()
		t.mu.Lock()
		t.expireLocked(now)
		var out []Delivery
		for len(out) < n && len(t.waiting) > 0 && !t.waiting[0].due.After(now) {
			m := heap.Pop(&t.waiting).(*message)
			m.receives++
			if m.id == "" {
				m.id, m.firstRx = newHandle(), now
			}
			if t.opts.MaxReceiveCount > 0 && m.receives > t.opts.MaxReceiveCount {
				t.pull.dead = append(t.pull.dead, m.env)
				continue
			}
			h := newHandle()
			if t.pull.leased == nil {
				t.pull.leased = map[string]*rxLease{}
			}
			t.pull.leased[h] = &rxLease{m: m, until: now.Add(visibility)}
			t.inFlight++
			out = append(out, Delivery{MessageID: m.id, ReceiptHandle: h, Envelope: copyEnvelope(m.env),
				ReceiveCount: m.receives, SentAt: m.sent, FirstReceivedAt: m.firstRx})
		}
		t.mu.Unlock()
		if len(out) > 0 {
			t.delivered.Add(int64(len(out)))
			return out, nil
		}
		left := deadline.Sub(now)
		if left <= 0 {
			return nil, nil
		}
		timer.Reset(min(left, pollStep))
		select {
		case <-ctx.Done():
			return nil, nil
		case <-timer.C:
		}
	}
}

// expireLocked puts back leased messages whose visibility timeout passed.
func (t *Transport) expireLocked(now time.Time) {
	for h, l := range t.pull.leased {
		if l.until.After(now) {
			continue
		}
		delete(t.pull.leased, h)
		t.inFlight--
		t.redelivered.Add(1)
		l.m.due = l.until
		t.seq++
		l.m.seq = t.seq
		heap.Push(&t.waiting, l.m)
	}
}

// Delete deletes the received messages the receipt handles name. A handle
// whose visibility timeout has passed no longer names anything (the
// message is visible again, or received by someone else); it is ignored,
// as are unknown handles.
func (t *Transport) Delete(_ context.Context, receiptHandles ...string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked(time.Now())
	for _, h := range receiptHandles {
		if _, ok := t.pull.leased[h]; ok {
			delete(t.pull.leased, h)
			t.inFlight--
		}
	}
	return nil
}

// ChangeVisibility makes the received message of receiptHandle visible
// again after d (0: now) instead of at the end of its visibility timeout.
func (t *Transport) ChangeVisibility(_ context.Context, receiptHandle string, d time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.pull.leased[receiptHandle]; ok {
		l.until = time.Now().Add(max(d, 0))
		t.expireLocked(time.Now())
	}
	return nil
}

// DeadLetters returns the messages moved to the dead-letter list after
// MaxReceiveCount receives, oldest first.
func (t *Transport) DeadLetters() []job.Envelope {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := slices.Clone(t.pull.dead)
	for i := range out {
		out[i] = copyEnvelope(out[i])
	}
	return out
}

// VisibilityTimeout is the transport's visibility timeout.
func (t *Transport) VisibilityTimeout() time.Duration { return t.opts.VisibilityTimeout }

// MaxReceiveCount is the pull side's redrive policy (0: none).
func (t *Transport) MaxReceiveCount() int { return t.opts.MaxReceiveCount }

func newHandle() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DeadLetterQueue returns the dead-letter list as an
// engine.DeadLetterQueue, for the admin function's redrive: a received
// letter is hidden for the transport's visibility timeout (a second if
// none) and comes back to the list unless it is deleted.
func (t *Transport) DeadLetterQueue() engine.DeadLetterQueue { return deadQueue{t} }

type deadQueue struct{ t *Transport }

type deadLease struct {
	env   job.Envelope
	until time.Time
}

func (q deadQueue) ReceiveDead(_ context.Context, n int) ([]engine.DeadLetter, error) {
	t := q.t
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for h, l := range t.pull.deadLeased {
		if !l.until.After(now) {
			delete(t.pull.deadLeased, h)
			t.pull.dead = append(t.pull.dead, l.env)
		}
	}
	vis := t.opts.VisibilityTimeout
	if vis <= 0 {
		vis = time.Second
	}
	var out []engine.DeadLetter
	for len(out) < max(n, 1) && len(t.pull.dead) > 0 {
		env := t.pull.dead[0]
		t.pull.dead = t.pull.dead[1:]
		h := newHandle()
		if t.pull.deadLeased == nil {
			t.pull.deadLeased = map[string]deadLease{}
		}
		t.pull.deadLeased[h] = deadLease{env: env, until: now.Add(vis)}
		out = append(out, engine.DeadLetter{Handle: h, Envelope: copyEnvelope(env)})
	}
	return out, nil
}

func (q deadQueue) DeleteDead(_ context.Context, handles ...string) error {
	q.t.mu.Lock()
	defer q.t.mu.Unlock()
	for _, h := range handles {
		delete(q.t.pull.deadLeased, h)
	}
	return nil
}
