// Package motoserver starts moto_server on a free loopback port: the SQS
// endpoint of the integration tests of internal/sqstransport, internal/bench/awssim and
// the functions, and of the local tools. DynamoDB runs on DynamoDB Local
// instead (internal/dev/dynamolocal): moto's DynamoDB is not atomic under
// concurrent writes. So the environment Require sets points only SQS at
// moto.
//
// `make test` sets SLOTQ_REQUIRE_LOCAL_AWS=1 (SLOTQ_REQUIRE_MOTO=1 does the
// same), so a missing moto_server fails the run with a message that says
// so; a plain `go test` skips instead.
package motoserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/emulator"
)

// Server is a running moto_server.
type Server struct {
	// Endpoint is its base URL, such as http://127.0.0.1:40123.
	Endpoint string
	cmd      *exec.Cmd
}

// shared is the server of Require.
var shared emulator.Shared[*Server]

// Require returns a moto_server shared by the tests of one package, starting
// it on first use, and points the AWS SDK's SQS client at it (region,
// dummy credentials, AWS_ENDPOINT_URL_SQS). Stop it from TestMain with
// Stop. Without moto_server it skips t, or fails it when
// SLOTQ_REQUIRE_LOCAL_AWS=1 or SLOTQ_REQUIRE_MOTO=1.
func Require(t testing.TB) *Server {
	t.Helper()
	s, err := shared.Get(Start)
	if err != nil {
		if os.Getenv("SLOTQ_REQUIRE_LOCAL_AWS") == "1" || os.Getenv("SLOTQ_REQUIRE_MOTO") == "1" {
			t.Fatalf("moto_server is required: %v", err)
		}
		t.Skipf("moto_server not available: %v", err)
	}
	emulator.SetEnv(t, s)
	return s
}

// Stop stops the shared server, if one was started. Call it from TestMain.
func Stop() { shared.Stop() }

// Env returns the environment that points the AWS SDK's SQS, CloudWatch
// Logs and CloudWatch clients at the server (the admin function's starts
// reads the worker's log group, its stats the queue's metrics: in tests
// moto answers, never AWS). It sets no
// DynamoDB endpoint, so that DynamoDB can point at DynamoDB Local
// (internal/dev/dynamolocal sets AWS_ENDPOINT_URL_DYNAMODB).
func (s *Server) Env() map[string]string {
	return emulator.Env(map[string]string{
		"AWS_ENDPOINT_URL_SQS":             s.Endpoint,
		"AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": s.Endpoint,
		"AWS_ENDPOINT_URL_CLOUDWATCH":      s.Endpoint,
	})
}

// Binary finds moto_server: $MOTO_SERVER, then PATH, resolving a pyenv shim
// to the real script.
func Binary() (string, error) {
	if p := os.Getenv("MOTO_SERVER"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("moto_server")
	if err != nil {
		return "", errors.New("moto_server is not on PATH (it ships with the machine image's Python; see CONTRIBUTING.md)")
	}
	if strings.Contains(filepath.ToSlash(p), "/shims/") {
		if out, err := exec.Command("pyenv", "which", "moto_server").Output(); err == nil {
			return strings.TrimSpace(string(out)), nil
		}
	}
	return p, nil
}

// Start starts a new moto_server on a free loopback port and waits until it
// answers.
func Start() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	port, err := emulator.FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = nil, nil
	cmd.Env = serverEnv(os.Environ())
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start moto_server: %w", err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(s.Endpoint + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			return s, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Close()
	return nil, fmt.Errorf("moto_server did not answer on %s within 30s", s.Endpoint)
}

// Reset drops all state in the server.
func (s *Server) Reset(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint+"/moto-api/reset", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reset moto: %w", err)
	}
	resp.Body.Close()
	return nil
}

// Close stops the server.
func (s *Server) Close() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// serverEnv is moto's environment: ours without the AWS SDK settings. The
// botocore inside moto reads them too, and what points our clients at the
// emulators breaks it: AWS_PROFILE="" (as Require sets it, perhaps after
// internal/dev/dynamolocal's Require) makes every SQS call fail with
// ProfileNotFound.
func serverEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AWS_") {
			out = append(out, kv)
		}
	}
	return out
}
