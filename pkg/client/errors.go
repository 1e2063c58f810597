package client

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/smithy-go"

	"github.com/slotq/slotq/pkg/api"
)

// Sentinels that errors.Is matches against an *Error of their code.
var (
	// ErrQueueNotFound: the queue does not exist (code queue_not_found).
	ErrQueueNotFound = errors.New("queue not found")
	// ErrJobNotFound: the queue exists, the job does not (job_not_found).
	ErrJobNotFound = errors.New("job not found")
	// ErrQueueExists: create named a queue that exists (queue_exists).
	ErrQueueExists = errors.New("queue exists")
	// ErrNotWaiting: cancel named a job that has started or ended
	// (not_waiting).
	ErrNotWaiting = errors.New("job not waiting")
	// ErrNotRetryable: retry named a job that is not failed or cancelled
	// (not_retryable): it waits, runs, or succeeded.
	ErrNotRetryable = errors.New("job not retryable")
	// ErrNotAllowed: a job names a target its queue's allow-list does not
	// allow, or an address its allow_networks does not (target_not_allowed).
	ErrNotAllowed = errors.New("target not allowed")
	// ErrScheduleNotFound: the queue has no schedule of that name
	// (schedule_not_found).
	ErrScheduleNotFound = errors.New("schedule not found")
)

// sentinels maps error codes to the sentinel errors.Is finds.
var sentinels = map[string]error{
	api.CodeQueueNotFound:    ErrQueueNotFound,
	api.CodeJobNotFound:      ErrJobNotFound,
	api.CodeQueueExists:      ErrQueueExists,
	api.CodeNotWaiting:       ErrNotWaiting,
	api.CodeNotRetryable:     ErrNotRetryable,
	api.CodeTargetNotAllowed: ErrNotAllowed,
	api.CodeScheduleNotFound: ErrScheduleNotFound,
}

// Error is the function's refusal of a request as asked: bad input, a
// queue or job that does not exist, a target not allowed. The function
// wrote nothing. Retrying the same request gets the same answer. It is a
// smithy.APIError of the client's fault, so code that handles SDK errors
// generically (errors.As(err, &apiErr); apiErr.ErrorCode()) sees its code.
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

// ErrorCode is e's Code (smithy.APIError).
func (e *Error) ErrorCode() string { return e.Code }

// ErrorMessage is e's Message (smithy.APIError).
func (e *Error) ErrorMessage() string { return e.Message }

// ErrorFault is smithy.FaultClient: the request is at fault.
func (e *Error) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

var (
	_ smithy.APIError = (*Error)(nil)
	_ smithy.APIError = (*FunctionError)(nil)
)

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.Code]
	return ok && s == target
}

// FunctionError is a function that failed instead of answering: it
// crashed, timed out, or could not reach DynamoDB or SQS (Lambda's
// X-Amz-Function-Error). The request may or may not have taken effect.
// It is a smithy.APIError of the server's fault.
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

// ErrorCode is the function error's type, such as "Sandbox.Timedout", or
// its kind ("Unhandled") when the payload names no type.
func (e *FunctionError) ErrorCode() string {
	if e.Type != "" {
		return e.Type
	}
	return e.Kind
}

// ErrorMessage is the function's error message.
func (e *FunctionError) ErrorMessage() string { return e.Message }

// ErrorFault is smithy.FaultServer.
func (e *FunctionError) ErrorFault() smithy.ErrorFault { return smithy.FaultServer }

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
