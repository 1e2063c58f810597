package client_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/slotq/slotq/internal/dev/localtest"
	"github.com/slotq/slotq/pkg/client"
	"github.com/slotq/slotq/pkg/local"
)

// startLocal runs the local runtime (embedded backend) in this process on
// a free port and returns its Invoke API URL; it stops with the test.
func startLocal(t testing.TB) string {
	t.Helper()
	return localtest.Start(t, local.Options{}).InvokeURL
}

func newLocalClient(t testing.TB, optFns ...func(*client.Options)) *client.Client {
	return client.NewFromConfig(aws.Config{}, append([]func(*client.Options){client.WithEndpoint(startLocal(t))}, optFns...)...)
}
