package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// referenceTitle and referenceIntro open docs/cli.md.
const (
	referenceTitle = "# The slotq command line: what does each command do, and which flags does it take?"
	referenceIntro = "Generated from the commands' own help (`slotq COMMAND --help`) by `make docs`\n" +
		"(`go run ./cmd/slotq reference > docs/cli.md`): do not edit it by hand. A test\n" +
		"(cmd/slotq `TestCLIReference`) fails when this page and the commands' help differ.\n" +
		"[usage.md](usage.md#the-slotq-cli) shows the commands at work; [operations.md](operations.md#error-codes)\n" +
		"lists the error codes they print."
)

// newReferenceCmd is `slotq reference`, hidden: the CLI reference,
// docs/cli.md, written from every command's help.
func newReferenceCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "reference",
		Short:  "Write the CLI reference (docs/cli.md) from every command's help",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), cliReference())
			return err
		},
	}
}

// cliReference is docs/cli.md: a table of contents, then each command's
// help as `slotq CMD --help` prints it, in the order help lists them,
// hidden commands left out. The SLOTQ_* variables some flags take their
// defaults from are unset first, so the page is the same on every machine.
func cliReference() string {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "SLOTQ_") {
			os.Unsetenv(name)
		}
	}
	root := newRootCmd(io.Discard, io.Discard)
	var cmds []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			if (sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand()) && sub.Name() != "help" {
				walk(sub)
			}
		}
	}
	walk(root)

	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s\n\n", referenceTitle, referenceIntro)
	for _, c := range cmds {
		depth := strings.Count(c.CommandPath(), " ")
		fmt.Fprintf(&b, "%s- [`%s`](#%s) — %s\n", strings.Repeat("  ", max(depth-1, 0)), c.CommandPath(),
			strings.ReplaceAll(c.CommandPath(), " ", "-"), c.Short)
	}
	for _, c := range cmds {
		var help bytes.Buffer
		c.SetOut(&help)
		c.HelpFunc()(c, nil)
		c.SetOut(nil)
		fmt.Fprintf(&b, "\n## %s\n\n```text\n%s```\n", c.CommandPath(), help.String())
	}
	return b.String()
}
