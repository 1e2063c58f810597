package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slotq/slotq/internal/dev/benchdoc"
)

// docOut says where a measuring command (bench, bench lanes, costs) writes
// its table besides stdout: between the markers of Table in the Markdown
// file Doc (internal/dev/benchdoc), as `make bench` does.
type docOut struct {
	Doc, Table string
	// Note is a line written under the table: what the command line
	// does not show, such as what ran beside it.
	Note string
	// Command is the command line as the user gave it, without --doc and
	// --table.
	Command string
}

func docFlags(fs *pflag.FlagSet) *docOut {
	var o docOut
	fs.StringVar(&o.Doc, "doc", "", "also write the table between the <!-- bench:TABLE begin/end --> markers of this Markdown file (make bench)")
	fs.StringVar(&o.Table, "table", "", "the table's name in --doc's markers")
	fs.StringVar(&o.Note, "note", "", "with --doc: a line written under the table (what ran beside the measurement)")
	return &o
}

// with returns o with the command that runs cmd as given: its path and
// the flags set, --doc and --table left out.
func (o *docOut) with(cmd *cobra.Command) docOut {
	out := *o
	words := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch {
		case f.Name == "doc" || f.Name == "table" || f.Name == "note":
		case f.Value.Type() == "bool" && f.Value.String() == "true":
			words = append(words, "--"+f.Name)
		case f.Value.Type() == "bool":
			words = append(words, "--"+f.Name+"=false")
		default:
			words = append(words, "--"+f.Name, f.Value.String())
		}
	})
	out.Command = strings.Join(words, " ")
	return out
}

// check refuses --doc without --table (or the other way round), and a doc
// that cannot take the table, before anything is measured.
func (o docOut) check() error {
	if (o.Doc == "") != (o.Table == "") {
		return errors.New("--doc and --table go together")
	}
	if o.Doc == "" {
		return nil
	}
	doc, err := os.ReadFile(o.Doc)
	if err != nil {
		return err
	}
	if _, err := benchdoc.Replace(doc, o.Table, ""); err != nil {
		return fmt.Errorf("%s: %w", o.Doc, err)
	}
	return nil
}

// write prints t as the doc holds it, with the host's load average now,
// and writes it between its markers in Doc.
func (o docOut) write(stdout io.Writer, t benchdoc.Table) error {
	t.Name = o.Table
	if o.Note != "" {
		t.Notes = append(t.Notes, o.Note)
	}
	block := t.Markdown(time.Now(), benchdoc.LoadAverage())
	fmt.Fprintf(stdout, "\nwritten to %s (table %s):\n\n%s", o.Doc, o.Table, block)
	return benchdoc.Write(o.Doc, o.Table, block)
}

// checkRuns refuses, before anything is measured, fewer than one run and
// a --doc and --table that cannot take the table (check), saying why on
// stderr. name is the command ("bench lanes"). When ok is false the
// command ends with code.
func (o docOut) checkRuns(name string, runs int, stderr io.Writer) (code int, ok bool) {
	if runs < 1 {
		fmt.Fprintf(stderr, "slotq %s: --runs must be at least 1\n", name)
		return exitUsage, false
	}
	if err := o.check(); err != nil {
		fmt.Fprintf(stderr, "slotq %s: %v\n", name, err)
		return exitUsage, false
	}
	return exitOK, true
}

// finish ends a measuring command whose exit code is code: it writes t
// to Doc if --doc was given (write), and fails if it could not.
func (o docOut) finish(name string, stdout, stderr io.Writer, t benchdoc.Table, code int) int {
	if o.Doc == "" {
		return code
	}
	if err := o.write(stdout, t); err != nil {
		fmt.Fprintf(stderr, "slotq %s: %v\n", name, err)
		return exitFail
	}
	return code
}
