package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slotq/slotq/internal/bench/benchdoc"
	"github.com/slotq/slotq/internal/bench/costs/costopt"
	"github.com/slotq/slotq/internal/cli/clikit"
)

// benchPkg is the slotq-bench command in slotq's module.
const benchPkg = "./internal/bench/cmd/slotq-bench"

// newCostsCmd measures what a job costs on AWS. The measurement runs on
// DynamoDB Local and moto_server, whose launchers this binary does not
// link: it runs `slotq-bench costs` (internal/bench/benchcmd) with the
// same flags, built from the checkout it is run in, else found on PATH.
func newCostsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "costs",
		Short: "Measure what a job costs on AWS, on DynamoDB Local and moto (make bench's last step)",
		Long: "Measures what one job costs on AWS: runs the engine on its real adapters against DynamoDB\n" +
			"Local (Java 17) and moto_server on loopback, counts DynamoDB request units, SQS requests,\n" +
			"Lambda invocations and Lambda time per job for each scenario, prices them per million jobs\n" +
			"(us-east-1 on-demand list prices) and measures enqueue throughput. Prints Markdown tables\n" +
			"(docs/costs.md); progress goes to stderr. Takes a few minutes (at most " + clikit.Human(costopt.Timeout) + ").\n" +
			"It runs `slotq-bench costs`, which starts the emulators: inside a checkout of slotq it builds\n" +
			"it from " + benchPkg + ", elsewhere it runs slotq-bench from PATH.",
		Args: nArgs(0, 0),
	}
	var o costopt.Options
	o.AddFlags(cmd.Flags())
	doc := benchdoc.Flags(cmd.Flags())
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		if err := doc.Check(o.Runs); err != nil {
			fmt.Fprintf(stderr, "slotq costs: %v\n", err)
			return clikit.ExitUsage
		}
		code, err := runBench(cmd.Context(), append([]string{"costs"}, flagArgs(cmd.Flags())...), stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "slotq costs: %v\n", err)
			return clikit.ExitFail
		}
		return code
	})
	return cmd
}

// flagArgs are the flags set on fs, as arguments that set them again.
func flagArgs(fs *pflag.FlagSet) []string {
	var args []string
	fs.Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if s, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(s.GetSlice(), ",")
		}
		args = append(args, "--"+f.Name+"="+v)
	})
	return args
}

// runBench runs slotq-bench with args and returns its exit code. Inside a
// checkout of slotq it builds benchPkg first, into a temporary folder,
// rather than `go run` it, so that a stop reaches slotq-bench itself and
// it stops its emulators; elsewhere it runs slotq-bench from PATH.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	bin, err := exec.LookPath("slotq-bench")
	if root, ok := checkout(); ok {
		dir, err := os.MkdirTemp("", "slotq-bench")
		if err != nil {
			return clikit.ExitFail, err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "slotq-bench")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, benchPkg)
		build.Dir, build.Stdout, build.Stderr = root, stderr, stderr
		if err := build.Run(); err != nil {
			return clikit.ExitFail, fmt.Errorf("build %s: %w", benchPkg, err)
		}
	} else if err != nil {
		return clikit.ExitFail, errors.New("it measures on DynamoDB Local and moto_server, which this binary does not start:\n" +
			"run it inside a checkout of slotq (go run ./cmd/slotq costs, or go run " + benchPkg + " costs),\n" +
			"or put slotq-bench on PATH (go install github.com/slotq/slotq/internal/bench/cmd/slotq-bench)")
	}
	run := exec.CommandContext(ctx, bin, args...)
	run.Stdout, run.Stderr = stdout, stderr
	run.Cancel = func() error { return run.Process.Signal(os.Interrupt) }
	run.WaitDelay = time.Minute
	err = run.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() > 0 {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return clikit.ExitFail, err
	}
	return clikit.ExitOK, nil
}

// checkout returns the root of the checkout of slotq that holds the
// working directory, if it is in one and `go` is on PATH.
func checkout() (string, bool) {
	if _, err := exec.LookPath("go"); err != nil {
		return "", false
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			first, _, _ := strings.Cut(string(mod), "\n")
			_, err := os.Stat(filepath.Join(dir, benchPkg))
			return dir, strings.TrimSpace(first) == "module github.com/slotq/slotq" && err == nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
