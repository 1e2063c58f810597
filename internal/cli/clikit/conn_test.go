package clikit

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// A refused connection to --endpoint-url is not retried (nothing listens:
// the answer is the hint, at once); other connection errors are, as the
// SDK retries them; AWS keeps the SDK's retryer.
func TestEndpointRetryer(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	tgt, err := (&Conn{Endpoint: "http://127.0.0.1:3001"}).resolve(context.Background())
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

	tgt, err = (&Conn{AdminFunction: "slotq-admin", Region: "eu-west-1"}).resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tgt.cfg.Retryer != nil {
		if r := tgt.cfg.Retryer(); !r.IsErrorRetryable(refused) {
			t.Errorf("AWS: a refused connection is not retried")
		}
	}
}

// webStack is a stack whose outputs name no slotq function.
type webStack struct{}

func (webStack) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	out := cftypes.Output{OutputKey: aws.String("Url"), OutputValue: aws.String("https://example.com")}
	return &cloudformation.DescribeStacksOutput{Stacks: []cftypes.Stack{{StackName: in.StackName, Outputs: []cftypes.Output{out}}}}, nil
}

func TestStackOutputsRefusesOtherStacks(t *testing.T) {
	_, err := stackOutputs(context.Background(), webStack{}, "web")
	if err == nil || !strings.Contains(err.Error(), "is it a slotq stack?") {
		t.Errorf("got %v", err)
	}
}
