package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/pkg/lambdafn"
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

// Options configure a Client.
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
	// Endpoint, if set, is the base URL of the Invoke API, such as
	// "http://127.0.0.1:3001" for the local runtime. Default: the SDK's
	// (AWS, or AWS_ENDPOINT_URL_LAMBDA). With an Endpoint, a config with
	// no region gets us-east-1 and one with no credentials provider sends
	// unsigned requests, which the local runtime accepts.
	Endpoint string
	// Lambda makes the Invoke calls. Default lambda.NewFromConfig with the
	// aws.Config given to New, Endpoint and LambdaOptions.
	Lambda InvokeAPI
	// LambdaOptions adjust the default Lambda client (retries, HTTP
	// client, …). Ignored when Lambda is set.
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

// WithEndpoint sets Options.Endpoint: the client calls the Invoke API at
// url, such as the local runtime's "http://127.0.0.1:3001".
func WithEndpoint(url string) func(*Options) {
	return func(o *Options) { o.Endpoint = url }
}

// Client enqueues jobs and runs admin operations. It is safe for
// concurrent use; build it once.
type Client struct {
	opts Options
}

// New returns a client over cfg. Options start at their defaults and each
// optFn adjusts them.
func New(cfg aws.Config, optFns ...func(*Options)) *Client {
	o := Options{EnqueueFunction: DefaultEnqueueFunction, AdminFunction: DefaultAdminFunction}
	for _, f := range optFns {
		f(&o)
	}
	if o.Lambda == nil {
		if o.Endpoint != "" {
			if cfg.Region == "" {
				cfg.Region = "us-east-1"
			}
			if cfg.Credentials == nil {
				cfg.Credentials = aws.AnonymousCredentials{}
			}
		}
		fns := append([]func(*lambda.Options){}, o.LambdaOptions...)
		if o.Endpoint != "" {
			fns = append(fns, func(lo *lambda.Options) { lo.BaseEndpoint = aws.String(o.Endpoint) })
		}
		o.Lambda = lambda.NewFromConfig(cfg, fns...)
	}
	return &Client{opts: o}
}

// Options returns a copy of the client's options, defaults filled.
func (c *Client) Options() Options { return c.opts }

// invoke calls fn with in and decodes its answer into out, an answer type
// of pkg/lambdafn with an Error field that errOf returns.
func (c *Client) invoke(ctx context.Context, op, fn string, in, out any, errOf func() *lambdafn.Error) error {
	payload, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("slotq %s: encode request: %w", op, err)
	}
	res, err := c.opts.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload})
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
