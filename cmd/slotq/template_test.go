package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/local/samlocal"
)

func TestTemplateCommand(t *testing.T) {
	dir := t.TempDir()
	part := filepath.Join(dir, "stack.yaml")
	out := filepath.Join(dir, "template.yaml")
	if err := os.WriteFile(part, []byte("Parameters:\n  PartnerUrl:\n    Type: String\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run(t.Context(), []string{"template", "--stack", part, "-o", out}, &stdout, &stderr); code != clikit.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	tmpl, err := samlocal.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tmpl.Parameters["PartnerUrl"]; !ok || len(tmpl.Functions()) != 4 {
		t.Errorf("parameters %v, functions %v", tmpl.Parameters, tmpl.Functions())
	}
	b, _ := os.ReadFile(out)
	if !strings.HasPrefix(string(b), "# Written by `slotq template`") {
		t.Errorf("no header: %.80s", b)
	}

	if err := os.WriteFile(part, []byte("Resources:\n  Table:\n    Type: AWS::DynamoDB::Table\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run(t.Context(), []string{"template", "--stack", part}, &stdout, &stderr); code != clikit.ExitFail || !strings.Contains(stderr.String(), "Resources.Table") {
		t.Errorf("changing slotq's table: exit %d, %q", code, stderr.String())
	}
}
