// Package clikit holds what slotq's command line and its web console print
// and call alike: one rule for a duration read by people (Human, Signed,
// Setting), the tables (Row, Time, Print), the exit codes and the usage
// error, and the calls to a stack (Conn: the connection flags and the
// clients they build; Cmd: one run of a command, which calls, prints and
// reports an error with its code and field).
//
// Its parts, a file each:
//
//	duration.go  Human, Signed, Setting
//	table.go     Row, Time, OrDash
//	exit.go      ExitOK, ExitFail, ExitUsage, ExitCode, UsageError
//	conn.go      Conn: which stack, and its clients
//	cmd.go       Cmd: a command's run against a stack (Call, Fail, Print, Confirm)
//
// Where it sits: cmd/slotq's commands and internal/cli/console → clikit →
// pkg/client. It ships in no Lambda (layers_test.go).
package clikit
