// Package clock is how slotq's code waits: Sleep, a sleep that ends early
// when its context does. The engine sleeps to slots and between lease
// tries with it, the DynamoDB and SQS adapters between retries, so every
// wait in slotq gives way to the Lambda deadline and to cancellation in
// the same way.
//
// Internal: a helper of slotq's own packages, no promise to users.
package clock

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done, and returns ctx's error in the
// second case. With d <= 0 it does not wait and returns ctx.Err(), so a
// loop that sleeps between tries stops once its context has ended.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
