package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
	"github.com/slotq/slotq/pkg/local"
)

// DefaultEndpoint is the Invoke API the commands call when nothing else is
// configured: the local runtime's (slotq local).
const DefaultEndpoint = "http://" + local.DefaultAddr

// conn holds the flags that say which stack a command talks to, and the
// output flag every such command shares. Every client the commands use
// is built here.
type conn struct {
	profile, region    string
	endpoint, stack    string
	enqueueFn, adminFn string
	json               bool
}

// connFlags registers the connection flags on fs, spelled as the AWS
// CLI spells them. Their defaults come from the environment.
func connFlags(fs *pflag.FlagSet) *conn {
	c := &conn{}
	fs.StringVar(&c.endpoint, "endpoint-url", os.Getenv("SLOTQ_ENDPOINT_URL"), "Invoke API URL, such as the local runtime's (env SLOTQ_ENDPOINT_URL; default "+DefaultEndpoint+" unless --stack, --profile or a function name is given)")
	fs.StringVar(&c.stack, "stack", os.Getenv("SLOTQ_STACK"), "deployed CloudFormation `stack` whose outputs name the functions (env SLOTQ_STACK)")
	fs.StringVar(&c.profile, "profile", "", "AWS `profile` of the shared config for a deployed stack (default: AWS_PROFILE, or the default profile)")
	fs.StringVar(&c.region, "region", "", "AWS `region` (default: AWS_REGION, or the profile's)")
	fs.StringVar(&c.enqueueFn, "enqueue-function", os.Getenv("SLOTQ_ENQUEUE_FUNCTION"), "`name` or ARN of the enqueue function (env SLOTQ_ENQUEUE_FUNCTION; default EnqueueFunction, or the stack's output EnqueueFunctionName)")
	fs.StringVar(&c.adminFn, "admin-function", os.Getenv("SLOTQ_ADMIN_FUNCTION"), "`name` or ARN of the admin function (env SLOTQ_ADMIN_FUNCTION; default AdminFunction, or the stack's output AdminFunctionName)")
	fs.BoolVar(&c.json, "json", false, "print JSON for scripts instead of tables")
	for _, name := range []string{"endpoint-url", "stack", "profile", "region", "enqueue-function", "admin-function", "json"} {
		_ = fs.SetAnnotation(name, flagGroup, []string{"connection"})
	}
	return c
}

// stackFlags gives cmd the connection flags: cn, those its parent holds
// for every subcommand, or else its own.
func stackFlags(cmd *cobra.Command, cn *conn) *conn {
	if cn == nil {
		cn = connFlags(cmd.Flags())
	}
	return cn
}

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

// endpointTarget is where the flags point: AWS (with the stack's outputs, if
// --stack) or an Invoke API endpoint with unsigned requests.
type endpointTarget struct {
	cfg      aws.Config
	outputs  map[string]string // --stack's
	endpoint string            // "" on AWS
}

// resolve reads the flags:
//
//   - --endpoint-url (or SLOTQ_ENDPOINT_URL): that Invoke API, unsigned
//     requests unless --profile is given;
//   - --stack (or SLOTQ_STACK): AWS, function names from the stack's outputs;
//   - --profile, --enqueue-function or --admin-function alone: AWS;
//   - nothing: the local runtime on DefaultEndpoint.
func (c *conn) resolve(ctx context.Context) (endpointTarget, error) {
	if c.endpoint != "" && c.stack != "" {
		return endpointTarget{}, usagef("give --endpoint-url or --stack, not both")
	}
	load := func() (aws.Config, error) {
		var opts []func(*config.LoadOptions) error
		if c.profile != "" {
			opts = append(opts, config.WithSharedConfigProfile(c.profile))
		}
		if c.region != "" {
			opts = append(opts, config.WithRegion(c.region))
		}
		cfg, err := config.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return cfg, fmt.Errorf("AWS configuration: %w", err)
		}
		return cfg, nil
	}
	var t endpointTarget
	var err error
	switch {
	case c.stack != "":
		if t.cfg, err = load(); err != nil {
			return t, err
		}
		if t.outputs, err = stackOutputs(ctx, newCloudFormation(t.cfg), c.stack); err != nil {
			return t, err
		}
	case c.endpoint == "" && (c.profile != "" || c.enqueueFn != "" || c.adminFn != ""):
		if t.cfg, err = load(); err != nil {
			return t, err
		}
	default:
		t.endpoint = c.endpoint
		if t.endpoint == "" {
			t.endpoint = DefaultEndpoint
		}
		if c.profile != "" {
			if t.cfg, err = load(); err != nil {
				return t, err
			}
			break
		}
		// A local runtime checks no signature: send none, need no account.
		t.cfg = aws.Config{Region: c.region}
		if t.cfg.Region == "" {
			t.cfg.Region = os.Getenv("AWS_REGION")
		}
	}
	if t.endpoint != "" {
		t.cfg.Retryer = func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.Retryables = append([]retry.IsErrorRetryable{refusedIsFinal}, o.Retryables...)
			})
		}
	}
	return t, nil
}

