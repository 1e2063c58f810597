package main

import (
	"context"
	"net"
	"syscall"
	"testing"
)

// A refused connection to --endpoint-url is not retried (nothing listens:
// the answer is the hint, at once); other connection errors are, as the
// SDK retries them; AWS keeps the SDK's retryer.
func TestEndpointRetryer(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	tgt, err := (&conn{endpoint: "http://127.0.0.1:3001"}).resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tgt.cfg.Retryer == nil {
		t.Fatal("no retryer for an endpoint")
	}
	r := tgt.cfg.Retryer()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.OpError{Op: "connect", Err: syscall.ECONNREFUSED}}
	if r.IsErrorRetryable(refused) {
		t.Errorf("a refused connection is retried")
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	if !r.IsErrorRetryable(reset) {
		t.Errorf("a reset connection is not retried")
	}
	if r.MaxAttempts() != 3 {
		t.Errorf("%d attempts, want the SDK's 3", r.MaxAttempts())
	}

	tgt, err = (&conn{profile: "", adminFn: "slotq-admin", region: "eu-west-1"}).resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tgt.cfg.Retryer != nil {
		if r := tgt.cfg.Retryer(); !r.IsErrorRetryable(refused) {
			t.Errorf("AWS: a refused connection is not retried")
		}
	}
}
