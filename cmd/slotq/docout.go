package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slotq/slotq/internal/bench/benchdoc"
)

// docOut says where a measuring command (bench, bench lanes, bench fair)
// writes its table besides stdout (benchdoc.Out), with the exit codes of
// slotq.
type docOut struct{ *benchdoc.Out }

func docFlags(fs *pflag.FlagSet) *docOut { return &docOut{benchdoc.Flags(fs)} }

// with returns o with the command that runs cmd as given: its path and
// the flags set, --doc and --table left out.
func (o *docOut) with(cmd *cobra.Command) docOut {
	out := o.With(cmd.CommandPath(), cmd.Flags())
	return docOut{&out}
}

// checkRuns refuses, before anything is measured, fewer than one run and
// a --doc and --table that cannot take the table, saying why on stderr.
// name is the command ("bench lanes"). When ok is false the command ends
// with code.
func (o docOut) checkRuns(name string, runs int, stderr io.Writer) (code int, ok bool) {
	if err := o.Check(runs); err != nil {
		fmt.Fprintf(stderr, "slotq %s: %v\n", name, err)
		return exitUsage, false
	}
	return exitOK, true
}

// finish ends a measuring command whose exit code is code: it writes t
// to Doc if --doc was given, and fails if it could not.
func (o docOut) finish(name string, stdout, stderr io.Writer, t benchdoc.Table, code int) int {
	if err := o.Finish(stdout, t); err != nil {
		fmt.Fprintf(stderr, "slotq %s: %v\n", name, err)
		return exitFail
	}
	return code
}
