package testenv

import (
	"testing"
	"time"
)

// Patience is how long WaitFor waits for an event before it fails the
// test: far above what the event takes on a quiet host, so that a host
// loaded by other test binaries, busy loops or a build slows a test down
// and never fails it. A test that passes waits only as long as its events
// take.
const Patience = 2 * time.Minute

// poll is how often WaitFor checks its condition.
const poll = 25 * time.Millisecond

// WaitFor polls cond until it holds, and fails t (Fatal) if it still does
// not after Patience or when t's context ends. what says what the test
// waited for: "4 jobs to start", "a and b to park again".
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", Patience, what)
		}
		select {
		case <-tick.C:
		case <-t.Context().Done():
			if !cond() {
				t.Fatalf("%s: the test ended first", what)
			}
			return
		}
	}
}
