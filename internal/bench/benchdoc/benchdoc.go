// Package benchdoc writes the figures a step of `make bench` measured into
// the docs that show them (docs/performance.md, docs/costs.md): each table
// goes between two marker comments of its name,
//
//	<!-- bench:NAME begin -->
//	…
//	<!-- bench:NAME end -->
//
// with the command that measured it and the host's load average beside
// it. Only what lies between the markers is replaced, so the prose around
// the tables is the docs' own, and a table the doc has no markers for is
// an error rather than a figure left behind.
package benchdoc

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"
)

// Table is a table of figures and what measured them.
type Table struct {
	// Name is the table's name in its markers.
	Name string
	// Command is the command that measured the figures, as a user runs it.
	Command string
	// Header names the columns; Rows hold the cells, one slice a row.
	Header []string
	Rows   [][]string
	// Body, if set, is Markdown written instead of Header and Rows (a
	// report that writes its own tables).
	Body string
	// Notes are lines written under the table.
	Notes []string
}

// Markdown is t as the doc holds it between its markers: a line with the
// command, the date and the load average, then the table and its notes.
func (t Table) Markdown(at time.Time, load string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`%s` on %s, load average %s:\n\n", t.Command, at.UTC().Format("2006-01-02 15:04 UTC"), load)
	if t.Body != "" {
		b.WriteString(strings.TrimRight(t.Body, "\n"))
		b.WriteString("\n")
	} else {
		row := func(cells []string) {
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
		row(t.Header)
		sep := make([]string, len(t.Header))
		for i := range sep {
			sep[i] = "---"
		}
		b.WriteString("|" + strings.Join(sep, "|") + "|\n")
		for _, r := range t.Rows {
			row(r)
		}
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.Notes {
			b.WriteString(n + "\n")
		}
	}
	return b.String()
}

// LoadAverage is the host's load average over 1, 5 and 15 minutes as
// /proc/loadavg gives it ("1.52 / 0.98 / 0.71 (1, 5, 15 min)"), or
// "unknown" where there is none.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return fmt.Sprintf("%s / %s / %s (1, 5, 15 min)", f[0], f[1], f[2])
}

// MarkerError says why a doc cannot take a table: its markers are missing,
// repeated or out of order.
type MarkerError struct {
	Name, Problem string
}

func (e *MarkerError) Error() string {
	return fmt.Sprintf("table %s: %s (want one %q line and one %q line after it)", e.Name, e.Problem, Begin(e.Name), End(e.Name))
}

// Begin and End are the marker lines of the table name.
func Begin(name string) string { return "<!-- bench:" + name + " begin -->" }
func End(name string) string   { return "<!-- bench:" + name + " end -->" }

// Replace returns doc with what lies between the markers of name replaced
// by block; the rest of doc is left as it was, byte for byte.
func Replace(doc []byte, name, block string) ([]byte, error) {
	begin, end := []byte(Begin(name)+"\n"), []byte("\n"+End(name))
	i := bytes.Index(doc, begin)
	switch {
	case i < 0:
		return nil, &MarkerError{Name: name, Problem: "no begin marker"}
	case bytes.Count(doc, begin) > 1:
		return nil, &MarkerError{Name: name, Problem: "two begin markers"}
	}
	body := i + len(begin)
	j := bytes.Index(doc[body-1:], end)
	switch {
	case j < 0 && bytes.Contains(doc, end):
		return nil, &MarkerError{Name: name, Problem: "the end marker comes before the begin marker"}
	case j < 0:
		return nil, &MarkerError{Name: name, Problem: "no end marker"}
	case bytes.Count(doc, end) > 1:
		return nil, &MarkerError{Name: name, Problem: "two end markers"}
	}
	j += body - 1 // the newline before the end marker
	out := make([]byte, 0, len(doc)-(j-body)+len(block))
	out = append(out, doc[:body]...)
	out = append(out, strings.TrimRight(block, "\n")...)
	return append(out, doc[j:]...), nil
}

// Write puts block between the markers of name in the file at path.
func Write(path, name, block string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := Replace(doc, name, block)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}
