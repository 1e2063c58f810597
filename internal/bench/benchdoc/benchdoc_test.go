package benchdoc

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

const doc = `# Figures

Prose before, kept.

<!-- bench:demo begin -->
old table
| 1 | 2 |
<!-- bench:demo end -->

Prose between, kept.
<!-- bench:other begin -->
other's old table
<!-- bench:other end -->
The end, kept.
`

// TestReplace checks that Replace changes only what lies between the
// markers of the table it writes, and that writing the same block again
// changes nothing.
func TestReplace(t *testing.T) {
	got, err := Replace([]byte(doc), "demo", "new table\n| 3 | 4 |\n")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(doc, "old table\n| 1 | 2 |\n", "new table\n| 3 | 4 |\n", 1)
	if string(got) != want {
		t.Fatalf("Replace:\n%s\nwant:\n%s", got, want)
	}
	again, err := Replace(got, "demo", "new table\n| 3 | 4 |")
	if err != nil || string(again) != string(got) {
		t.Fatalf("Replace again = %q, %v; want it unchanged", again, err)
	}
	// An empty body between the markers takes a table too.
	empty := Begin("x") + "\n" + End("x") + "\n"
	if got, err := Replace([]byte(empty), "x", "t"); err != nil || string(got) != Begin("x")+"\nt\n"+End("x")+"\n" {
		t.Fatalf("Replace into empty = %q, %v", got, err)
	}
}

// TestReplaceMarkers checks that a doc without the markers of a table,
// or with them repeated or out of order, is refused and not written.
func TestReplaceMarkers(t *testing.T) {
	for name, d := range map[string]string{
		"no begin":   "text\n" + End("demo") + "\n",
		"no end":     Begin("demo") + "\ntext\n",
		"none":       doc[:strings.Index(doc, "<!--")],
		"other only": Begin("other") + "\nx\n" + End("other") + "\n",
		"two begins": Begin("demo") + "\n" + Begin("demo") + "\nx\n" + End("demo") + "\n",
		"two ends":   Begin("demo") + "\nx\n" + End("demo") + "\n" + End("demo") + "\n",
		"reversed":   End("demo") + "\nx\n" + Begin("demo") + "\n",
	} {
		_, err := Replace([]byte(d), "demo", "t")
		var me *MarkerError
		if !errors.As(err, &me) || me.Name != "demo" {
			t.Errorf("%s: Replace = %v; want a *MarkerError on demo", name, err)
		}
	}
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, "demo", "t"); err == nil {
		t.Fatal("Write into a doc without markers succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "no markers\n" {
		t.Fatalf("a refused Write changed the doc: %q", b)
	}
}

func TestMarkdown(t *testing.T) {
	tb := Table{Command: "slotq bench --runs 1", Header: []string{"run", "ratio"}, Rows: [][]string{{"1", "1.0010"}}, Notes: []string{"ratio: makespan / ideal"}}
	got := tb.Markdown(time.Date(2026, 11, 26, 15, 4, 0, 0, time.UTC), "1.00 / 0.50 / 0.25 (1, 5, 15 min)")
	want := "`slotq bench --runs 1` on 2026-11-26 15:04 UTC, load average 1.00 / 0.50 / 0.25 (1, 5, 15 min):\n\n" +
		"| run | ratio |\n|---|---|\n| 1 | 1.0010 |\n\nratio: makespan / ideal\n"
	if got != want {
		t.Fatalf("Markdown:\n%q\nwant\n%q", got, want)
	}
}

func TestGoBench(t *testing.T) {
	out := "goos: linux\npkg: example.com/a\nBenchmarkWork-2   \t   10000\t     12403 ns/op\t  81000 jobs/s\t    1234 B/op\t      52 allocs/op\n" +
		"BenchmarkEnqueue-2\t  200\t  6569 ns/op\t  24 allocs/op\nPASS\nok  \texample.com/a\t1.2s\n"
	var echo strings.Builder
	tb, err := GoBench(strings.NewReader(out), &echo)
	if err != nil {
		t.Fatal(err)
	}
	if echo.String() != out {
		t.Errorf("echo = %q", echo.String())
	}
	want := Table{
		Header: []string{"package", "benchmark", "iterations", "ns/op", "jobs/s", "B/op", "allocs/op"},
		Rows:   [][]string{{"example.com/a", "Work-2", "10000", "12403", "81000", "1234", "52"}, {"example.com/a", "Enqueue-2", "200", "6569", "", "", "24"}},
	}
	if !reflect.DeepEqual(tb, want) {
		t.Fatalf("GoBench = %+v\nwant %+v", tb, want)
	}
	for _, bad := range []string{"--- FAIL: BenchmarkWork\n", "FAIL\texample.com/a\t1s\n", "panic: boom\n"} {
		if _, err := GoBench(strings.NewReader(out+bad), io.Discard); err == nil {
			t.Errorf("GoBench took output with %q", bad)
		}
	}
}

