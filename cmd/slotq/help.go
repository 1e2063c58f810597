package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slotq/slotq/internal/cli/clikit"
)

// help prints a command's help as gh does: what it does, USAGE, its
// subcommands by group, its flags, examples, exit status, where to learn
// more.
func help(cmd *cobra.Command, _ []string) {
	w := cmd.OutOrStdout()
	desc := cmd.Long
	if desc == "" {
		desc = cmd.Short
	}
	fmt.Fprintln(w, strings.TrimSpace(desc))
	section(w, "USAGE", cmd.UseLine())
	if len(cmd.Aliases) > 0 {
		section(w, "ALIASES", strings.Join(cmd.Aliases, ", "))
	}
	if cmd.HasAvailableSubCommands() {
		subcommands(w, cmd)
	}
	own, conn := splitFlags(cmd.LocalFlags())
	inherited, inheritedConn := splitFlags(cmd.InheritedFlags())
	conn = append(conn, inheritedConn...)
	if len(own) > 0 {
		section(w, "FLAGS", flagUsages(own))
	}
	if len(conn) > 0 {
		section(w, "CONNECTION FLAGS", flagUsages(conn))
	}
	if len(inherited) > 0 {
		section(w, "INHERITED FLAGS", flagUsages(inherited))
	}
	if cmd.Example != "" {
		section(w, "EXAMPLES", strings.TrimRight(cmd.Example, "\n"))
	}
	if exit, ok := annotation(cmd, "exit"); ok {
		section(w, "EXIT STATUS", exit)
	} else if cmd.Runnable() && !cmd.HasAvailableSubCommands() {
		section(w, "EXIT STATUS", clikit.ExitStatus)
	}
	learn := "Use 'slotq help exit-codes' for the exit codes, 'slotq --help' for every command."
	if l, ok := annotation(cmd, "learn"); ok {
		learn = l
	} else if cmd.HasAvailableSubCommands() {
		learn = fmt.Sprintf("Use '%s <command> --help' for more about a command.", cmd.CommandPath())
	}
	section(w, "LEARN MORE", learn)
}

func annotation(cmd *cobra.Command, key string) (string, bool) {
	v, ok := cmd.Annotations[key]
	return v, ok
}

// section prints a heading and its body, indented two spaces.
func section(w io.Writer, title, body string) {
	fmt.Fprintf(w, "\n%s\n", title)
	for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		if l == "" {
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintf(w, "  %s\n", strings.TrimPrefix(l, "  "))
	}
}

// subcommands lists cmd's subcommands under their groups' titles, then
// the others, then the help topics.
func subcommands(w io.Writer, cmd *cobra.Command) {
	width := 0
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			width = max(width, len(c.Name())+1)
		}
	}
	list := func(title string, keep func(*cobra.Command) bool) {
		var b strings.Builder
		for _, c := range cmd.Commands() {
			if keep(c) {
				fmt.Fprintf(&b, "%-*s  %s\n", width, c.Name()+":", c.Short)
			}
		}
		if b.Len() > 0 {
			section(w, title, b.String())
		}
	}
	for _, g := range cmd.Groups() {
		list(g.Title, func(c *cobra.Command) bool { return c.GroupID == g.ID && c.IsAvailableCommand() })
	}
	other := "COMMANDS"
	if len(cmd.Groups()) > 0 {
		other = "ADDITIONAL COMMANDS"
	}
	list(other, func(c *cobra.Command) bool { return c.GroupID == "" && c.IsAvailableCommand() })
	list("HELP TOPICS", (*cobra.Command).IsAdditionalHelpTopicCommand)
}

// splitFlags parts fs into the command's own flags and the connection
// flags, leaving out the hidden ones.
func splitFlags(fs *pflag.FlagSet) (own, conn []*pflag.Flag) {
	fs.VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Hidden:
		case len(f.Annotations[clikit.FlagGroup]) > 0:
			conn = append(conn, f)
		default:
			own = append(own, f)
		}
	})
	return own, conn
}

func flagUsages(flags []*pflag.Flag) string {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	for _, f := range flags {
		fs.AddFlag(f)
	}
	fs.SortFlags = false
	return fs.FlagUsagesWrapped(100)
}

// newExitCodesTopic is `slotq help exit-codes`.
func newExitCodesTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "What slotq's exit codes mean",
		Long: "slotq exits with:\n\n" +
			"  0  done\n" +
			"  1  the operation failed: the stack refused it (the error names its code and field),\n" +
			"     a function failed, or the stack could not be reached\n" +
			"  2  bad command line: an unknown command or flag, a missing or extra argument, a missing\n" +
			"     flag such as enqueue's --kind, purge or delete without --yes off a terminal\n" +
			"  3  enqueue --wait, jobs get --wait: the job failed or was cancelled\n" +
			"  4  enqueue --wait, jobs get --wait: --timeout came first (the job still waits or runs)",
	}
}
