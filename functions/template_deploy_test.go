package functions_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// deployNeeds is what deploying each resource type of the stack asks of
// the deploying identity (CloudFormation acts with its credentials): the
// calls that create and update it. A type the stack uses that is not
// here fails TestDeployPolicyCoversTemplate: say what it needs first.
var deployNeeds = map[string][]string{
	"AWS::DynamoDB::Table":            {"dynamodb:CreateTable", "dynamodb:UpdateTable", "dynamodb:DescribeTable", "dynamodb:DeleteTable"},
	"AWS::SQS::Queue":                 {"sqs:CreateQueue", "sqs:SetQueueAttributes", "sqs:GetQueueAttributes", "sqs:DeleteQueue"},
	"AWS::Lambda::Function":           {"lambda:CreateFunction", "lambda:UpdateFunctionCode", "lambda:UpdateFunctionConfiguration", "lambda:GetFunction", "lambda:DeleteFunction"},
	"AWS::Lambda::EventSourceMapping": {"lambda:CreateEventSourceMapping", "lambda:UpdateEventSourceMapping", "lambda:GetEventSourceMapping", "lambda:DeleteEventSourceMapping"},
	"AWS::Lambda::EventInvokeConfig":  {"lambda:PutFunctionEventInvokeConfig", "lambda:UpdateFunctionEventInvokeConfig", "lambda:GetFunctionEventInvokeConfig", "lambda:DeleteFunctionEventInvokeConfig"},
	"AWS::IAM::Role":                  {"iam:CreateRole", "iam:GetRole", "iam:DeleteRole", "iam:PutRolePolicy", "iam:DeleteRolePolicy", "iam:AttachRolePolicy", "iam:DetachRolePolicy", "iam:PassRole"},
	"AWS::IAM::ManagedPolicy":         {"iam:CreatePolicy", "iam:CreatePolicyVersion", "iam:DeletePolicyVersion", "iam:ListPolicyVersions", "iam:DeletePolicy"},
	"AWS::Logs::LogGroup":             {"logs:CreateLogGroup", "logs:PutRetentionPolicy", "logs:DescribeLogGroups", "logs:DeleteLogGroup"},
	"AWS::Scheduler::Schedule":        {"scheduler:CreateSchedule", "scheduler:UpdateSchedule", "scheduler:GetSchedule", "scheduler:DeleteSchedule"},
	"AWS::CloudWatch::Alarm":          {"cloudwatch:PutMetricAlarm", "cloudwatch:DescribeAlarms", "cloudwatch:DeleteAlarms"},
	"AWS::CloudWatch::Dashboard":      {"cloudwatch:PutDashboard", "cloudwatch:GetDashboard", "cloudwatch:DeleteDashboards"},
}

// propertyNeeds is what a property asks beyond its type's calls: each is a
// call of its own on AWS, which a role that can create the resource may
// still lack.
var propertyNeeds = map[string]map[string][]string{
	"AWS::Lambda::Function": {
		"RecursiveLoop":                {"lambda:PutFunctionRecursionConfig", "lambda:GetFunctionRecursionConfig"},
		"ReservedConcurrentExecutions": {"lambda:PutFunctionConcurrency", "lambda:DeleteFunctionConcurrency"},
		"VpcConfig":                    {"ec2:DescribeSecurityGroups", "ec2:DescribeSubnets", "ec2:DescribeVpcs"},
		"Layers":                       {"lambda:GetLayerVersion"},
		"Tags":                         {"lambda:TagResource", "lambda:UntagResource", "lambda:ListTags"},
	},
	"AWS::IAM::Role": {
		"PermissionsBoundary": {"iam:PutRolePermissionsBoundary", "iam:DeleteRolePermissionsBoundary"},
		"Tags":                {"iam:TagRole", "iam:UntagRole"},
	},
	"AWS::DynamoDB::Table": {
		"TimeToLiveSpecification":          {"dynamodb:UpdateTimeToLive", "dynamodb:DescribeTimeToLive"},
		"PointInTimeRecoverySpecification": {"dynamodb:UpdateContinuousBackups", "dynamodb:DescribeContinuousBackups"},
		"Tags":                             {"dynamodb:TagResource", "dynamodb:UntagResource", "dynamodb:ListTagsOfResource"},
	},
	"AWS::SQS::Queue":        {"Tags": {"sqs:TagQueue", "sqs:UntagQueue", "sqs:ListQueueTags"}},
	"AWS::Logs::LogGroup":    {"Tags": {"logs:TagResource", "logs:UntagResource"}},
	"AWS::CloudWatch::Alarm": {"Tags": {"cloudwatch:TagResource", "cloudwatch:UntagResource"}},
}

