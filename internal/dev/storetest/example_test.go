package storetest_test

import (
	"testing"

	"github.com/slotq/slotq/internal/dev/storetest"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/memstore"
)

// A state store proves it keeps engine.State's contract by passing the
// suite, from a test of its own package: this is memstore's.
func ExampleRun() {
	_ = func(t *testing.T) { // func TestState(t *testing.T) in the store's package
		storetest.Run(t, func(t *testing.T) engine.State { return memstore.New(memstore.Options{}) })
	}
}
