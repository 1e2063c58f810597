// Package benchcmd is the slotq-bench command (internal/bench/cmd/slotq-bench):
// the measurements that run slotq on DynamoDB Local and moto_server, which
// it starts on loopback (internal/dev/dynamolocal, internal/dev/motoserver).
// They live apart from the slotq command so that the binary operators
// install links no emulator launcher; `slotq costs` runs `slotq-bench
// costs` (from the checkout, or on PATH).
//
//	slotq-bench costs [flags]     what one job costs on AWS (internal/bench/costs); docs/costs.md
//	slotq-bench ceiling [flags]   one queue's ceiling on DynamoDB Local (internal/bench/awssim); docs/performance.md
//	slotq-bench release [flags]   far-parked jobs released a second by one resume run, on the model of DynamoDB; docs/performance.md
//
// The package holds one file per command: costs.go, ceiling.go, release.go. It is
// internal: a tool of slotq's repository, not a promise to users.
package benchcmd

import (
	"context"
	"fmt"
	"io"

	"github.com/slotq/slotq/internal/cli/clikit"
)

// The exit codes are the slotq command's.
const (
	exitOK    = clikit.ExitOK
	exitFail  = clikit.ExitFail
	exitUsage = clikit.ExitUsage
)

const usage = `usage: slotq-bench COMMAND [flags]

  costs     measure what one job costs on AWS, on DynamoDB Local and moto_server (slotq costs)
  ceiling   measure one queue's ceiling on DynamoDB Local
  release   measure far-parked jobs released a second, on the model of DynamoDB

'slotq-bench COMMAND --help' lists a command's flags.
`

// Main runs the command args[0] names with the rest of args, and returns
// the process's exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "costs":
		return runCosts(ctx, args[1:], stdout, stderr)
	case "ceiling":
		return runCeiling(ctx, args[1:], stdout, stderr)
	case "release":
		return runRelease(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "slotq-bench: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}
