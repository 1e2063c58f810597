// Command slotq is slotq's program for people.
//
//	slotq local   run the stack in this process (make run): Invoke API, event source, schedule
//	slotq invoke  invoke a function through the Invoke API and print its answer
//	slotq demo    run producers and workers on the embedded backend; show a timeline (make demo)
//	slotq bench   run the demo workload several times and report its figures
//	slotq help    list the commands
//
// Each command has its own flags; `slotq COMMAND -h` lists them.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// A command is one subcommand: it parses its own flags from args and
// returns the process's exit code.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and found a problem (or failed)
	exitUsage = 2 // bad command line
)

// commands lists the subcommands in the order help shows them.
var commands []command

func init() {
	commands = []command{
		{"local", "run the stack in this process: Invoke API on 127.0.0.1:3001, SQS event source, schedule (make run)", localCmd},
		{"invoke", "invoke a function through the Lambda Invoke API (slotq local's by default) and print its answer", invokeCmd},
		{"demo", "run producers and workers on the embedded backend and show a live timeline of starts", demoCmd},
		{"bench", "run the demo workload several times and report spacing, lateness and makespan", benchCmd},
		{"help", "list the commands", helpCmd},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches on the first argument.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "slotq: unknown command %q\n\n", name)
	usage(stderr)
	return exitUsage
}

func helpCmd(_ context.Context, _ []string, stdout, _ io.Writer) int {
	usage(stdout)
	return exitOK
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "slotq runs jobs of named queues in time slots: at most one start per queue interval.\n\n")
	fmt.Fprintf(w, "Usage: slotq COMMAND [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'slotq COMMAND -h' for a command's flags.\n")
}
