package sqstransport_test

import (
	"testing"

	"github.com/slotq/slotq/internal/dev/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
