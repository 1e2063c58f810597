package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/slotq/slotq/pkg/client"
	"github.com/slotq/slotq/pkg/local"
)

// DefaultEndpoint is the Invoke API the commands call when nothing else is
// configured: the local runtime's (slotq local).
const DefaultEndpoint = "http://" + local.DefaultAddr

// conn holds the flags that say which stack a command talks to, and the
// output flag every command shares.
type conn struct {
	endpoint, stack    string
	enqueueFn, adminFn string
	json               bool
}

// connFlags registers the shared flags on fs. Their defaults come from the
// environment.
func connFlags(fs *flag.FlagSet) *conn {
	c := &conn{}
	fs.StringVar(&c.endpoint, "endpoint", os.Getenv("SLOTQ_ENDPOINT"), "Invoke API URL, such as the local runtime's (env SLOTQ_ENDPOINT; default "+DefaultEndpoint+" when no stack or function name is given)")
	fs.StringVar(&c.stack, "stack", os.Getenv("SLOTQ_STACK"), "deployed CloudFormation stack whose outputs name the functions (env SLOTQ_STACK)")
	fs.StringVar(&c.enqueueFn, "enqueue-function", os.Getenv("SLOTQ_ENQUEUE_FUNCTION"), "name or ARN of the enqueue function (env SLOTQ_ENQUEUE_FUNCTION; default EnqueueFunction, or the stack's output EnqueueFunctionName)")
	fs.StringVar(&c.adminFn, "admin-function", os.Getenv("SLOTQ_ADMIN_FUNCTION"), "name or ARN of the admin function (env SLOTQ_ADMIN_FUNCTION; default AdminFunction, or the stack's output AdminFunctionName)")
	fs.BoolVar(&c.json, "json", false, "print JSON for scripts instead of tables")
	return c
}

// errUsage marks an error of the command line (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// describeStacksAPI is the CloudFormation call --stack makes.
type describeStacksAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// newCloudFormation builds the CloudFormation client --stack uses; tests
// replace it.
var newCloudFormation = func(cfg aws.Config) describeStacksAPI { return cloudformation.NewFromConfig(cfg) }

// stackOutputs returns a stack's outputs, OutputKey → OutputValue.
func stackOutputs(ctx context.Context, api describeStacksAPI, name string) (map[string]string, error) {
	out, err := api.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", name, err)
	}
	if len(out.Stacks) == 0 {
		return nil, fmt.Errorf("stack %s: not found", name)
	}
	m := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	if m[client.OutputEnqueueFunctionName] == "" || m[client.OutputAdminFunctionName] == "" {
		return nil, fmt.Errorf("stack %s has no outputs %s and %s: is it a slotq stack?", name, client.OutputEnqueueFunctionName, client.OutputAdminFunctionName)
	}
	return m, nil
}

// client builds the client the flags describe:
//
//   - --endpoint (or SLOTQ_ENDPOINT): that Invoke API, unsigned requests;
//   - --stack (or SLOTQ_STACK): AWS, function names from the stack's outputs;
//   - --enqueue-function / --admin-function alone: AWS, those names;
//   - nothing: the local runtime on DefaultEndpoint.
//
// Function name flags override the stack's outputs and the defaults.
func (c *conn) client(ctx context.Context) (*client.Client, error) {
	if c.endpoint != "" && c.stack != "" {
		return nil, usagef("give --endpoint or --stack, not both")
	}
	var opts []func(*client.Options)
	var cfg aws.Config
	switch {
	case c.stack != "":
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return nil, fmt.Errorf("AWS configuration: %w", err)
		}
		outs, err := stackOutputs(ctx, newCloudFormation(cfg), c.stack)
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithStackOutputs(outs))
	case c.endpoint == "" && (c.enqueueFn != "" || c.adminFn != ""):
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return nil, fmt.Errorf("AWS configuration: %w", err)
		}
	default:
		endpoint := c.endpoint
		if endpoint == "" {
			endpoint = DefaultEndpoint
		}
		// A local runtime checks no signature: send none, need no account.
		cfg = aws.Config{Region: os.Getenv("AWS_REGION")}
		opts = append(opts, client.WithEndpoint(endpoint))
	}
	opts = append(opts, func(o *client.Options) {
		if c.enqueueFn != "" {
			o.EnqueueFunction = c.enqueueFn
		}
		if c.adminFn != "" {
			o.AdminFunction = c.adminFn
		}
	})
	return client.NewFromConfig(cfg, opts...), nil
}
