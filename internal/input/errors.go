package input

import "fmt"

// Error is bad input: it names the field at fault and carries a stable
// code that callers and the wire format use (docs/guarantees.md §10). Whatever
// returned an Error wrote nothing.
type Error struct {
	// Code is a stable snake_case identifier, such as "invalid_interval".
	Code string `json:"code"`
	// Field names the offending field, such as "interval" or "jobs[3].payload".
	Field string `json:"field"`
	// Message says what is wrong, for people.
	Message string `json:"message"`
}

// Invalid returns an *Error.
func Invalid(code, field, message string) *Error {
	return &Error{Code: code, Field: field, Message: message}
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Message)
}

// At returns a copy of e whose field is prefixed, as in "jobs[3]." + field.
func (e *Error) At(prefix string) *Error {
	c := *e
	c.Field = prefix + e.Field
	return &c
}
