package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/cli/clikit"
)

// The demo's and the benchmarks' workloads are internal/bench/workload's,
// tested there; these tests run them through slotq's command line.

func TestRunCommands(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{"no command", nil, clikit.ExitOK, "USAGE", ""},
		{"unknown", []string{"frobnicate"}, clikit.ExitUsage, "", `unknown command "frobnicate"`},
		{"help", []string{"help"}, clikit.ExitOK, "demo", ""},
		{"--help", []string{"--help"}, clikit.ExitOK, "bench", ""},
		{"demo -h", []string{"demo", "-h"}, clikit.ExitOK, "--producers", ""},
		{"bad flag", []string{"demo", "--nope"}, clikit.ExitUsage, "", "slotq demo: unknown flag: --nope"},
		{"bad interval", []string{"demo", "--interval", "0s"}, clikit.ExitUsage, "", "--interval must be greater than 0"},
		{"skew too big", []string{"demo", "--interval", "10ms", "--skew", "10ms"}, clikit.ExitUsage, "", "--skew"},
		{"bad queue", []string{"demo", "--queue", "no spaces"}, clikit.ExitUsage, "", "must match"},
		{"bad log level", []string{"demo", "--log", "loud"}, clikit.ExitUsage, "", "--log"},
		{"stray argument", []string{"demo", "extra"}, clikit.ExitUsage, "", `unexpected argument "extra"`},
		{"bench bad runs", []string{"bench", "--runs", "0"}, clikit.ExitUsage, "", "--runs"},
		{"bench stray argument", []string{"bench", "extra"}, clikit.ExitUsage, "", `slotq bench: unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantStdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr.String())
			}
		})
	}
}

// TestDemoSummary runs the terminal demo small and checks that the
// timeline and the summary name what they must.
func TestDemoSummary(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"demo", "--producers", "2", "--jobs", "2", "--interval", "20ms"}, &stdout, &stderr)
	if code != clikit.ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	if n := strings.Count(out, "  late "); n != 4 {
		t.Errorf("%d timeline lines, want 4:\n%s", n, out)
	}
	for _, want := range []string{"spacing", "lateness", "inversions", "re-tickets", "% of starts, most ", "violations    0 at the gate", "makespan", "ideal"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchDoc runs `slotq bench --doc` twice, small, on a doc with its
// markers: the doc then holds what the second run printed, between the
// markers alone, with the command and the load average.
func TestBenchDoc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "perf.md")
	before, after := "# Figures\n\nProse.\n\n<!-- bench:demo begin -->\n", "\n<!-- bench:demo end -->\n\nMore prose.\n"
	if err := os.WriteFile(path, []byte(before+"old"+after), 0o644); err != nil {
		t.Fatal(err)
	}
	var printed string
	for range 2 {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), []string{"bench", "--runs", "1", "--producers", "1", "--jobs", "3", "--interval", "20ms", "--doc", path, "--table", "demo"}, &stdout, &stderr)
		if code != clikit.ExitOK {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
		}
		_, block, ok := strings.Cut(stdout.String(), "written to "+path+" (table demo):\n\n")
		if !ok {
			t.Fatalf("bench printed no table:\n%s", stdout.String())
		}
		printed = block
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := before + strings.TrimRight(printed, "\n") + after; string(doc) != want {
		t.Fatalf("doc:\n%s\nwant what the second run printed:\n%s", doc, want)
	}
	for _, want := range []string{"`slotq bench --interval 20ms --jobs 3 --producers 1 --runs 1` on ", ", load average ", "| re-ticketed | most/job |", "| median |"} {
		if !strings.Contains(printed, want) {
			t.Errorf("table lacks %q:\n%s", want, printed)
		}
	}
}
