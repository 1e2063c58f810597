package client

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/slotq/slotq/pkg/engine"
)

// Sentinels that errors.Is matches against an *Error. ErrQueueNotFound,
// ErrJobNotFound, ErrQueueExists and ErrNotWaiting are the engine's own
// sentinels, so code that runs both in process and over the client
// branches the same way.
var (
	// ErrQueueNotFound: the queue does not exist (code queue_not_found).
	ErrQueueNotFound = engine.ErrQueueNotFound
	// ErrJobNotFound: the queue exists, the job does not (job_not_found).
	ErrJobNotFound = engine.ErrJobNotFound
	// ErrQueueExists: create named a queue that exists (queue_exists).
	ErrQueueExists = engine.ErrQueueExists
	// ErrNotWaiting: cancel named a job that has started or ended
	// (not_waiting).
	ErrNotWaiting = engine.ErrNotWaiting
	// ErrNotRetryable: retry named a job that is not failed or cancelled
	// (not_retryable): it waits, runs, or succeeded.
	ErrNotRetryable = engine.ErrNotRetryable
	// ErrNotAllowed: a job names a target its queue's allow-list does not
	// allow, or an address its allow_networks does not (target_not_allowed).
	ErrNotAllowed = errors.New("target not allowed")
)

// sentinels maps error codes to the sentinel errors.Is finds.
var sentinels = map[string]error{
	"queue_not_found":    ErrQueueNotFound,
	"job_not_found":      ErrJobNotFound,
	"queue_exists":       ErrQueueExists,
	"not_waiting":        ErrNotWaiting,
	"not_retryable":      ErrNotRetryable,
	"target_not_allowed": ErrNotAllowed,
}

// Error is the function's refusal of a request as asked: bad input, a
// queue or job that does not exist, a target not allowed. The function
// wrote nothing. Retrying the same request gets the same answer.
type Error struct {
	// Op is the operation: enqueue, or the admin op (create, configure,
	// pause, resume, purge, delete, stats, get, cancel, list, retry, redrive).
	Op string
	// Code is stable and snake_case: invalid_interval, unknown_field,
	// queue_not_found, job_not_found, target_not_allowed, …
	Code string
	// Field names the field of the request at fault, such as "queue",
	// "config.interval" or "jobs[3].payload"; empty if none is.
	Field string
	// Message says what is wrong, for people.
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("slotq %s: %s: %s", e.Op, e.Code, e.Message)
	}
	return fmt.Sprintf("slotq %s: %s (%s): %s", e.Op, e.Code, e.Field, e.Message)
}

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.Code]
	return ok && s == target
}

// FunctionError is a function that failed instead of answering: it
// crashed, timed out, or could not reach DynamoDB or SQS (Lambda's
// X-Amz-Function-Error). The request may or may not have taken effect.
type FunctionError struct {
	// Function is the name the client invoked.
	Function string
	// Kind is Lambda's X-Amz-Function-Error, such as "Unhandled".
	Kind string
	// Type and Message are the errorType and errorMessage of the
	// function's error payload, such as "Sandbox.Timedout".
	Type    string
	Message string
}

func (e *FunctionError) Error() string {
	msg := e.Message
	if e.Type != "" {
		msg = e.Type + ": " + msg
	}
	return fmt.Sprintf("slotq: function %s failed (%s): %s", e.Function, e.Kind, msg)
}

func functionError(fn, kind string, payload []byte) *FunctionError {
	var p struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}
	if err := json.Unmarshal(payload, &p); err != nil || p.Message == "" {
		p.Message = string(payload)
	}
	return &FunctionError{Function: fn, Kind: kind, Type: p.Type, Message: p.Message}
}
