// Command slotq is slotq's program for people.
//
//	slotq enqueue QUEUE [--kind K | --target T] [--payload JSON|@FILE|-] [--id ID] [--not-before T] [--key KEY]
//	slotq queues                      list the queues
//	slotq stats QUEUE                 waiting, parked, failed, lag, backlog, lanes, configuration
//	slotq pause QUEUE [--until T | --for D]
//	slotq resume QUEUE
//	slotq jobs list QUEUE [--status parked|failed]
//	slotq jobs get QUEUE ID
//	slotq jobs cancel QUEUE ID
//	slotq create QUEUE [--interval D --max-running N …]   slotq configure QUEUE [--interval D …]
//	slotq purge QUEUE                 slotq delete QUEUE
//	slotq timeline QUEUE [ID ...]     a picture of starts against their slots
//	slotq local   run the stack in this process (make run): Invoke API, event source, schedule
//	slotq invoke  invoke a function through the Invoke API and print its answer
//	slotq demo    run producers and workers on the embedded backend; show a timeline (make demo)
//	slotq bench   run the demo workload several times and report its figures
//	slotq bench lanes   the same for keyed jobs: overlaps and order per key, makespan (make bench)
//	slotq costs   measure what a job costs on AWS on DynamoDB Local + moto (make bench)
//	slotq sam invoke FUNCTION [--event FILE]   build a function's bootstrap, invoke it as `sam local invoke` (make invoke)
//	slotq sam start-lambda   the built bootstraps behind the Invoke API, event source and schedule (make start-lambda)
//	slotq template [--stack stack.yaml] [-o FILE]   a project's SAM template: slotq's stack with its own worker (docs/deploy.md)
//
// The commands that talk to a stack call pkg/client, which does the work:
// on the local runtime (--endpoint, SLOTQ_ENDPOINT; default
// http://127.0.0.1:3001), or on a deployed stack (--stack NAME reads the
// function names from its outputs; or --enqueue-function and
// --admin-function). They print aligned tables, or JSON with --json;
// errors go to stderr with their code and field.
//
// Exit status: 0 done, 1 the operation failed (the stack refused it, the
// function failed, the stack could not be reached), 2 bad command line.
// Each command has its own flags; `slotq COMMAND --help` lists them with
// their defaults.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// A runFunc runs one subcommand: it parses its own flags from args and
// returns the process's exit code.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// A command is one subcommand as help lists it.
type command struct {
	name    string
	summary string
	run     runFunc
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
		{"enqueue", "enqueue a job on a queue and print its ticket, slot and position", enqueueCmd},
		{"queues", "list the queues", queuesCmd},
		{"stats", "show a queue's figures: waiting, parked, failed, lag, backlog, running, keys", statsCmd},
		{"pause", "pause a queue, until a time or for a while if given", pauseCmd},
		{"resume", "lift a queue's pause and release its parked jobs", resumeCmd},
		{"jobs", "list a queue's parked or failed jobs; get, cancel or retry a job (jobs list|get|cancel|retry)", jobsCmd},
		{"create", "create a queue", createCmd},
		{"configure", "change a queue's settings", configureCmd},
		{"purge", "cancel every job of a queue that has not started", purgeCmd},
		{"redrive", "move the slot queue's dead-letter messages back, each checked against its job", redriveCmd},
		{"delete", "delete a queue", deleteCmd},
		{"timeline", "draw starts of a queue against their slots: gaps and lateness", timelineCmd},
		{"local", "run the stack in this process: Invoke API on 127.0.0.1:3001, SQS event source, schedule (make run)", localCmd},
		{"invoke", "invoke a function through the Lambda Invoke API (slotq local's by default) and print its answer", invokeCmd},
		{"demo", "run producers and workers on the embedded backend and show a live timeline of starts", demoCmd},
		{"bench", "run the demo workload several times and report spacing, lateness and makespan (bench lanes: keyed jobs)", benchCmd},
		{"costs", "measure what a job costs on AWS, on DynamoDB Local and moto (make bench's last step)", costsCmd},
		{"sam", "run the built bootstraps as sam local does, without Docker (sam invoke|start-lambda)", samCmd},
		{"template", "write a project's SAM template: slotq's stack with the project's own worker and parameters", templateCmd},
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

// subcommands runs the subcommand of group that args name; with none, or
// an unknown one, it prints usage (to stdout for help, exit 0; else to
// stderr, exit 2).
func subcommands(ctx context.Context, group string, subs map[string]runFunc, usage string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if run, ok := subs[args[0]]; ok {
			return run(ctx, args[1:], stdout, stderr)
		}
	}
	w, code := stderr, exitUsage
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help") {
		w, code = stdout, exitOK
	} else if len(args) > 0 {
		fmt.Fprintf(stderr, "slotq %s: unknown command %q\n\n", group, args[0])
	}
	fmt.Fprint(w, usage)
	return code
}

func helpCmd(_ context.Context, _ []string, stdout, _ io.Writer) int {
	usage(stdout)
	return exitOK
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "slotq runs jobs of named queues in time slots: at most one start per queue interval.\n\n")
	fmt.Fprintf(w, "Usage: slotq COMMAND [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nThe commands that talk to a stack call the local runtime (--endpoint, env SLOTQ_ENDPOINT;\n"+
		"default %s) or a deployed stack (--stack NAME, env SLOTQ_STACK: function names from\n"+
		"its outputs; or --enqueue-function and --admin-function). --json prints JSON for scripts.\n", DefaultEndpoint)
	fmt.Fprintf(w, "\nExit status: 0 done, 1 the operation failed, 2 bad command line.\n")
	fmt.Fprintf(w, "Run 'slotq COMMAND --help' for a command's flags and their defaults.\n")
}
