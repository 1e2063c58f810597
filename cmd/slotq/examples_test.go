package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/cli/clikit"
)

// TestExamplesWork runs the help's examples of the commands whose
// examples a newcomer copies first, in order, against the local runtime:
// each must do what it shows (an example that can never work, such as a
// --since more than an hour back or a target the queue does not allow,
// fails). A job with a target is enqueued without waiting for the call.
func TestExamplesWork(t *testing.T) {
	for _, path := range [][]string{{"queues", "starts"}, {"enqueue"}} {
		t.Run(strings.Join(path, " "), func(t *testing.T) {
			c := cli{t: t, endpoint: runLocalRuntime(t)}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(`{"rows":3}`), 0o644); err != nil {
				t.Fatal(err)
			}
			jobs := `{"id":"a-1","key":"tenant-a"}` + "\n" + `{"id":"b-1","key":"tenant-b","payload":{"n":2}}` + "\n"
			if err := os.WriteFile(filepath.Join(dir, "jobs.jsonl"), []byte(jobs), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			cmd, _, err := newRootCmd(io.Discard, io.Discard).Find(path)
			if err != nil {
				t.Fatal(err)
			}
			c.ok("queues", "create", "emails", "--interval", "10ms")
			c.ok("enqueue", "emails", "--kind", "echo", "--wait")
			for _, args := range exampleArgs(t, cmd) {
				if slices.Contains(args, "--target") {
					// A real host's target would be called: check
					// that the queue takes the job, without waiting.
					args = slices.DeleteFunc(args, func(a string) bool { return a == "--wait" })
				}
				c.ok(args...)
			}
		})
	}
}

// exampleArgs are cmd's example command lines, as arguments after
// "slotq" (a trailing comment dropped; single quotes as the shell reads
// them).
func exampleArgs(t *testing.T, cmd *cobra.Command) [][]string {
	t.Helper()
	var out [][]string
	for _, l := range strings.Split(cmd.Example, "\n") {
		l, ok := strings.CutPrefix(strings.TrimSpace(l), "$ slotq ")
		if !ok {
			continue
		}
		if i := strings.Index(l, "   #"); i >= 0 {
			l = l[:i]
		}
		var args []string
		for i, part := range strings.Split(l, "'") {
			if i%2 == 1 {
				args = append(args, part)
				continue
			}
			args = append(args, strings.Fields(part)...)
		}
		out = append(out, args)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no examples", cmd.CommandPath())
	}
	return out
}

// TestTargetNotAllowedSaysHow: a refused target is an error the user can
// fix, and the command says how (the queue's targets, and networks).
func TestTargetNotAllowedSaysHow(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.ok("queues", "create", "plain", "--interval", "1s")
	c.exits([]string{"enqueue", "plain", "--target", "https://hooks.example.com/x"}, clikit.ExitFail, "slotq queues configure QUEUE --targets")
	c.exits([]string{"enqueue", "plain", "--target", "https://hooks.example.com/x"}, clikit.ExitFail, "--allow-networks")
}
