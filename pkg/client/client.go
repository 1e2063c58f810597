package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/pkg/api"
)

// The names of the stack's outputs (template.yaml) that hold the functions'
// names: DescribeStacks on the deployed stack returns them, and
// WithStackOutputs reads them.
const (
	OutputEnqueueFunctionName = "EnqueueFunctionName"
	OutputAdminFunctionName   = "AdminFunctionName"
)

// The functions' logical ids in template.yaml: the names the local runtime
// (`slotq local`, `sam local start-lambda`) serves them under, and the
// default function names.
const (
	DefaultEnqueueFunction = "EnqueueFunction"
	DefaultAdminFunction   = "AdminFunction"
)

// InvokeAPI is the Lambda call the client makes; *lambda.Client satisfies
// it.
type InvokeAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

var _ InvokeAPI = (*lambda.Client)(nil)

// Options configure a Client, as a service client's options do in the
// AWS SDK: New takes them whole, NewFromConfig fills them from an
// aws.Config, and every operation takes option functions that adjust a
// copy of them for that call alone.
type Options struct {
	// EnqueueFunction is the name or ARN of the stack's enqueue function.
	// Default DefaultEnqueueFunction ("EnqueueFunction"), its name on the
	// local runtime; on a deployed stack it is the stack output
	// EnqueueFunctionName (see WithStackOutputs).
	EnqueueFunction string
	// AdminFunction is the name or ARN of the admin function. Default
	// DefaultAdminFunction ("AdminFunction"); on a deployed stack the
	// output AdminFunctionName.
	AdminFunction string
	// Region, Credentials and BaseEndpoint build the Lambda client when
	// Lambda is nil. BaseEndpoint is the Invoke API's base URL, such as
	// "http://127.0.0.1:3001" for the local runtime (WithEndpoint): with
	// it, an empty Region is us-east-1 and nil Credentials send unsigned
	// requests, which the local runtime accepts.
	Region       string
	Credentials  aws.CredentialsProvider
	BaseEndpoint *string
	// Lambda makes the Invoke calls. Default: a Lambda client built from
	// the fields above (New) or from the aws.Config (NewFromConfig).
	Lambda InvokeAPI
	// LambdaOptions adjust the Lambda client's options for every Invoke
	// call the client makes (retries, HTTP client, …); a call's option
	// functions may add more for that call.
	LambdaOptions []func(*lambda.Options)
}

// WithStackOutputs sets the function names from a deployed stack's outputs
// (CloudFormation DescribeStacks: OutputKey → OutputValue). Names the
// outputs do not hold are left as they are.
func WithStackOutputs(outputs map[string]string) func(*Options) {
	return func(o *Options) {
		if v := outputs[OutputEnqueueFunctionName]; v != "" {
			o.EnqueueFunction = v
		}
		if v := outputs[OutputAdminFunctionName]; v != "" {
			o.AdminFunction = v
		}
	}
}

// WithEndpoint points the client at the local runtime: it calls the
// Invoke API at url, such as "http://127.0.0.1:3001", with unsigned
// requests (the local runtime checks no signature), so it needs neither
// credentials nor a region, whatever the aws.Config holds: a machine
// without an AWS account works as the CLI does. To sign the requests to
// an endpoint of your own, set Options.BaseEndpoint instead.
func WithEndpoint(url string) func(*Options) {
	return func(o *Options) {
		o.BaseEndpoint = aws.String(url)
		o.Credentials = nil
	}
}

// Client enqueues jobs and runs admin operations. It is safe for
// concurrent use; build it once.
type Client struct {
	options Options
}

// New returns a client with options o, adjusted by optFns.
func New(o Options, optFns ...func(*Options)) *Client {
	o.LambdaOptions = slices.Clone(o.LambdaOptions)
	for _, f := range optFns {
		f(&o)
	}
	o.defaults()
	if o.Lambda == nil {
		lo := lambda.Options{Region: o.Region, Credentials: o.Credentials, BaseEndpoint: o.BaseEndpoint}
		o.localRules(&lo.Region, &lo.Credentials)
		o.Lambda = lambda.New(lo)
	}
	return &Client{options: o}
}

// NewFromConfig returns a client over cfg (region, credentials, endpoint,
// retries and HTTP client), adjusted by optFns.
func NewFromConfig(cfg aws.Config, optFns ...func(*Options)) *Client {
	o := Options{Region: cfg.Region, Credentials: cfg.Credentials, BaseEndpoint: cfg.BaseEndpoint}
	for _, f := range optFns {
		f(&o)
	}
	o.defaults()
	if o.Lambda == nil {
		cfg.Region, cfg.Credentials, cfg.BaseEndpoint = o.Region, o.Credentials, o.BaseEndpoint
		o.localRules(&cfg.Region, &cfg.Credentials)
		o.Lambda = lambda.NewFromConfig(cfg)
	}
	return &Client{options: o}
}

func (o *Options) defaults() {
	if o.EnqueueFunction == "" {
		o.EnqueueFunction = DefaultEnqueueFunction
	}
	if o.AdminFunction == "" {
		o.AdminFunction = DefaultAdminFunction
	}
}

// localRules lets a client with an endpoint (the local runtime) go
// without a region and credentials.
func (o *Options) localRules(region *string, creds *aws.CredentialsProvider) {
	if o.BaseEndpoint == nil {
		return
	}
	if *region == "" {
		*region = "us-east-1"
	}
	if *creds == nil {
		*creds = aws.AnonymousCredentials{}
	}
}

// Options returns a copy of the client's options, defaults filled.
func (c *Client) Options() Options {
	o := c.options
	o.LambdaOptions = slices.Clone(o.LambdaOptions)
	return o
}

// callOptions is the client's options as one call's optFns adjust them.
func (c *Client) callOptions(optFns []func(*Options)) Options {
	o := c.Options()
	for _, f := range optFns {
		f(&o)
	}
	return o
}

// invoke calls fn (the enqueue or admin function) with in and decodes
// its answer into out; errOf returns the answer's refusal, if any.
func (c *Client) invoke(ctx context.Context, op string, enqueue bool, in, out any, errOf func() *api.Error, optFns []func(*Options)) error {
	o := c.callOptions(optFns)
	fn := o.AdminFunction
	if enqueue {
		fn = o.EnqueueFunction
	}
	payload, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("slotq %s: encode request: %w", op, err)
	}
	res, err := o.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload}, o.LambdaOptions...)
	if err != nil {
		return fmt.Errorf("slotq %s: invoke %s: %w", op, fn, err)
	}
	if res.FunctionError != nil {
		return functionError(fn, aws.ToString(res.FunctionError), res.Payload)
	}
	if res.StatusCode != 0 && res.StatusCode != http.StatusOK {
		return fmt.Errorf("slotq %s: invoke %s: status %d", op, fn, res.StatusCode)
	}
	if err := json.Unmarshal(res.Payload, out); err != nil {
		return fmt.Errorf("slotq %s: %s answered %.200q: %w", op, fn, res.Payload, err)
	}
	if e := errOf(); e != nil {
		return &Error{Op: op, Code: e.Code, Field: e.Field, Message: e.Message}
	}
	return nil
}
