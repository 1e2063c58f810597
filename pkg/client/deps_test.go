package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies holds pkg/client to what a service that only enqueues
// should compile: the SDK's Lambda client and slotq's wire types
// (pkg/api), nothing of the server. Its packages stay within 10 % of
// service/lambda's own.
func TestDependencies(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	mine, lambda := deps("github.com/slotq/slotq/pkg/client"), deps("github.com/aws/aws-sdk-go-v2/service/lambda")
	for _, p := range mine {
		if strings.HasPrefix(p, "github.com/slotq/slotq/") && p != "github.com/slotq/slotq/pkg/api" && p != "github.com/slotq/slotq/pkg/client" {
			t.Errorf("pkg/client imports %s: it may import only pkg/api of slotq", p)
		}
	}
	if limit := len(lambda) * 11 / 10; len(mine) > limit {
		t.Errorf("pkg/client compiles %d packages, service/lambda %d: more than 10 %% over (%d)", len(mine), len(lambda), limit)
	}
	t.Logf("pkg/client: %d packages; service/lambda: %d", len(mine), len(lambda))
}
