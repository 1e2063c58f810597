package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/job"
)

// Message is one envelope to deliver after Delay.
type Message struct {
	Envelope job.Envelope
	Delay    time.Duration
}

// Transport carries envelopes to workers after a delay. internal/memstore and
// internal/sqstransport implement it. Delivery is at least once and in no
// particular order; the engine copes with both.
type Transport interface {
	// MaxDelay is the longest delay Send accepts (15 minutes on SQS).
	// Jobs further away are parked in the state store instead.
	MaxDelay() time.Duration
	// Send delivers each message no earlier than its delay from now
	// (a transport may round the delay down; the worker waits out the
	// rest). It returns a *SendError naming the messages that were not
	// sent when only some failed.
	Send(ctx context.Context, msgs []Message) error
}

// SendError reports the messages of a Send that were not accepted.
type SendError struct {
	// Failed maps the index of each message that was not sent to why.
	Failed map[int]error
}

func (e *SendError) Error() string {
	parts := make([]string, 0, len(e.Failed))
	for i, err := range e.Failed {
		parts = append(parts, fmt.Sprintf("#%d: %v", i, err))
		if len(parts) == 3 {
			break
		}
	}
	return fmt.Sprintf("send: %d messages failed (%s)", len(e.Failed), strings.Join(parts, "; "))
}
