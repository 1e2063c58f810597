package attempt

import (
	"strconv"
	"strings"
	"time"
)

// RetryAfterError is a target's "slow down": the job's target answered
// that it takes no more calls for Wait (an HTTP 429 or 503 with its
// Retry-After, a Lambda function's RetryAfterError, a Go handler's
// target.RetryAfter). The engine does not count the attempt as failed:
// nothing more of the job's queue (or of its key, when the key has a
// limit of its own) starts until Wait has passed, and the job runs again
// first then (docs/algorithm.md, "Slow down"). Match it with errors.As:
// it may be wrapped, and it may wrap a cause.
type RetryAfterError struct {
	// Wait is how long the target asked to be left alone; zero or less
	// takes the queue's retry_after_default.
	Wait time.Duration
	// Answer is the target's answer, as text for the job's history (an
	// HTTP target's status and body, say); empty for a Go handler's.
	Answer string
	// Err is the cause, if any.
	Err error
}

// RetryAfter returns the error of a target that asks to be called again
// no sooner than d from now.
func RetryAfter(d time.Duration) error { return &RetryAfterError{Wait: d} }

// Error reads "retry after 2s", with the answer or cause after a colon:
// a Lambda function written in Go that returns it unwrapped reports
// errorType "RetryAfterError" and this text, which the Lambda target
// reads back (ParseRetryAfter).
func (e *RetryAfterError) Error() string {
	s := "retry after " + e.Wait.String()
	switch {
	case e.Answer != "":
		return s + ": " + e.Answer
	case e.Err != nil:
		return s + ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// ParseRetryAfter reads the wait of a Lambda function's RetryAfterError
// from its errorMessage: a number of seconds ("2", "1.5"), or the text
// RetryAfterError.Error writes ("retry after 2s: …"). ok is false for
// anything else.
func ParseRetryAfter(msg string) (d time.Duration, ok bool) {
	msg = strings.TrimSpace(msg)
	if secs, err := strconv.ParseFloat(msg, 64); err == nil {
		if secs < 0 || secs > maxSeconds {
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	rest, found := strings.CutPrefix(msg, "retry after ")
	if !found {
		return 0, false
	}
	if i := strings.IndexAny(rest, ": "); i >= 0 {
		rest = rest[:i]
	}
	d, err := time.ParseDuration(rest)
	return d, err == nil && d >= 0
}

// maxSeconds is the most seconds ParseRetryAfter reads as a number: a
// day's worth (the engine caps a slow-down further).
const maxSeconds = 86400
