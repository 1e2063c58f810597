package functions_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestTemplateProduction holds what the stack needs on a real account and
// no emulator shows, on the template as the SAM transform makes it:
// Lambda's recursive-loop detection, the resume function's asynchronous
// invocation, a first deploy that rolls back, and what enterprise
// accounts require (a permissions boundary on every role, a worker that
// can run in a VPC).
func TestTemplateProduction(t *testing.T) {
	tmpl := transform(t, filepath.Join(root, "template.yaml"))
	res := tmpl.Resources
	prop := func(id, name string) any { return res[id].Properties[name] }
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	t.Run("RecursiveLoop", func(t *testing.T) {
		// The worker sends messages back to the queue that invokes it.
		if got := prop("WorkerFunction", "RecursiveLoop"); got != "Allow" {
			t.Errorf("WorkerFunction RecursiveLoop = %v, want Allow: Lambda stops a chain after about 16 hops", got)
		}
		found := false
		for id, r := range res {
			if r.Type != "AWS::CloudWatch::Alarm" || r.Properties["MetricName"] != "RecursiveInvocationsDropped" {
				continue
			}
			found = true
			if d := js(r.Properties["Dimensions"]); d != `[{"Name":"FunctionName","Value":{"Ref":"WorkerFunction"}}]` {
				t.Errorf("%s watches %s, want the worker function", id, d)
			}
		}
		if !found {
			t.Error("no alarm on the worker's RecursiveInvocationsDropped")
		}
	})

	t.Run("ResumeAsyncInvoke", func(t *testing.T) {
		var cfg map[string]any
		for _, r := range res {
			if r.Type == "AWS::Lambda::EventInvokeConfig" && js(r.Properties["FunctionName"]) == `{"Ref":"ResumeFunction"}` {
				cfg = r.Properties
			}
		}
		if cfg == nil {
			t.Fatal("no EventInvokeConfig for the resume function: a failed run is retried twice, events kept 6 hours")
		}
		if cfg["MaximumRetryAttempts"] != 0.0 {
			t.Errorf("MaximumRetryAttempts = %v, want 0: the next minute's run does the work", cfg["MaximumRetryAttempts"])
		}
		if age, _ := cfg["MaximumEventAgeInSeconds"].(float64); age < 60 || age > 120 {
			t.Errorf("MaximumEventAgeInSeconds = %v, want a minute or two", cfg["MaximumEventAgeInSeconds"])
		}
	})

	t.Run("TableOnFailedCreate", func(t *testing.T) {
		if p := res["Table"].DeletionPolicy; p != "RetainExceptOnCreate" {
			t.Errorf("Table DeletionPolicy = %q, want RetainExceptOnCreate: a first deploy that rolls back must not leave a protected table behind", p)
		}
	})

	t.Run("PermissionsBoundary", func(t *testing.T) {
		want := `{"Fn::If":["HasPermissionsBoundary",{"Ref":"PermissionsBoundary"},{"Ref":"AWS::NoValue"}]}`
		roles := 0
		for id, r := range res {
			if r.Type != "AWS::IAM::Role" {
				continue
			}
			roles++
			if got := js(r.Properties["PermissionsBoundary"]); got != want {
				t.Errorf("role %s: PermissionsBoundary %s, want %s", id, got, want)
			}
		}
		if roles < 5 {
			t.Errorf("%d roles; want the four functions' and the schedule's", roles)
		}
		if c := js(tmpl.Conditions["HasPermissionsBoundary"]); c != `{"Fn::Not":[{"Fn::Equals":[{"Ref":"PermissionsBoundary"},""]}]}` {
			t.Errorf("HasPermissionsBoundary = %s", c)
		}
	})

	t.Run("WorkerVpc", func(t *testing.T) {
		want := `{"Fn::If":["WorkerInVpc",{"SecurityGroupIds":{"Ref":"WorkerSecurityGroupIds"},"SubnetIds":{"Ref":"WorkerSubnetIds"}},{"Ref":"AWS::NoValue"}]}`
		if got := js(prop("WorkerFunction", "VpcConfig")); got != want {
			t.Errorf("WorkerFunction VpcConfig = %s, want %s", got, want)
		}
		// In a VPC, Lambda manages the worker's network interfaces with
		// its role: the VPC access policy, under the same condition.
		attached := false
		for _, arn := range asList(res["WorkerRole"].Properties["ManagedPolicyArns"]) {
			if args, ok := asMapAny(arn)["Fn::If"].([]any); ok && args[0] == "WorkerInVpc" {
				s, _ := evalName(tmpl, args[1], "slotq")
				attached = s == vpcAccess
			}
		}
		if !attached {
			t.Errorf("WorkerRole lacks %s when WorkerInVpc", vpcAccess)
		}
	})
}

// TestTemplateTags: a team's stack.yaml Tags reach every resource that
// takes tags once SAM has made the functions' roles and event source,
// and the stack with them still passes cfn-lint.
func TestTemplateTags(t *testing.T) {
	path := generated(t, "Tags:\n  CostCenter: \"1234\"\n")
	lint(t, path)
	// The types of the transformed stack that take tags, and those that
	// take none.
	takes := map[string]bool{
		"AWS::Lambda::Function": true, "AWS::IAM::Role": true, "AWS::DynamoDB::Table": true, "AWS::SQS::Queue": true,
		"AWS::Logs::LogGroup": true, "AWS::CloudWatch::Alarm": true,
		// SAM does not propagate a function's tags to the event source
		// mapping it makes; stack-level tags (sam deploy --tags) reach it.
		"AWS::Lambda::EventSourceMapping": false,
		"AWS::IAM::ManagedPolicy":         false, "AWS::CloudWatch::Dashboard": false, "AWS::Scheduler::Schedule": false,
		"AWS::Lambda::EventInvokeConfig": false,
	}
	for id, r := range transform(t, path).Resources {
		want, known := takes[r.Type]
		if !known {
			t.Errorf("%s: does %s take tags? Say in TestTemplateTags", id, r.Type)
			continue
		}
		if !want {
			continue
		}
		found := false
		for _, tag := range asList(r.Properties["Tags"]) {
			m := asMapAny(tag)
			found = found || (m["Key"] == "CostCenter" && m["Value"] == "1234")
		}
		if !found {
			t.Errorf("%s (%s): Tags %v, want CostCenter=1234", id, r.Type, r.Properties["Tags"])
		}
	}
}
