package storetest_test

import (
	"testing"

	"github.com/slotq/slotq/pkg/engine"
	"github.com/slotq/slotq/pkg/memstore"
	"github.com/slotq/slotq/pkg/storetest"
)

// A state store proves it keeps engine.State's contract by passing the
// suite, from a test of its own package: this is memstore's.
func ExampleRun() {
	_ = func(t *testing.T) { // func TestState(t *testing.T) in the store's package
		storetest.Run(t, func(t *testing.T) engine.State { return memstore.New(memstore.Options{}) })
	}
}
