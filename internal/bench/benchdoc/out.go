package benchdoc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Out says where a measuring command (slotq bench, bench lanes, bench
// fair, slotq-bench costs) writes its table besides stdout: between the
// markers of Table in the Markdown file Doc, as `make bench` does.
type Out struct {
	Doc, Table string
	// Note is a line written under the table: what the command line
	// does not show, such as what ran beside it.
	Note string
	// Command is the command line as the user gave it, without --doc and
	// --table.
	Command string
}

// Flags registers --doc, --table and --note on fs.
func Flags(fs *pflag.FlagSet) *Out {
	var o Out
	fs.StringVar(&o.Doc, "doc", "", "also write the table between the <!-- bench:TABLE begin/end --> markers of this Markdown file (make bench)")
	fs.StringVar(&o.Table, "table", "", "the table's name in --doc's markers")
	fs.StringVar(&o.Note, "note", "", "with --doc: a line written under the table (what ran beside the measurement)")
	return &o
}

// With returns o with the command that ran: path (such as "slotq bench")
// and the flags set on fs, --doc, --table and --note left out.
func (o *Out) With(path string, fs *pflag.FlagSet) Out {
	out := *o
	words := []string{path}
	fs.Visit(func(f *pflag.Flag) {
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

// Check refuses, before anything is measured, fewer than one run, --doc
// without --table (or the other way round), and a doc that cannot take
// the table.
func (o Out) Check(runs int) error {
	if runs < 1 {
		return errors.New("--runs must be at least 1")
	}
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
	if _, err := Replace(doc, o.Table, ""); err != nil {
		return fmt.Errorf("%s: %w", o.Doc, err)
	}
	return nil
}

// Finish writes t, if --doc was given, between its markers in Doc, with
// the host's load average now, and prints it as the doc holds it.
func (o Out) Finish(stdout io.Writer, t Table) error {
	if o.Doc == "" {
		return nil
	}
	t.Name = o.Table
	if o.Note != "" {
		t.Notes = append(t.Notes, o.Note)
	}
	block := t.Markdown(time.Now(), LoadAverage())
	fmt.Fprintf(stdout, "\nwritten to %s (table %s):\n\n%s", o.Doc, o.Table, block)
	return Write(o.Doc, o.Table, block)
}
