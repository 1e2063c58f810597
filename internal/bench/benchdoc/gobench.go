package benchdoc

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// GoBench reads the output of `go test -bench` and returns its results as
// a table: a row per benchmark, with its package, iterations and each
// measure it reported (ns/op, B/op, allocs/op, and any of its own), in the
// order they first came. Every line read is copied to echo. Output that
// reports a failure (a FAIL or panic line) is an error: its figures are
// not written.
func GoBench(r io.Reader, echo io.Writer) (Table, error) {
	type result struct {
		pkg, name, n string
		by           map[string]string
	}
	var (
		rs    []result
		units []string
		pkg   string
		// failed is the first line that reports a failure.
		failed string
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		io.WriteString(echo, line+"\n")
		if failed == "" && failure(line) {
			failed = line
		}
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		res := result{pkg: pkg, name: strings.TrimPrefix(f[0], "Benchmark"), n: f[1], by: map[string]string{}}
		for i := 2; i+1 < len(f); i += 2 {
			res.by[f[i+1]] = f[i]
			if !slices.Contains(units, f[i+1]) {
				units = append(units, f[i+1])
			}
		}
		rs = append(rs, res)
	}
	if err := sc.Err(); err != nil {
		return Table{}, err
	}
	if failed != "" {
		return Table{}, fmt.Errorf("the benchmarks failed (%q): no table written", failed)
	}
	t := Table{Header: append([]string{"package", "benchmark", "iterations"}, units...)}
	for _, res := range rs {
		row := []string{res.pkg, res.name, res.n}
		for _, u := range units {
			row = append(row, res.by[u])
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// Lines reads lines and returns a table of those that hold prefix: a row
// per such line, numbered, with what follows the prefix. Every line read
// is copied to echo. Output that reports a failure (a test's FAIL or a
// panic) is an error, as for GoBench.
func Lines(r io.Reader, echo io.Writer, prefix string) (Table, error) {
	t := Table{Header: []string{"run", strings.TrimSuffix(strings.TrimSpace(prefix), ":")}}
	err := eachLine(r, echo, prefix, func(_, rest string) error {
		t.Rows = append(t.Rows, []string{strconv.Itoa(len(t.Rows) + 1), strings.ReplaceAll(rest, "|", `\|`)})
		return nil
	})
	if err != nil {
		return Table{}, err
	}
	return t, nil
}

// eachLine reads lines, copies every one to echo, and calls row with
// each line that holds prefix and what follows the prefix on it. A line
// that reports a failure (a test's FAIL or a panic) ends the reading
// with an error, as an error of row does.
func eachLine(r io.Reader, echo io.Writer, prefix string, row func(line, rest string) error) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		io.WriteString(echo, line+"\n")
		if failure(line) {
			return fmt.Errorf("the step failed (%q): no table written", line)
		}
		if _, rest, ok := strings.Cut(line, prefix); ok {
			if err := row(line, rest); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

// failure reports whether a line of go test's output reports a failure.
func failure(line string) bool {
	return strings.HasPrefix(line, "FAIL") || strings.HasPrefix(strings.TrimSpace(line), "--- FAIL") || strings.HasPrefix(line, "panic:")
}

// MarkdownLines reads lines and returns a table whose Body is what
// follows prefix on the lines that hold it, in order: a test that logs a
// Markdown table of its own, a line each. Every line read is copied to
// echo; output that reports a failure is an error, as for Lines.
func MarkdownLines(r io.Reader, echo io.Writer, prefix string) (Table, error) {
	var t Table
	err := eachLine(r, echo, prefix, func(_, rest string) error {
		t.Body += rest + "\n"
		return nil
	})
	if err != nil {
		return Table{}, err
	}
	return t, nil
}

// Cells reads the lines that hold prefix, as Lines does, each a row of
// named cells after the prefix: "name=value; name=value". The names of the
// first row are the header; every row must name the same cells in the
// same order. Every line read is copied to echo; a failure is an error, as
// in Lines.
func Cells(r io.Reader, echo io.Writer, prefix string) (Table, error) {
	var t Table
	err := eachLine(r, echo, prefix, func(line, rest string) error {
		var names, row []string
		for cell := range strings.SplitSeq(rest, "; ") {
			name, value, ok := strings.Cut(cell, "=")
			if !ok {
				return fmt.Errorf("cell %q of %q: want name=value", cell, line)
			}
			names = append(names, strings.TrimSpace(name))
			row = append(row, strings.ReplaceAll(strings.TrimSpace(value), "|", `\|`))
		}
		if t.Header == nil {
			t.Header = names
		} else if !slices.Equal(names, t.Header) {
			return fmt.Errorf("row %d names its cells %q; the first row %q", len(t.Rows)+1, names, t.Header)
		}
		t.Rows = append(t.Rows, row)
		return nil
	})
	if err != nil {
		return Table{}, err
	}
	return t, nil
}

// Only is t with the rows that match re, a row read as its cells joined
// by spaces ("package benchmark iterations …"), and without the columns
// that none of those rows fills: a doc that shows some of a run's
// benchmarks (docs/costs.md the resume run's) takes them from the same
// output as the doc that shows them all.
func (t Table) Only(re *regexp.Regexp) Table {
	var rows [][]string
	for _, row := range t.Rows {
		if re.MatchString(strings.Join(row, " ")) {
			rows = append(rows, row)
		}
	}
	out := t
	out.Header, out.Rows = nil, make([][]string, len(rows))
	for c, name := range t.Header {
		if !slices.ContainsFunc(rows, func(row []string) bool { return c < len(row) && row[c] != "" }) {
			continue
		}
		out.Header = append(out.Header, name)
		for i, row := range rows {
			out.Rows[i] = append(out.Rows[i], row[c])
		}
	}
	return out
}
