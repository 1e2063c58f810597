package main

import (
	"testing"

	"github.com/slotq/slotq/internal/dev/testenv"
)

// TestMain stops the emulators the tests started (local_test.go's runs on
// DynamoDB Local and moto_server), so none outlives the test binary.
func TestMain(m *testing.M) { testenv.Main(m) }
