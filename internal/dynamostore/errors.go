package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/slotq/slotq/internal/clock"
)

// ErrTableNotFound is wrapped in the error of every call made against a
// table that does not exist (DynamoDB's ResourceNotFoundException, which
// is also wrapped). It is a deployment mistake, not a state: nobody should
// retry it.
var ErrTableNotFound = errors.New("dynamodb table not found")

// Cancellation reason codes of TransactWriteItems.
const (
	reasonNone        = "None"
	reasonConditional = "ConditionalCheckFailed"
)

// awsErr turns AWS errors that mean something to the caller into wrapped
// domain errors. Anything else passes through, still wrapping the SDK's
// typed error for errors.As.
func (s *Store) awsErr(err error) error {
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		return fmt.Errorf("%w (table %q): %w", ErrTableNotFound, s.table, err)
	}
	return err
}

// backfilling reports whether err is DynamoDB's refusal to query a
// global secondary index it is still building: a ValidationException
// "Cannot read from backfilling global secondary index" (after an upgrade
// that added the index).
func backfilling(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(ae.ErrorMessage()), "backfilling")
}

// conditionFailed returns the item DynamoDB sent back with a conditional
// failure (ALL_OLD; nil when the item does not exist), and whether err is
// one.
func conditionFailed(err error) (map[string]types.AttributeValue, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, true
	}
	return nil, false
}

// cancelReasons returns the cancellation reason codes and items of a
// cancelled transaction, and whether err is one.
func cancelReasons(err error) ([]types.CancellationReason, bool) {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		return tce.CancellationReasons, true
	}
	return nil, false
}

func code(r types.CancellationReason) string {
	return aws.ToString(r.Code)
}

// transient reports whether a cancellation reason is worth another try:
// another transaction held the item, or the item was throttled. The SDK
// does not retry a cancelled transaction by itself.
func transient(c string) bool {
	switch c {
	case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
		return true
	}
	return false
}

// retryable reports whether a cancelled transaction is worth another try:
// some item was held or throttled, and no condition failed (a failed
// condition fails again).
func retryable(reasons []types.CancellationReason) bool {
	held := false
	for _, r := range reasons {
		switch c := code(r); {
		case c == reasonConditional:
			return false
		case transient(c):
			held = true
		}
	}
	return held
}

// conflicted reports whether err is DynamoDB's TransactionConflictException:
// a single-item write met an item that an in-flight transaction holds. The
// write did not happen, and the SDK does not retry it.
func conflicted(err error) bool {
	var tc *types.TransactionConflictException
	return errors.As(err, &tc)
}

// maxTxRetries bounds how often a write refused for a transaction conflict
// (or a transaction cancelled for a transient reason) is tried again.
const maxTxRetries = 10

// backoff sleeps before retry number attempt (0-based) of a write refused
// for a transaction conflict or of a cancelled transaction: a random wait
// below 10 ms doubling to 320 ms.
func backoff(ctx context.Context, attempt int) error {
	return clock.Sleep(ctx, fullJitter(attempt, 10*time.Millisecond, 320*time.Millisecond))
}

// fullJitter is a random wait below base doubled attempt times, at most
// most (exponential backoff with full jitter).
func fullJitter(attempt int, base, most time.Duration) time.Duration {
	return time.Duration(rand.Int64N(int64(min(base<<min(attempt, 20), most))))
}

// txError is a transaction cancelled for reasons the caller does not
// branch on (after retries, for transient ones).
func txError(err error, reasons []types.CancellationReason) error {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = code(r)
	}
	return fmt.Errorf("transaction cancelled %v: %w", codes, err)
}
