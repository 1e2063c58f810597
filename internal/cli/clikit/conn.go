package clikit

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
	"github.com/spf13/pflag"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// DefaultEndpoint is the Invoke API the commands call when nothing else is
// configured: the local runtime's (slotq local), on pkg/local's
// DefaultAddr. pkg/local serves the console, which imports this package,
// so the address is written here again; cmd/slotq's tests hold the two
// equal.
const DefaultEndpoint = "http://127.0.0.1:3001"

// FlagGroup is the flag annotation that puts a flag under a heading of
// its own in slotq's help: ConnFlags puts its flags under "connection".
const FlagGroup = "slotq_group"

// Conn holds the flags that say which stack a command talks to, and the
// output flag every such command shares. Every client the commands use
// is built here.
type Conn struct {
	Profile, Region                string
	Endpoint, Stack                string
	EnqueueFunction, AdminFunction string
	// JSON is --json: print JSON for scripts instead of tables.
	JSON bool
	// CloudFormation builds the client --stack reads the stack's outputs
	// with. Default cloudformation.NewFromConfig; tests replace it.
	CloudFormation func(aws.Config) DescribeStacksAPI
}

// ConnFlags registers the connection flags on fs, spelled as the AWS
// CLI spells them. Their defaults come from the environment.
func ConnFlags(fs *pflag.FlagSet) *Conn {
	c := &Conn{}
	fs.StringVar(&c.Endpoint, "endpoint-url", os.Getenv("SLOTQ_ENDPOINT_URL"), "Invoke API URL, such as the local runtime's (env SLOTQ_ENDPOINT_URL; default "+DefaultEndpoint+" unless --stack, --profile or a function name is given)")
	fs.StringVar(&c.Stack, "stack", os.Getenv("SLOTQ_STACK"), "deployed CloudFormation `stack` whose outputs name the functions (env SLOTQ_STACK)")
	fs.StringVar(&c.Profile, "profile", "", "AWS `profile` of the shared config for a deployed stack (default: AWS_PROFILE, or the default profile)")
	fs.StringVar(&c.Region, "region", "", "AWS `region` (default: AWS_REGION, or the profile's)")
	fs.StringVar(&c.EnqueueFunction, "enqueue-function", os.Getenv("SLOTQ_ENQUEUE_FUNCTION"), "`name` or ARN of the enqueue function (env SLOTQ_ENQUEUE_FUNCTION; default EnqueueFunction, or the stack's output EnqueueFunctionName)")
	fs.StringVar(&c.AdminFunction, "admin-function", os.Getenv("SLOTQ_ADMIN_FUNCTION"), "`name` or ARN of the admin function (env SLOTQ_ADMIN_FUNCTION; default AdminFunction, or the stack's output AdminFunctionName)")
	fs.BoolVar(&c.JSON, "json", false, "print JSON for scripts instead of tables")
	for _, name := range []string{"endpoint-url", "stack", "profile", "region", "enqueue-function", "admin-function", "json"} {
		_ = fs.SetAnnotation(name, FlagGroup, []string{"connection"})
	}
	return c
}

// DescribeStacksAPI is the CloudFormation call --stack makes.
type DescribeStacksAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// stackOutputs returns a stack's outputs, OutputKey → OutputValue.
func stackOutputs(ctx context.Context, api DescribeStacksAPI, name string) (map[string]string, error) {
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
func (c *Conn) resolve(ctx context.Context) (endpointTarget, error) {
	if c.Endpoint != "" && c.Stack != "" {
		return endpointTarget{}, Usagef("give --endpoint-url or --stack, not both")
	}
	load := func() (aws.Config, error) {
		var opts []func(*config.LoadOptions) error
		if c.Profile != "" {
			opts = append(opts, config.WithSharedConfigProfile(c.Profile))
		}
		if c.Region != "" {
			opts = append(opts, config.WithRegion(c.Region))
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
	case c.Stack != "":
		if t.cfg, err = load(); err != nil {
			return t, err
		}
		cf := c.CloudFormation
		if cf == nil {
			cf = func(cfg aws.Config) DescribeStacksAPI { return cloudformation.NewFromConfig(cfg) }
		}
		if t.outputs, err = stackOutputs(ctx, cf(t.cfg), c.Stack); err != nil {
			return t, err
		}
	case c.Endpoint == "" && (c.Profile != "" || c.EnqueueFunction != "" || c.AdminFunction != ""):
		if t.cfg, err = load(); err != nil {
			return t, err
		}
	default:
		t.endpoint = c.Endpoint
		if t.endpoint == "" {
			t.endpoint = DefaultEndpoint
		}
		if c.Profile != "" {
			if t.cfg, err = load(); err != nil {
				return t, err
			}
			break
		}
		// A local runtime checks no signature: send none, need no account.
		t.cfg = aws.Config{Region: c.Region}
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

// Client builds the slotq client the flags describe. Function name flags
// override the stack's outputs and the defaults.
func (c *Conn) Client(ctx context.Context) (*client.Client, error) {
	t, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	var opts []func(*client.Options)
	if t.outputs != nil {
		opts = append(opts, client.WithStackOutputs(t.outputs))
	}
	switch {
	case t.endpoint != "" && c.Profile != "":
		// --profile signs the requests to the endpoint with its credentials.
		opts = append(opts, func(o *client.Options) { o.BaseEndpoint = aws.String(t.endpoint) })
	case t.endpoint != "":
		opts = append(opts, client.WithEndpoint(t.endpoint))
	}
	opts = append(opts, func(o *client.Options) {
		if c.EnqueueFunction != "" {
			o.EnqueueFunction = c.EnqueueFunction
		}
		if c.AdminFunction != "" {
			o.AdminFunction = c.AdminFunction
		}
	})
	return client.NewFromConfig(t.cfg, opts...), nil
}

// Lambda builds the Lambda client slotq invoke calls, and the name to
// call fn by: on a stack, its output fn+"Name" if there is one
// (EnqueueFunction → EnqueueFunctionName).
func (c *Conn) Lambda(ctx context.Context, fn string) (*lambda.Client, string, error) {
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

// Explain turns the SDK's chain of retries into one line when nothing
// listens on the endpoint the flags name.
func (c *Conn) Explain(err error) error {
	if c.Stack != "" || !errors.Is(err, syscall.ECONNREFUSED) {
		return err
	}
	endpoint := c.Endpoint
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
