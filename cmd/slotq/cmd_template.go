package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq"
	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/local/samgen"
)

// newTemplateCmd writes a project's SAM template: slotq's, of the version
// this command was built from, with the project's stack.yaml merged in
// (internal/local/samgen; docs/deploy.md).
func newTemplateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "template",
		Short: "Write a project's SAM template: slotq's stack with the project's own worker and parameters",
		Long: "Writes the SAM template of a project's slotq stack: slotq's template.yaml, of the slotq\n" +
			"version this command is built from, with the project's own part (--stack, such as its\n" +
			"parameters and its worker's environment) merged in. In a project whose go.mod requires\n" +
			"slotq, `go tool slotq template --stack stack.yaml -o template.yaml` writes the stack of\n" +
			"the version it requires: upgrading slotq is `go get` and this command again.\n" +
			"See docs/deploy.md for what stack.yaml may hold.",
		Example: "  $ go tool slotq template --stack stack.yaml -o template.yaml",
		Args:    nArgs(0, 0),
	}
	part := cmd.Flags().String("stack", "", "the project's part of the stack (YAML `file`); none: slotq's stack as it is")
	out := cmd.Flags().StringP("output", "o", "", "write the template to this `file` instead of stdout")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		return writeTemplate(cmd.OutOrStdout(), cmd.ErrOrStderr(), *part, *out)
	})
	return cmd
}

func writeTemplate(stdout, stderr io.Writer, part, out string) int {
	var mine []byte
	if part != "" {
		b, err := os.ReadFile(part)
		if err != nil {
			fmt.Fprintf(stderr, "slotq template: %v\n", err)
			return clikit.ExitUsage
		}
		mine = b
	}
	t, err := samgen.Generate(slotq.Template, mine)
	if err != nil {
		fmt.Fprintf(stderr, "slotq template: %s: %v\n", part, err)
		return clikit.ExitFail
	}
	header := fmt.Sprintf("# Written by `slotq template` (slotq %s) from slotq's template.yaml", version())
	if part != "" {
		header += " and " + part
	}
	t = append([]byte(header+". Do not edit:\n# change "+orDefault(part, "the command line")+" and run it again.\n"), t...)
	if out == "" {
		_, err = stdout.Write(t)
	} else {
		err = os.WriteFile(out, t, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "slotq template: %v\n", err)
		return clikit.ExitFail
	}
	return clikit.ExitOK
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
