package main

import (
	"os"
	"testing"

	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dev/motoserver"
)

// TestMain stops the emulators the tests started (local_test.go's runs on
// DynamoDB Local and moto_server), so none outlives the test binary.
func TestMain(m *testing.M) {
	code := m.Run()
	motoserver.Stop()
	dynamolocal.Stop()
	os.Exit(code)
}