func TestOnly(t *testing.T) {
	tb := Table{
		Header: []string{"package", "benchmark", "iterations", "ns/op", "RCU/run", "allocs/op"},
		Rows: [][]string{
			{"example.com/a", "Work-2", "10000", "12403", "", "52"},
			{"example.com/store", "ResumeRun/queues=10/due=10-2", "20", "164000000", "22.4", ""},
			{"example.com/store", "ResumeRun/queues=10000/due=0-2", "20", "9100000", "0", ""},
		},
	}
	got := tb.Only(regexp.MustCompile(`^example\.com/store ResumeRun/`))
	want := Table{
		Header: []string{"package", "benchmark", "iterations", "ns/op", "RCU/run"},
		Rows:   [][]string{{"example.com/store", "ResumeRun/queues=10/due=10-2", "20", "164000000", "22.4"}, {"example.com/store", "ResumeRun/queues=10000/due=0-2", "20", "9100000", "0"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Only = %+v\nwant %+v", got, want)
	}
	if none := tb.Only(regexp.MustCompile("Nothing")); len(none.Rows) != 0 || len(none.Header) != 0 {
		t.Errorf("Only(Nothing) = %+v, want no rows and no columns", none)
	}
}

// TestMakeBenchMarkers checks that every table `make bench` writes has
// its markers in the doc it goes to, so that a long run does not fail at
// its last step on a marker someone removed.
func TestMakeBenchMarkers(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{"PERF_DOC": "docs/performance.md", "COSTS_DOC": "docs/costs.md", "BENCHDOC": "docs/performance.md"}
	step := regexp.MustCompile(`\$\((PERF_DOC|COSTS_DOC|BENCHDOC)\)[^\n]*?-?-table (\S+)`)
	found := step.FindAllStringSubmatch(string(mk), -1)
	if len(found) < 10 {
		t.Fatalf("found %d tables in the Makefile's bench steps; want the 10 it writes", len(found))
	}
	for _, m := range found {
		doc, err := os.ReadFile(filepath.Join(root, docs[m[1]]))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Replace(doc, m[2], "t"); err != nil {
			t.Errorf("%s: %v", docs[m[1]], err)
		}
	}
}

func TestMarkdownLines(t *testing.T) {
	out := "=== RUN   TestPrecisionTable\n    precision_test.go:62: table: | a | b |\n    precision_test.go:62: table: |---|---|\ntable: | 1 | 2 |\nok\n"
	tb, err := MarkdownLines(strings.NewReader(out), io.Discard, "table: ")
	if err != nil {
		t.Fatal(err)
	}
	if want := "| a | b |\n|---|---|\n| 1 | 2 |\n"; tb.Body != want || len(tb.Rows) != 0 {
		t.Fatalf("MarkdownLines = %+v\nwant Body %q", tb, want)
	}
	if _, err := MarkdownLines(strings.NewReader(out+"--- FAIL: TestPrecisionTable (1.00s)\n"), io.Discard, "table: "); err == nil {
		t.Error("MarkdownLines took the output of a failed test")
	}
}

func TestLines(t *testing.T) {
	out := "=== RUN   TestSimulation\n    sim_test.go:355: figures: 36 jobs | 4 workers\nok\nfigures: 36 jobs again\n"
	tb, err := Lines(strings.NewReader(out), io.Discard, "figures: ")
	if err != nil {
		t.Fatal(err)
	}
	want := Table{Header: []string{"run", "figures"}, Rows: [][]string{{"1", `36 jobs \| 4 workers`}, {"2", "36 jobs again"}}}
	if !reflect.DeepEqual(tb, want) {
		t.Fatalf("Lines = %+v\nwant %+v", tb, want)
	}
	if _, err := Lines(strings.NewReader(out+"--- FAIL: TestSimulation (1.00s)\n"), io.Discard, "figures: "); err == nil {
		t.Error("Lines took the output of a failed test")
	}
}

func TestCells(t *testing.T) {
	out := "=== RUN   TestCeiling\n    ceiling_test.go:1: figures: rate=50/1s; kept=yes | no\nnoise\nfigures: rate=100/1s; kept=no\n"
	tb, err := Cells(strings.NewReader(out), io.Discard, "figures: ")
	if err != nil {
		t.Fatal(err)
	}
	want := Table{Header: []string{"rate", "kept"}, Rows: [][]string{{"50/1s", `yes \| no`}, {"100/1s", "no"}}}
	if !reflect.DeepEqual(tb, want) {
		t.Fatalf("Cells = %+v\nwant %+v", tb, want)
	}
	for name, bad := range map[string]string{
		"other cells": out + "figures: rate=200/1s; workers=3\n",
		"no name":     "figures: 50/1s\n",
		"failed":      out + "--- FAIL: TestCeiling (1.00s)\n",
	} {
		if _, err := Cells(strings.NewReader(bad), io.Discard, "figures: "); err == nil {
			t.Errorf("%s: Cells took %q", name, bad)
		}
	}
}
