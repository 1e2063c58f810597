package job

import (
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/slotq/slotq/internal/input"
)

// Bounds of a job's trace context.
const (
	// MaxTraceParent bounds a traceparent: version 00's is 55 characters;
	// a later version may append fields, which slotq keeps as given.
	MaxTraceParent = 128
	// MaxTraceState bounds a tracestate: W3C's 32 list members of at
	// most 256 characters each could reach 8 KiB; vendors are told to
	// keep it under 512, and slotq keeps no more than that.
	MaxTraceState = 512
)

// ValidateTraceContext checks a job's W3C trace context: a traceparent
// in W3C Trace Context's form (ValidateTraceParent), and a tracestate
// only beside one, in its list form. Both are optional. The error names
// traceparent or tracestate.
func ValidateTraceContext(parent, state string) *input.Error {
	if parent != "" {
		if err := ValidateTraceParent(parent); err != nil {
			return input.Invalid("invalid_traceparent", "traceparent", fmt.Sprintf("traceparent %q: %v", input.Truncate(parent, 80), err))
		}
	}
	if state == "" {
		return nil
	}
	if parent == "" {
		return input.Invalid("invalid_tracestate", "tracestate", "a tracestate needs a traceparent")
	}
	if len(state) > MaxTraceState {
		return input.Invalid("invalid_tracestate", "tracestate", fmt.Sprintf("tracestate is %d characters; the most is %d", len(state), MaxTraceState))
	}
	if _, err := trace.ParseTraceState(state); err != nil {
		return input.Invalid("invalid_tracestate", "tracestate", fmt.Sprintf("tracestate %q: not a W3C list of key=value members", input.Truncate(state, 80)))
	}
	return nil
}

// ValidateTraceParent checks a W3C traceparent: version-traceid-parentid-flags
// in lower-case hex, "00-" then 32, 16 and 2 digits, the ids not all
// zeros. A later version than 00 (not ff) may carry more after a dash,
// which is kept as given, as W3C asks of a reader that knows only 00.
func ValidateTraceParent(s string) error {
	const v0 = len("00-") + 32 + 1 + 16 + 1 + 2
	switch {
	case len(s) < v0:
		return fmt.Errorf("%d characters; version 00 has %d", len(s), v0)
	case len(s) > MaxTraceParent:
		return fmt.Errorf("%d characters; the most is %d", len(s), MaxTraceParent)
	case !lowerHex(s[0:2]) || s[0:2] == "ff":
		return fmt.Errorf("version %q is not 2 lower-case hex digits other than ff", s[0:2])
	case s[0:2] == "00" && len(s) != v0:
		return fmt.Errorf("%d characters; version 00 has %d", len(s), v0)
	case len(s) > v0 && s[v0] != '-':
		return fmt.Errorf("character %d must be a dash", v0+1)
	case s[2] != '-' || s[35] != '-' || s[52] != '-':
		return fmt.Errorf("want 00-<32 hex digits>-<16 hex digits>-<2 hex digits>")
	case !lowerHex(s[3:35]) || allZero(s[3:35]):
		return fmt.Errorf("trace id must be 32 lower-case hex digits, not all zeros")
	case !lowerHex(s[36:52]) || allZero(s[36:52]):
		return fmt.Errorf("parent id must be 16 lower-case hex digits, not all zeros")
	case !lowerHex(s[53:55]):
		return fmt.Errorf("flags must be 2 lower-case hex digits")
	}
	return nil
}

func lowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := range len(s) {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
