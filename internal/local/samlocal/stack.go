package samlocal

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/local/lambdahost"
	"github.com/slotq/slotq/internal/sqstransport"
)

// Options configure Up.
type Options struct {
	// StackName prefixes physical names: table "<stack>-Table", queue
	// "<stack>-SlotQueue". Default "slotq".
	StackName string
	// Params override parameter defaults, like sam's --parameter-overrides.
	Params map[string]string
	// Region and AccountID make up ARNs. Defaults us-east-1 and
	// 123456789012 (moto's account).
	Region    string
	AccountID string
}

// Stack is a template's resources, created locally.
type Stack struct {
	Template *Template
	Resolver Resolver
	// Tables and Queues map logical ids to table names and queue URLs.
	Tables map[string]string
	Queues map[string]string
	opts   Options
}

// Up creates the template's DynamoDB tables and SQS queues (with their
// redrive to a dead-letter queue) on the endpoints of awsCfg. Existing
// ones are reused, so Up may run again on the same endpoint.
func Up(ctx context.Context, t *Template, awsCfg aws.Config, opts Options) (*Stack, error) {
	if opts.StackName == "" {
		opts.StackName = "slotq"
	}
	if opts.Region == "" {
		opts.Region = awsCfg.Region
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.AccountID == "" {
		opts.AccountID = "123456789012"
	}
	s := &Stack{Template: t, Tables: map[string]string{}, Queues: map[string]string{}, opts: opts,
		Resolver: Resolver{Params: map[string]string{}, Refs: map[string]string{}, Attrs: map[string]string{}, Conditions: t.Conditions, Mappings: t.Mappings}}
	for name, p := range t.Parameters {
		s.Resolver.Params[name] = fmt.Sprint(p["Default"])
		if p["Default"] == nil {
			s.Resolver.Params[name] = ""
		}
	}
	for name, v := range opts.Params {
		if _, ok := t.Parameters[name]; !ok {
			return nil, fmt.Errorf("parameter %s is not in the template", name)
		}
		s.Resolver.Params[name] = v
	}
	s.Resolver.Params["AWS::Region"] = opts.Region
	s.Resolver.Params["AWS::AccountId"] = opts.AccountID
	s.Resolver.Params["AWS::StackName"] = opts.StackName

	ddb := dynamodb.NewFromConfig(awsCfg)
	sq := sqs.NewFromConfig(awsCfg)
	for id, r := range t.Resources {
		switch r.Type {
		case "AWS::DynamoDB::Table":
			name := opts.StackName + "-" + id
			if err := dynamostore.CreateTable(ctx, ddb, name); err != nil {
				return nil, err
			}
			s.Tables[id] = name
			s.Resolver.Refs[id] = name
			s.Resolver.Attrs[id+".Arn"] = fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", opts.Region, opts.AccountID, name)
		case "AWS::Logs::LogGroup":
			// Named as CloudFormation names a log group without a
			// LogGroupName (less its random suffix); nothing is created:
			// a function that reads it locally gets the endpoint's
			// answer (ResourceNotFoundException, say).
			name := opts.StackName + "-" + id
			s.Resolver.Refs[id] = name
			s.Resolver.Attrs[id+".Arn"] = fmt.Sprintf("arn:aws:logs:%s:%s:log-group:%s:*", opts.Region, opts.AccountID, name)
		case "AWS::SQS::Queue":
			redrive := asMap(r.Properties["RedrivePolicy"])
			if len(redrive) == 0 {
				continue // a dead-letter queue: created with the queue it serves
			}
			dlqID := ""
			if ga, ok := asMap(redrive["deadLetterTargetArn"])["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
				dlqID = fmt.Sprint(ga[0])
			}
			v, err := s.Resolver.String(r.Properties["VisibilityTimeout"])
			if err != nil {
				return nil, fmt.Errorf("%s: VisibilityTimeout: %w", id, err)
			}
			vis, err := strconv.Atoi(v)
			if err != nil {
				vis = 30
			}
			name := opts.StackName + "-" + id
			url, dlqURL, err := sqstransport.CreateQueues(ctx, sq, name, time.Duration(vis)*time.Second)
			if err != nil {
				return nil, err
			}
			s.addQueue(id, name, url)
			if dlqID != "" {
				s.addQueue(dlqID, name+"-dlq", dlqURL)
			}
		}
	}
	for _, id := range t.Functions() {
		s.Resolver.Refs[id] = id
		s.Resolver.Attrs[id+".Arn"] = s.FunctionARN(id)
	}
	return s, nil
}

func (s *Stack) addQueue(id, name, url string) {
	s.Queues[id] = url
	s.Resolver.Refs[id] = url
	s.Resolver.Attrs[id+".QueueName"] = name
	s.Resolver.Attrs[id+".QueueUrl"] = url
	s.Resolver.Attrs[id+".Arn"] = fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.opts.Region, s.opts.AccountID, name)
}

// FunctionARN is the ARN a function has in the local stack.
func (s *Stack) FunctionARN(id string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", s.opts.Region, s.opts.AccountID, id)
}

// Env is a function's environment as Lambda sets it from the template:
// its Environment.Variables over the Globals', resolved, and the logging
// configuration's AWS_LAMBDA_LOG_FORMAT and AWS_LAMBDA_LOG_LEVEL. A
// variable the template sets to "" is left out, so the local environment
// (AWS_ENDPOINT_URL, say) shows through, as with sam's --env-vars.
func (s *Stack) Env(id string) (map[string]string, error) {
	f, err := s.Template.Function(id)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for k, v := range f.Env {
		val, err := s.Resolver.String(v)
		if err != nil {
			return nil, fmt.Errorf("%s: variable %s: %w", id, k, err)
		}
		if val != "" {
			env[k] = val
		}
	}
	if f.LogFormat != "" {
		env["AWS_LAMBDA_LOG_FORMAT"] = f.LogFormat
		if f.LogLevel != nil {
			lvl, err := s.Resolver.String(f.LogLevel)
			if err != nil {
				return nil, fmt.Errorf("%s: log level: %w", id, err)
			}
			env["AWS_LAMBDA_LOG_LEVEL"] = lvl
		}
	}
	return env, nil
}

// Host returns the lambdahost functions for ids, with their bootstraps
// under dir (as Build put them), environments and timeouts.
func (s *Stack) Host(dir string, ids ...string) ([]lambdahost.Function, error) {
	if len(ids) == 0 {
		ids = s.Template.Functions()
	}
	var fns []lambdahost.Function
	for _, id := range ids {
		f, err := s.Template.Function(id)
		if err != nil {
			return nil, err
		}
		env, err := s.Env(id)
		if err != nil {
			return nil, err
		}
		fns = append(fns, lambdahost.Function{
			Name: id, Path: filepath.Join(dir, id, "bootstrap"), Env: env,
			Timeout: time.Duration(f.Timeout) * time.Second, MemoryMB: f.MemorySize,
		})
	}
	return fns, nil
}

// Build builds the bootstraps of ids (default: every function) under
// dir/<LogicalId>/bootstrap with their Makefile targets, as `sam build`
// does, but for the host's architecture so they run here.
func Build(ctx context.Context, root, dir string, ids ...string) error {
	for _, id := range ids {
		out := filepath.Join(dir, id)
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", root, "build-"+id,
			"ARTIFACTS_DIR="+out, "LAMBDA_GOARCH="+runtime.GOARCH)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("make build-%s: %w\n%s", id, err, b)
		}
	}
	return nil
}
