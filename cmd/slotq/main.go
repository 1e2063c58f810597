// Command slotq is slotq's program for people.
//
// Its commands come in two groups (`slotq --help` lists them):
//
//	slotq queues list|create|configure|pause|resume|purge|delete|stats   operate queues
//	slotq jobs list|get|cancel|retry                                     operate jobs
//	slotq keys list|get|set|clear                                        a queue's keys and their limits
//	slotq enqueue QUEUE (--kind K | --target T) [--payload JSON|@FILE|-] [--key KEY] [--wait]
//	slotq redrive                       move the slot queue's dead letters back
//
//	slotq local                         run the stack in this process (make run)
//	slotq invoke FUNCTION [PAYLOAD]     invoke a function through the Invoke API
//	slotq timeline QUEUE [ID ...]       a picture of starts against their slots
//	slotq demo | bench [lanes] | costs  the embedded demo, the benchmarks, the cost report
//	slotq sam invoke|start-lambda       the built bootstraps, as sam local runs them
//	slotq template                      a project's SAM template (docs/deploy.md)
//
// The commands that talk to a stack call pkg/client, which does the work:
// on the local runtime (--endpoint-url; default http://127.0.0.1:3001) or
// on a deployed stack (--stack NAME reads the function names from its
// outputs). They print aligned tables, or JSON with --json; errors go to
// stderr with their code and field.
//
// The command line is github.com/spf13/cobra's, as gh's and kubectl's
// are: `slotq help CMD`, command groups, shell completion and --flag
// spelling come with it. The command package only parses and prints.
//
// Exit status: 0 done, 1 the operation failed (the stack refused it, the
// function failed, the stack could not be reached), 2 bad command line;
// enqueue --wait and jobs get --wait add 3 (the job failed or was
// cancelled) and 4 (--timeout came first).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/buildinfo"
	"github.com/slotq/slotq/internal/cli/clikit"
)

// Command groups, in the order help lists them.
const (
	groupOps = "ops"
	groupDev = "dev"
)

func init() {
	cobra.EnableCommandSorting = false // help lists commands as newRootCmd adds them
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args and returns the process's exit code.
// Errors cobra finds (an unknown command or flag, wrong arguments) are
// bad command lines: exit 2.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if args == nil {
		args = []string{} // not nil: cobra would read os.Args
	}
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var code clikit.ExitCode
	switch {
	case err == nil:
		return clikit.ExitOK
	case errors.As(err, &code):
		return int(code)
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
	return clikit.ExitUsage
}

// newRootCmd builds the command tree, printing to stdout and stderr. Each
// call builds a new one, so that every run starts from the flags'
// defaults.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "slotq COMMAND",
		Short: "Run jobs of named queues in time slots, never faster than each queue's limit.",
		Long: "Run jobs of named queues in time slots, never faster than each queue's limit: an interval,\n" +
			"a rate with a burst, or a window (and, for keyed jobs, each key's).\n\n" +
			"The queue and job commands talk to a stack: the local runtime (`slotq local`,\n" +
			"`make run`) on " + clikit.DefaultEndpoint + " by default, another Invoke API with\n" +
			"--endpoint-url, or a deployed stack with --stack NAME.",
		Example: "  $ slotq local                                  # the stack in this process (make run)\n" +
			"  $ slotq queues create emails --interval 2s\n" +
			"  $ slotq enqueue emails --kind echo --payload '{\"to\":\"ada@example.com\"}' --wait\n" +
			"  $ slotq queues stats emails --stack slotq-prod --profile prod",
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Annotations: map[string]string{
			"exit": clikit.ExitStatus + "\n" +
				"enqueue --wait and jobs get --wait: 3 the job failed or was cancelled, 4 --timeout came first.",
			"learn": "Use 'slotq <command> <subcommand> --help' (or 'slotq help <command>') for more about a command,\n" +
				"'slotq help exit-codes' for the exit codes. Read the README and docs/operations.md\n" +
				"(the error codes, the local runtime, a deployed stack).",
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("slotq version {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	root.SetHelpFunc(help)
	root.AddGroup(
		&cobra.Group{ID: groupOps, Title: "QUEUE AND JOB COMMANDS"},
		&cobra.Group{ID: groupDev, Title: "LOCAL DEVELOPMENT AND BENCHMARK COMMANDS"},
	)
	root.AddCommand(
		newQueuesCmd(),
		newJobsCmd(),
		newKeysCmd(),
		newSchedulesCmd(),
		grouped(groupOps, newEnqueueCmd(nil)),
		grouped(groupOps, newRedriveCmd(nil)),
		grouped(groupOps, newConsoleCmd()),
		grouped(groupDev, newLocalCmd()),
		grouped(groupDev, newInvokeCmd()),
		grouped(groupDev, newTimelineCmd()),
		grouped(groupDev, newDemoCmd()),
		grouped(groupDev, newBenchCmd()),
		grouped(groupDev, newCostsCmd()),
		grouped(groupDev, newSamCmd()),
		grouped(groupDev, newTemplateCmd()),
	)
	root.AddCommand(oldNames()...)
	root.AddCommand(newExitCodesTopic())
	root.AddCommand(newReferenceCmd())
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			parent(c) // an unknown shell is a bad command line
		}
	}
	return root
}

func grouped(id string, cmd *cobra.Command) *cobra.Command {
	cmd.GroupID = id
	return cmd
}

// oldNames are the bare verbs slotq had before `slotq queues VERB`:
// hidden, kept for one release, each saying on stderr what to type now.
func oldNames() []*cobra.Command {
	var cmds []*cobra.Command
	for _, c := range []*cobra.Command{newCreateCmd(nil), newConfigureCmd(nil), newPauseCmd(nil), newResumeCmd(nil),
		newPurgeCmd(nil), newDeleteCmd(nil), newStatsCmd(nil)} {
		c.Hidden = true
		runE := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(cmd.ErrOrStderr(), "slotq %s: deprecated: use 'slotq queues %s' (the bare verb goes in a later release)\n", cmd.Name(), cmd.Name())
			return runE(cmd, args)
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// parent returns a command that only groups its subcommands: alone it
// prints its help; with an argument that names none, it is a bad
// command line.
func parent(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = cobra.NoArgs
	if cmd.RunE == nil {
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	cmd.AddCommand(subs...)
	return cmd
}

// runE adapts a command body that returns its exit code.
func runE(body func(cmd *cobra.Command, args []string) int) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if code := body(cmd, args); code != clikit.ExitOK {
			return clikit.ExitCode(code)
		}
		return nil
	}
}

// nArgs checks that a command has between min and max arguments (max -1:
// no limit), naming them as its Use line does.
func nArgs(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= min && (max < 0 || len(args) <= max) {
			return nil
		}
		if max == 0 {
			return fmt.Errorf("unexpected argument %q", args[0])
		}
		_, names, _ := strings.Cut(cmd.Use, " ")
		return fmt.Errorf("want arguments %s, got %d", names, len(args))
	}
}

// version is the slotq module's version this binary was built from and
// its VCS revision and time (buildinfo.String): "v0.4.0 (commit
// 1a2b3c4d5e6f, 2025-06-01T10:00:00Z)".
func version() string { return buildinfo.String() }