// docs/deploy-policy.json, the policy docs/deploy.md gives a CI role that
// deploys the stack, allows every call deploying the stack's resources
// needs (as the SAM transform makes them, with a team's tags), the
// CloudFormation calls of `sam deploy` and SAM's transform, and passes
// roles to Lambda and EventBridge Scheduler only.
func TestDeployPolicyCoversTemplate(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "deploy-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Statement []struct {
			Effect    string
			Action    any
			Resource  any
			Condition map[string]map[string]any
		}
	}
	if err := json.Unmarshal(b, &policy); err != nil {
		t.Fatalf("docs/deploy-policy.json: %v", err)
	}
	allowed := map[string]bool{}
	for _, st := range policy.Statement {
		if st.Effect != "Allow" {
			t.Errorf("statement %v: want Allow", st)
		}
		for _, a := range asList(st.Action) {
			allowed[a.(string)] = true
			// A CI role that may write any role's policies can make
			// itself an administrator: its IAM calls reach the stack's
			// own roles and policies only, and it attaches no policy but
			// the stack's and Lambda's own.
			if strings.HasPrefix(a.(string), "iam:") {
				for _, r := range asList(st.Resource) {
					if !strings.HasPrefix(r.(string), "arn:aws:iam::*:role/slotq-") && !strings.HasPrefix(r.(string), "arn:aws:iam::*:policy/slotq-") {
						t.Errorf("%s on %v: want the stack's roles or policies only (arn:aws:iam::*:role/slotq-*, arn:aws:iam::*:policy/slotq-*)", a, r)
					}
				}
			}
			if a == "iam:AttachRolePolicy" {
				for _, arn := range asList(st.Condition["ArnLike"]["iam:PolicyARN"]) {
					if s := arn.(string); !strings.HasPrefix(s, "arn:aws:iam::*:policy/slotq-") && !strings.HasPrefix(s, "arn:aws:iam::aws:policy/service-role/AWSLambda") {
						t.Errorf("iam:AttachRolePolicy may attach %s: want the stack's policies and Lambda's execution roles only", s)
					}
				}
				if len(asList(st.Condition["ArnLike"]["iam:PolicyARN"])) == 0 {
					t.Errorf("iam:AttachRolePolicy has no iam:PolicyARN condition: the CI role could attach AdministratorAccess to a role it creates")
				}
			}
			if a == "iam:PassRole" {
				svcs := asList(st.Condition["StringEquals"]["iam:PassedToService"])
				if len(svcs) != 2 || !slices.Contains(svcs, any("lambda.amazonaws.com")) || !slices.Contains(svcs, any("scheduler.amazonaws.com")) {
					t.Errorf("iam:PassRole is passed to %v, want lambda.amazonaws.com and scheduler.amazonaws.com only", svcs)
				}
			}
		}
	}
	need := map[string][]string{} // action → what needs it
	add := func(why string, actions ...string) {
		for _, a := range actions {
			need[a] = append(need[a], why)
		}
	}
	add("sam deploy", "cloudformation:CreateChangeSet", "cloudformation:ExecuteChangeSet", "cloudformation:DescribeChangeSet",
		"cloudformation:DescribeStacks", "cloudformation:DescribeStackEvents", "cloudformation:GetTemplateSummary",
		"s3:PutObject", "s3:GetObject")
	path := generated(t, "Tags:\n  Team: payments\n")
	for id, r := range transform(t, path).Resources {
		actions, ok := deployNeeds[r.Type]
		if !ok {
			t.Errorf("%s: what does deploying a %s need? Say in deployNeeds", id, r.Type)
			continue
		}
		add(id, actions...)
		for prop := range r.Properties {
			add(id+"."+prop, propertyNeeds[r.Type][prop]...)
		}
	}
	for _, a := range slices.Sorted(maps.Keys(need)) {
		if !allowed[a] {
			t.Errorf("docs/deploy-policy.json does not allow %s, which %s needs", a, strings.Join(slices.Compact(slices.Sorted(slices.Values(need[a]))), ", "))
		}
	}
	deploy, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(deploy), "(deploy-policy.json)") {
		t.Error("docs/deploy.md does not link deploy-policy.json")
	}
}
