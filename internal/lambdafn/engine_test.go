package lambdafn

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/slotq/slotq/internal/engine"
)

// The functions' AWS clients keep idle connections for a resume run's
// calls at once, not the SDK's 10 a host.
func TestPooledConnections(t *testing.T) {
	cfg := pooled(aws.Config{HTTPClient: awshttp.NewBuildableClient()})
	tr := cfg.HTTPClient.(*awshttp.BuildableClient).GetTransport()
	if tr.MaxIdleConnsPerHost < 2*engine.DefaultResumeConcurrency {
		t.Fatalf("MaxIdleConnsPerHost = %d, want at least %d", tr.MaxIdleConnsPerHost, 2*engine.DefaultResumeConcurrency)
	}
}
