// Command benchdoc writes a table of figures read from stdin between the
// markers of a Markdown doc (internal/bench/benchdoc), as `make bench` does
// for the steps that are not slotq commands: the Go benchmarks' output
// (-format gobench) and the lines of a test that logs its figures
// (-format lines -prefix 'figures: '), or a table a test logs a line at a
// time (-format markdown -prefix 'table: '), or of named cells, a column
// each (-format cells: "figures: rate=50/1s; batch=1"); -match keeps the
// rows that match a regular expression. What it reads it prints as it goes,
// then the table as the doc holds it.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"github.com/slotq/slotq/internal/bench/benchdoc"
)

func main() {
	doc := flag.String("doc", "", "the Markdown file to write the table into")
	table := flag.String("table", "", "the table's name in the doc's markers")
	command := flag.String("command", "", "the command that measured the figures, as the table shows it")
	format := flag.String("format", "gobench", "what stdin holds: gobench (go test -bench output), lines (a row per line), markdown (a test's own table, a line each) or cells (lines of name=value; name=value: a column each)")
	prefix := flag.String("prefix", "figures: ", "with -format lines: the lines to keep and what precedes their figures")
	match := flag.String("match", "", "keep only the rows that match this regular expression, a row read as its cells joined by spaces (with -format gobench: \"package benchmark …\")")
	flag.Parse()
	if *doc == "" || *table == "" || *command == "" {
		fmt.Fprintln(os.Stderr, "benchdoc: -doc, -table and -command are needed")
		os.Exit(2)
	}
	only, err := regexp.Compile(*match)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchdoc: -match: %v\n", err)
		os.Exit(2)
	}
	// A doc that cannot take the table fails before the step's run, not
	// after it.
	d, err := os.ReadFile(*doc)
	if err == nil {
		_, err = benchdoc.Replace(d, *table, "")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchdoc: %s: %v\n", *doc, err)
		os.Exit(1)
	}
	var t benchdoc.Table
	switch *format {
	case "gobench":
		t, err = benchdoc.GoBench(os.Stdin, os.Stdout)
	case "lines":
		t, err = benchdoc.Lines(os.Stdin, os.Stdout, *prefix)
	case "markdown":
		t, err = benchdoc.MarkdownLines(os.Stdin, os.Stdout, *prefix)
	case "cells":
		t, err = benchdoc.Cells(os.Stdin, os.Stdout, *prefix)
	default:
		err = fmt.Errorf("-format %q: want gobench, lines, markdown or cells", *format)
	}
	if err == nil && *match != "" {
		t = t.Only(only)
	}
	if err == nil && len(t.Rows) == 0 && t.Body == "" {
		err = fmt.Errorf("no figures on stdin")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchdoc: %v\n", err)
		os.Exit(1)
	}
	t.Name, t.Command = *table, *command
	block := t.Markdown(time.Now(), benchdoc.LoadAverage())
	io.WriteString(os.Stdout, "\nwritten to "+*doc+" (table "+*table+"):\n\n"+block)
	if err := benchdoc.Write(*doc, *table, block); err != nil {
		fmt.Fprintf(os.Stderr, "benchdoc: %v\n", err)
		os.Exit(1)
	}
}
