package benchcmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Bad command lines end with exit 2 (or, for a bad list, 1) and say why,
// before any emulator starts.
func TestMainRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, exitUsage, "usage: slotq-bench COMMAND"},
		{"unknown command", []string{"frob"}, exitUsage, `slotq-bench: unknown command "frob"`},
		{"costs argument", []string{"costs", "now"}, exitUsage, `slotq-bench costs: unexpected argument "now"`},
		{"costs no runs", []string{"costs", "--runs", "0"}, exitUsage, "slotq-bench costs: --runs must be at least 1"},
		{"costs doc without table", []string{"costs", "--doc", "x.md"}, exitUsage, "--doc and --table go together"},
		{"costs bad flag", []string{"costs", "--frob"}, exitUsage, "unknown flag: --frob"},
		{"ceiling bad rates", []string{"ceiling", "-rates", "50,x"}, exitFail, `ceiling: "x" is not a positive whole number`},
		{"ceiling bad flag", []string{"ceiling", "-frob"}, exitUsage, "flag provided but not defined: -frob"},
		{"release no jobs", []string{"release", "-jobs", "0"}, exitUsage, "release: --jobs, --queues, --runs and --timeout must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("Main(%q) = %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}
