package dispatch

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/attempt"
)

// A target's "slow down". An HTTP target that answers 429 Too Many
// Requests, or 503 Service Unavailable with a Retry-After header (a 503
// that does not say when is a failure, retried with backoff), and a
// Lambda target whose function
// fails with errorType RetryAfterError, give the attempt an
// *attempt.RetryAfterError: the engine holds the queue (or the job's key)
// for its wait and runs the job again first then, without counting a
// failed attempt (docs/algorithm.md, "Slow down").

// LambdaRetryAfter is the errorType of a Lambda function's "slow down":
// what aws-lambda-go reports for a Go function that returns
// target.RetryAfter's error unwrapped (the type's name). Its errorMessage
// gives the wait: a number of seconds ("2", "0.5") or that error's text
// ("retry after 2s"); anything else takes the queue's
// retry_after_default.
const LambdaRetryAfter = "RetryAfterError"

// httpSlowDown is the slow-down of an HTTP answer with status code,
// Retry-After header ra and the start of its body, at now.
func httpSlowDown(status string, ra string, snippet []byte, now time.Time) *attempt.RetryAfterError {
	answer := status
	if b := strings.TrimSpace(string(snippet)); b != "" {
		answer += ": " + b
	}
	return &attempt.RetryAfterError{Wait: RetryAfterHeader(ra, now), Answer: "http target: " + answer}
}

// RetryAfterHeader reads an HTTP Retry-After header at now: delay-seconds
// ("120") or an HTTP date ("Fri, 31 Dec 1999 23:59:59 GMT", by
// http.ParseTime). It returns 0 — the queue's retry_after_default — for
// an absent or malformed header and for a date that has passed.
func RetryAfterHeader(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil || !t.After(now) {
		return 0
	}
	return min(t.Sub(now), maxRetryAfter)
}

// maxRetryAfter bounds what a header may ask (the engine cuts a
// slow-down further, to slot.MaxSlowDown).
const maxRetryAfter = 24 * time.Hour

// lambdaSlowDown is the slow-down of a Lambda function's error, or nil
// when its errorType is not LambdaRetryAfter.
func lambdaSlowDown(fn, errorType, errorMessage string) *attempt.RetryAfterError {
	if errorType != LambdaRetryAfter {
		return nil
	}
	wait, _ := attempt.ParseRetryAfter(errorMessage)
	return &attempt.RetryAfterError{Wait: wait, Answer: fmt.Sprintf("lambda target %s: %s %s", fn, errorType, errorMessage)}
}
