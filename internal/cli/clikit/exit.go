package clikit

import "fmt"

// Exit codes every command shares; commands that wait add theirs.
const (
	ExitOK    = 0
	ExitFail  = 1 // the command ran and found a problem (or failed)
	ExitUsage = 2 // bad command line
)

// ExitStatus is the help's word on the shared exit codes.
const ExitStatus = "0 done, 1 the operation failed, 2 bad command line."

// ExitCode is the error a command returns once it has said what went
// wrong: the process exits with it.
type ExitCode int

func (e ExitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// UsageError is an error of the command line (exit code 2). One the
// stack would refuse the same way carries its Code and Field.
type UsageError struct{ Code, Field, Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef is a UsageError of a message.
func Usagef(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }
