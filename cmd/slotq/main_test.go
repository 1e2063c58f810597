package main

import (
	"testing"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/pkg/local"
)

// TestMain stops the emulators the tests started (local_test.go's runs on
// DynamoDB Local and moto_server), so none outlives the test binary.
func TestMain(m *testing.M) { testenv.Main(m) }

// The commands' default endpoint is the local runtime's address, which
// clikit writes again (pkg/local imports the console, which imports
// clikit).
func TestDefaultEndpointIsLocal(t *testing.T) {
	if want := "http://" + local.DefaultAddr; clikit.DefaultEndpoint != want {
		t.Errorf("clikit.DefaultEndpoint = %q, want %q", clikit.DefaultEndpoint, want)
	}
}
