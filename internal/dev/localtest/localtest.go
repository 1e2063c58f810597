// Package localtest starts slotq's local runtime (pkg/local) for a test:
// in this process, on a free loopback port, stopped when the test ends.
package localtest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/local"
)

// Start runs local.Run with o until t ends and returns where it serves,
// once it does. o's Addr defaults to a free loopback port, its Out and
// Logger to none; its Ready is Start's own. A run that fails to start or
// ends with an error fails t.
func Start(t testing.TB, o local.Options) local.Endpoints {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ready := make(chan local.Endpoints, 1)
	o.Ready = func(e local.Endpoints) { ready <- e }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- local.Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("local.Run: %v", err)
		}
	})
	select {
	case e := <-ready:
		return e
	case err := <-done:
		done <- nil // reported here, not again by the cleanup
		t.Fatalf("local.Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the local runtime did not start in 30s")
	}
	return local.Endpoints{}
}
