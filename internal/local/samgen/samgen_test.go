package samgen_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/slotq/slotq"
	"github.com/slotq/slotq/internal/local/samgen"
	"github.com/slotq/slotq/internal/local/samlocal"
)

func parse(t *testing.T, b []byte) *samlocal.Template {
	t.Helper()
	tmpl, err := samlocal.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// Without a project part, the template is slotq's.
func TestGenerateNothing(t *testing.T) {
	out, err := samgen.Generate(slotq.Template, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, got := parse(t, slotq.Template), parse(t, out)
	if !reflect.DeepEqual(want, got) {
		t.Error("the template written without a project part is not slotq's")
	}
}

const acme = `
Description: acme jobs
Parameters:
  PartnerUrl:
    Type: String
    Default: https://httpbin.org/post
Resources:
  WorkerFunction:
    Properties:
      Description: acme worker
      MemorySize: 256
      Environment:
        Variables:
          ACME_PARTNER_URL: !Ref PartnerUrl
  WorkerRole:
    Properties:
      Policies:
        - PolicyName: Reports
          PolicyDocument:
            Statement:
              - {Effect: Allow, Action: s3:PutObject, Resource: !Sub "${Reports.Arn}/*"}
  Reports:
    Type: AWS::S3::Bucket
Outputs:
  ReportsBucket:
    Value: !Ref Reports
`

// A project's part adds its parameters, resources and outputs, and
// changes the worker as a worker of one's own needs; the rest is slotq's.
func TestGenerateProject(t *testing.T) {
	out, err := samgen.Generate(slotq.Template, []byte(acme))
	if err != nil {
		t.Fatal(err)
	}
	base, got := parse(t, slotq.Template), parse(t, out)
	if got.Parameters["PartnerUrl"]["Default"] != "https://httpbin.org/post" {
		t.Errorf("PartnerUrl %v", got.Parameters["PartnerUrl"])
	}
	if got.Resources["Reports"].Type != "AWS::S3::Bucket" {
		t.Errorf("Reports %v", got.Resources["Reports"])
	}
	w, err := got.Function("WorkerFunction")
	if err != nil {
		t.Fatal(err)
	}
	if w.Properties["Description"] != "acme worker" || w.MemorySize != 256 {
		t.Errorf("worker Description %v, MemorySize %d", w.Properties["Description"], w.MemorySize)
	}
	if !reflect.DeepEqual(w.Env["ACME_PARTNER_URL"], map[string]any{"Ref": "PartnerUrl"}) {
		t.Errorf("ACME_PARTNER_URL %v", w.Env["ACME_PARTNER_URL"])
	}
	bw, _ := base.Function("WorkerFunction")
	for k, v := range bw.Env {
		if !reflect.DeepEqual(w.Env[k], v) {
			t.Errorf("slotq's %s became %v", k, w.Env[k])
		}
	}
	policies := got.Resources["WorkerRole"].Properties["Policies"].([]any)
	basePolicies := base.Resources["WorkerRole"].Properties["Policies"].([]any)
	if len(policies) != len(basePolicies)+1 || !reflect.DeepEqual(policies[:len(basePolicies)], basePolicies) {
		t.Errorf("WorkerRole policies: %d, want slotq's %d and acme's", len(policies), len(basePolicies))
	}
	for id, r := range base.Resources {
		if id == "WorkerFunction" || id == "WorkerRole" {
			continue
		}
		if !reflect.DeepEqual(got.Resources[id], r) {
			t.Errorf("%s is not slotq's", id)
		}
	}
	for name, p := range base.Parameters {
		if !reflect.DeepEqual(got.Parameters[name], p) {
			t.Errorf("parameter %s is not slotq's", name)
		}
	}
}

// What a project may not change of slotq's stack is refused, naming the
// field.
func TestGenerateRefuses(t *testing.T) {
	for _, tc := range []struct{ part, field string }{
		{"Globals:\n  Function:\n    Timeout: 3\n", "Globals"},
		{"Parameters:\n  LogLevel:\n    Type: String\n", "Parameters.LogLevel"},
		{"Resources:\n  Table:\n    Properties:\n      BillingMode: PROVISIONED\n", "Resources.Table"},
		{"Resources:\n  WorkerFunction:\n    Properties:\n      Timeout: 900\n", "Resources.WorkerFunction.Properties.Timeout"},
		{"Resources:\n  WorkerFunction:\n    Metadata:\n      BuildMethod: go1.x\n", "Resources.WorkerFunction.Metadata"},
		{"Resources:\n  WorkerFunction:\n    Properties:\n      Environment:\n        Variables:\n          SLOTQ_TABLE: x\n",
			"Resources.WorkerFunction.Properties.Environment.Variables.SLOTQ_TABLE"},
		{"Resources:\n  WorkerRole:\n    Properties:\n      AssumeRolePolicyDocument: {}\n", "Resources.WorkerRole.Properties.AssumeRolePolicyDocument"},
		{"Outputs:\n  TableName:\n    Value: x\n", "Outputs.TableName"},
		{"Parameters:\n  LogLevel:\n    Default: DEBUG\n    AllowedValues: [DEBUG]\n", "Parameters.LogLevel"},
		{"Parameters:\n  WorkerSubnetIds:\n    Default: [a, b]\n", "Parameters.WorkerSubnetIds.Default"},
		{"Tags:\n  aws:cloudformation: x\n", "Tags.aws:cloudformation"},
		{"Tags: [a]\n", "Tags"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			_, err := samgen.Generate(slotq.Template, []byte(tc.part))
			var e *samgen.Error
			if !errors.As(err, &e) || e.Field != tc.field {
				t.Errorf("error %v, want a samgen.Error of field %s", err, tc.field)
			}
		})
	}
}

// An enterprise account's stack: slotq's parameters get the project's
// defaults, every resource that takes tags carries the project's, and the
// worker may trace and reserve concurrency.
func TestGenerateEnterprise(t *testing.T) {
	part := `
Parameters:
  PermissionsBoundary:
    Default: arn:aws:iam::123456789012:policy/TeamBoundary
  WorkerSubnetIds:
    Default: subnet-1,subnet-2
  DefaultLimit:
    Default: rate 100/1m burst 10
Tags:
  CostCenter: "1234"
  Team: payments
Resources:
  WorkerFunction:
    Properties:
      Tracing: Active
      ReservedConcurrentExecutions: 20
`
	out, err := samgen.Generate(slotq.Template, []byte(part))
	if err != nil {
		t.Fatal(err)
	}
	got, base := parse(t, out), parse(t, slotq.Template)
	if d := got.Parameters["PermissionsBoundary"]["Default"]; d != "arn:aws:iam::123456789012:policy/TeamBoundary" {
		t.Errorf("PermissionsBoundary default %v", d)
	}
	if d := got.Parameters["WorkerSubnetIds"]["Default"]; d != "subnet-1,subnet-2" {
		t.Errorf("WorkerSubnetIds default %v", d)
	}
	if d := got.Parameters["DefaultLimit"]["Default"]; d != "rate 100/1m burst 10" {
		t.Errorf("DefaultLimit default %v", d)
	}
	if !reflect.DeepEqual(got.Parameters["DefaultLimit"]["AllowedPattern"], base.Parameters["DefaultLimit"]["AllowedPattern"]) {
		t.Error("DefaultLimit: more than its default changed")
	}
	if !reflect.DeepEqual(got.Parameters["PermissionsBoundary"]["Type"], base.Parameters["PermissionsBoundary"]["Type"]) {
		t.Error("PermissionsBoundary: more than its default changed")
	}
	w := got.Resources["WorkerFunction"].Properties
	if w["Tracing"] != "Active" || fmt.Sprint(w["ReservedConcurrentExecutions"]) != "20" {
		t.Errorf("worker Tracing %#v, ReservedConcurrentExecutions %#v", w["Tracing"], w["ReservedConcurrentExecutions"])
	}
	tagged := 0
	for id, r := range got.Resources {
		tags := r.Properties["Tags"]
		switch r.Type {
		case "AWS::Serverless::Function":
			if !reflect.DeepEqual(tags, map[string]any{"CostCenter": "1234", "Team": "payments"}) || fmt.Sprint(r.Properties["PropagateTags"]) != "true" {
				t.Errorf("%s: Tags %#v, PropagateTags %#v", id, tags, r.Properties["PropagateTags"])
			}
		case "AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Logs::LogGroup", "AWS::IAM::Role", "AWS::CloudWatch::Alarm":
			want := []any{map[string]any{"Key": "CostCenter", "Value": "1234"}, map[string]any{"Key": "Team", "Value": "payments"}}
			if !reflect.DeepEqual(tags, want) {
				t.Errorf("%s: Tags %v", id, tags)
			}
		default:
			continue
		}
		tagged++
	}
	if tagged < 20 {
		t.Errorf("%d resources tagged; want every function, role, table, queue, log group and alarm", tagged)
	}
}

// A team's production stack picks every alarm and the dashboard in its
// stack.yaml (the parameters' defaults), so that no deploy has to give
// them; the alarms and the dashboard keep their Conditions, which those
// defaults then turn on. slotq's own default makes DeadLetterAlarm only.
func TestGenerateAlarms(t *testing.T) {
	part := "Parameters:\n  Alarms:\n    Default: all\n  Dashboard:\n    Default: \"true\"\n"
	out, err := samgen.Generate(slotq.Template, []byte(part))
	if err != nil {
		t.Fatal(err)
	}
	got, base := parse(t, out), parse(t, slotq.Template)
	for _, p := range []string{"Alarms", "Dashboard"} {
		if !reflect.DeepEqual(got.Parameters[p]["AllowedValues"], base.Parameters[p]["AllowedValues"]) {
			t.Errorf("%s: AllowedValues %v, want slotq's %v", p, got.Parameters[p]["AllowedValues"], base.Parameters[p]["AllowedValues"])
		}
	}
	conditions := func(b []byte) map[string]string {
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		res := samgen.Value(doc.Content[0], "Resources")
		for i := 0; i+1 < len(res.Content); i += 2 {
			typ := samgen.Value(res.Content[i+1], "Type").Value
			if typ != "AWS::CloudWatch::Alarm" && typ != "AWS::CloudWatch::Dashboard" {
				continue
			}
			c := samgen.Value(res.Content[i+1], "Condition")
			if c == nil {
				t.Errorf("%s has no Condition: it would be made whatever Alarms and Dashboard say", res.Content[i].Value)
				continue
			}
			out[res.Content[i].Value] = c.Value
		}
		return out
	}
	if g, b := conditions(out), conditions(slotq.Template); !reflect.DeepEqual(g, b) || len(g) < 2 {
		t.Errorf("the generated stack's alarms and dashboard under %v, slotq's under %v", g, b)
	}
	for _, c := range []struct {
		tmpl *samlocal.Template
		name string
		want bool
	}{
		{base, "HasDeadLetterAlarm", true}, {base, "HasAllAlarms", false}, {base, "HasDashboard", false},
		{got, "HasDeadLetterAlarm", true}, {got, "HasAllAlarms", true}, {got, "HasDashboard", true},
	} {
		if yes, err := c.tmpl.Resolver().Condition(c.name); err != nil || yes != c.want {
			t.Errorf("%s = %v (%v), want %v (generated: %v)", c.name, yes, err, c.want, c.tmpl == got)
		}
	}
}
