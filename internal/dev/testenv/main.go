package testenv

import (
	"fmt"
	"os"
	"testing"

	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dev/motoserver"
)

// Option changes what Main does around the tests.
type Option func(*mainConfig)

type mainConfig struct {
	setup []func() (undo func(), err error)
	stop  []func()
}

// Setup runs f before the tests; an error ends the binary with exit code 1
// before any test runs. The undo f returns (if not nil) runs after them,
// before the emulators stop.
func Setup(f func() (undo func(), err error)) Option {
	return func(c *mainConfig) { c.setup = append(c.setup, f) }
}

// Stop runs f after the tests, with the emulators' stops: for a process
// the package's tests share, such as the console tests' browser.
func Stop(f func()) Option {
	return func(c *mainConfig) { c.stop = append(c.stop, f) }
}

// Main runs m's tests and exits with their code, having stopped what they
// started: DynamoDB Local (dynamolocal.Require) and moto_server
// (motoserver.Require), which are shared by the tests of a binary and
// would otherwise outlive it. Call it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M, opts ...Option) {
	var c mainConfig
	for _, o := range opts {
		o(&c)
	}
	os.Exit(c.run(m))
}

func (c *mainConfig) run(m *testing.M) int {
	defer dynamolocal.Stop()
	defer motoserver.Stop()
	for _, f := range c.stop {
		defer f()
	}
	for _, f := range c.setup {
		undo, err := f()
		if undo != nil {
			defer undo()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}
