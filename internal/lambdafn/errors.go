package lambdafn

import (
	"errors"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/pkg/api"
)

// Error is the error object enqueue and admin answer with, inside
// {"error": …}, when the request cannot be done as asked: bad input, or a
// queue or job that does not exist. Other failures (DynamoDB or SQS
// unavailable) are function errors instead, so callers see them as
// retryable (X-Amz-Function-Error). It is pkg/api's Error, the type
// callers decode it into: its fields are declared once.
type Error = api.Error

// ErrorOf turns an error the caller can act on into its Error, or
// returns nil for any other error.
func ErrorOf(err error) *Error {
	e := errorOf(err)
	var fe *engine.FieldError
	if e != nil && errors.As(err, &fe) {
		e.Field = fe.Field
	}
	return e
}

func errorOf(err error) *Error {
	var in *input.Error
	var nr *engine.NotRetryableError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &in):
		return &Error{Code: in.Code, Field: in.Field, Message: in.Message}
	case errors.Is(err, engine.ErrScheduleNotFound):
		return &Error{Code: "schedule_not_found", Field: "name", Message: err.Error()}
	case errors.Is(err, engine.ErrNoSchedules):
		return &Error{Code: "no_schedules", Field: "op", Message: err.Error()}
	case errors.Is(err, engine.ErrQueueNotFound):
		return &Error{Code: "queue_not_found", Field: "queue", Message: err.Error()}
	case errors.Is(err, engine.ErrQueueExists):
		return &Error{Code: "queue_exists", Field: "queue", Message: err.Error()}
	case errors.Is(err, engine.ErrJobNotFound):
		return &Error{Code: "job_not_found", Field: "job_id", Message: err.Error()}
	case errors.As(err, &nr):
		return &Error{Code: "not_retryable", Field: nr.Field, Message: err.Error()}
	case errors.Is(err, engine.ErrNotWaiting):
		return &Error{Code: "not_waiting", Field: "job_id", Message: err.Error()}
	}
	return nil
}
