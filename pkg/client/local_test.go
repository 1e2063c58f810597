package client_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/slotq/slotq/pkg/client"
	"github.com/slotq/slotq/pkg/local"
)

// startLocal runs the local runtime (embedded backend) in this process on
// a free port and returns its Invoke API URL; it stops with the test.
func startLocal(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- local.Run(ctx, local.Options{
			Addr: "127.0.0.1:0", Out: io.Discard, Logger: slog.New(slog.DiscardHandler),
			Ready: func(e local.Endpoints) { ready <- e.InvokeURL },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("local.Run: %v", err)
		}
	})
	select {
	case url := <-ready:
		return url
	case err := <-done:
		t.Fatalf("local.Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("local runtime not ready after 10s")
	}
	return ""
}

func newLocalClient(t testing.TB, optFns ...func(*client.Options)) *client.Client {
	return client.NewFromConfig(aws.Config{}, append([]func(*client.Options){client.WithEndpoint(startLocal(t))}, optFns...)...)
}
