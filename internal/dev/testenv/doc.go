// Package testenv is what slotq's tests share, in place of a TestMain, a
// locked buffer and an engine set-up copied into each package: Main stops
// the emulators a test binary started, Buffer takes writes from several
// goroutines, NewEngine and RunWorkers wire an engine on the embedded
// backend, RefuseOnce fails a job's first send as SQS fails an entry of a
// batch, Contents reads what it holds, Converts holds a converter
// between a server type and its pkg/api type to both types' fields, and
// WaitFor waits for the event a test needs with a deadline a loaded host
// keeps within (Patience) instead of sleeping a fixed time.
//
// It is tooling: tests import it, nothing that ships does (layers_test.go).
// A test asserts what a guarantee says — order, once, spacing — and waits
// as long as it takes for the events it needs; how fast they came is a
// figure for a benchmark (make bench), not an assertion.
package testenv
