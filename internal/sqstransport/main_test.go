package sqstransport_test

import (
	"os"
	"testing"

	"github.com/slotq/slotq/internal/dev/motoserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	motoserver.Stop()
	os.Exit(code)
}
