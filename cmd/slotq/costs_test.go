package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/cli/clikit"
)

// Inside the checkout, slotq costs builds slotq-bench from it and runs it
// with the flags given; its exit code and output are slotq's.
func TestRunBenchFromCheckout(t *testing.T) {
	if _, ok := checkout(); !ok {
		t.Fatal("cmd/slotq's tests run inside a checkout of slotq, but checkout found none")
	}
	var stdout, stderr bytes.Buffer
	code, err := runBench(context.Background(), []string{"costs", "--runs=0"}, &stdout, &stderr)
	if err != nil || code != clikit.ExitUsage || !strings.Contains(stderr.String(), "slotq-bench costs: --runs must be at least 1") {
		t.Errorf("runBench = %d, %v, stderr %q; want exit %d from slotq-bench", code, err, stderr.String(), clikit.ExitUsage)
	}
}

// flagArgs gives slotq-bench the flags set, lists joined as a flag takes them.
func TestFlagArgs(t *testing.T) {
	cmd := newCostsCmd()
	if err := cmd.ParseFlags([]string{"--scenarios", "a,e", "-v", "--runs", "2", "--doc", "d.md", "--table", "costs"}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(flagArgs(cmd.Flags()), " ")
	const want = "--doc=d.md --runs=2 --scenarios=a,e --table=costs --verbose=true"
	if got != want {
		t.Errorf("flagArgs = %q; want %q", got, want)
	}
}
