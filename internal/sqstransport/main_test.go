package sqstransport_test

import (
	"os"
	"testing"

	"github.com/slotq/slotq/internal/motoserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	motoserver.Stop()
	os.Exit(code)
}
