package main

import (
	"os"
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/cli/clikit"
)

// docs/cli.md is the commands' help, written by `make docs`: a command,
// flag or word of help changed without it fails here.
func TestCLIReference(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, value, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "SLOTQ_") {
			t.Setenv(name, value) // cliReference unsets them; this restores them
		}
	}
	want := cliReference()
	got, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatalf("%v: run make docs (go run ./cmd/slotq reference > docs/cli.md)", err)
	}
	if string(got) == want {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		g, w := "(end of file)", "(end of help)"
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("docs/cli.md differs from the commands' help at line %d:\n  docs/cli.md: %s\n  help:        %s\n"+
				"run make docs (go run ./cmd/slotq reference > docs/cli.md) to write it again", i+1, g, w)
		}
	}
}

// The reference is reachable: `slotq reference` prints it, and hides
// itself from help.
func TestReferenceCommand(t *testing.T) {
	var out, errb strings.Builder
	if code := run(t.Context(), []string{"reference"}, &out, &errb); code != clikit.ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), referenceTitle) || !strings.Contains(out.String(), "\n## slotq queues create\n") {
		t.Errorf("slotq reference printed no reference:\n%.300s", out.String())
	}
	if strings.Contains(out.String(), "## slotq reference") {
		t.Error("the hidden reference command documents itself")
	}
}