// refusedIsFinal tells the SDK's retryer not to retry a refused
// connection to an --endpoint-url: nothing listens there (the local
// runtime is not running), and trying again for seconds only delays the
// one line that says so. Other errors are retried as the SDK does.
var refusedIsFinal = retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
})

// client builds the slotq client the flags describe. Function name flags
// override the stack's outputs and the defaults.
func (c *conn) client(ctx context.Context) (*client.Client, error) {
	t, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	var opts []func(*client.Options)
	if t.outputs != nil {
		opts = append(opts, client.WithStackOutputs(t.outputs))
	}
	switch {
	case t.endpoint != "" && c.profile != "":
		// --profile signs the requests to the endpoint with its credentials.
		opts = append(opts, func(o *client.Options) { o.BaseEndpoint = aws.String(t.endpoint) })
	case t.endpoint != "":
		opts = append(opts, client.WithEndpoint(t.endpoint))
	}
	opts = append(opts, func(o *client.Options) {
		if c.enqueueFn != "" {
			o.EnqueueFunction = c.enqueueFn
		}
		if c.adminFn != "" {
			o.AdminFunction = c.adminFn
		}
	})
	return client.NewFromConfig(t.cfg, opts...), nil
}

// lambda builds the Lambda client slotq invoke calls, and the name to
// call fn by: on a stack, its output fn+"Name" if there is one
// (EnqueueFunction → EnqueueFunctionName).
func (c *conn) lambda(ctx context.Context, fn string) (*lambda.Client, string, error) {
	t, err := c.resolve(ctx)
	if err != nil {
		return nil, "", err
	}
	if name := t.outputs[fn+"Name"]; name != "" {
		fn = name
	}
	if t.endpoint != "" {
		if t.cfg.Region == "" {
			t.cfg.Region = "us-east-1"
		}
		if t.cfg.Credentials == nil {
			t.cfg.Credentials = aws.AnonymousCredentials{}
		}
	}
	return lambda.NewFromConfig(t.cfg, func(o *lambda.Options) {
		if t.endpoint != "" {
			o.BaseEndpoint = aws.String(t.endpoint)
		}
	}), fn, nil
}

// unreachable is a call to an Invoke API endpoint where nothing listens.
type unreachable struct {
	endpoint string
	err      error
}

func (e *unreachable) Error() string {
	return fmt.Sprintf("nothing answers at %s (connection refused)", e.endpoint)
}

func (e *unreachable) Unwrap() error { return e.err }

// explain turns the SDK's chain of retries into one line when nothing
// listens on the endpoint the flags name.
func (c *conn) explain(err error) error {
	if c.stack != "" || !errors.Is(err, syscall.ECONNREFUSED) {
		return err
	}
	endpoint := c.endpoint
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	return &unreachable{endpoint: endpoint, err: err}
}

// hint says what to do next about err, or "".
func hint(err error) string {
	var u *unreachable
	if errors.As(err, &u) {
		return "Is the local runtime running? Start it with 'make run' or 'slotq local'; for a deployed stack give --stack NAME."
	}
	var e *client.Error
	if errors.As(err, &e) && e.Code == api.CodeTargetNotAllowed {
		return "Allow it with 'slotq queues configure QUEUE --targets PATTERN,…' (such as 'https://hooks.example.com/*'; give every pattern the queue keeps), and --allow-networks for a private or loopback address."
	}
	return ""
}
