package emulator

import (
	"maps"
	"net"
	"sync"
	"testing"
)

// Env is the environment that points the AWS SDK's clients at an
// emulator: endpoints (such as AWS_ENDPOINT_URL_SQS) to its URL, region
// us-east-1, dummy credentials, no profile and no instance metadata. It
// sets only the endpoints given, so that another service can point at
// another emulator.
func Env(endpoints map[string]string) map[string]string {
	env := map[string]string{
		"AWS_REGION":                "us-east-1",
		"AWS_ACCESS_KEY_ID":         "test",
		"AWS_SECRET_ACCESS_KEY":     "test",
		"AWS_SESSION_TOKEN":         "",
		"AWS_PROFILE":               "",
		"AWS_EC2_METADATA_DISABLED": "true",
	}
	maps.Copy(env, endpoints)
	return env
}

// FreePort returns a loopback port free at the time of the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Server is a running emulator.
type Server interface {
	// Env is the environment that points the AWS SDK at it.
	Env() map[string]string
	// Close stops it.
	Close()
}

// Shared is one emulator shared by the tests of a test binary, started
// on first use. Its zero value is ready.
type Shared[S Server] struct {
	once sync.Once
	s    S
	err  error
	// started says s holds a server to stop.
	started bool
}

// Get returns the server, started by start on the first call; later
// calls return what the first got.
func (sh *Shared[S]) Get(start func() (S, error)) (S, error) {
	sh.once.Do(func() {
		sh.s, sh.err = start()
		sh.started = sh.err == nil
	})
	return sh.s, sh.err
}

// SetEnv points the AWS SDK of t's code at s (Server.Env), for the
// duration of t.
func SetEnv(t testing.TB, s Server) {
	for k, v := range s.Env() {
		t.Setenv(k, v)
	}
}

// Stop stops the server, if one was started. Call it from TestMain.
func (sh *Shared[S]) Stop() {
	if sh.started {
		sh.s.Close()
	}
}
