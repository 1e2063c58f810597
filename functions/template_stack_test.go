package functions_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The template as AWS deploys it: `sam deploy` has CloudFormation run the
// SAM transform, which these tests run with the SAM translator that ships
// with cfn-lint (testdata/sam_transform.py), to read the roles, schedules
// and names SAM makes.

// samPython returns the Python interpreter that runs cfn-lint, which can
// import the SAM translator. Missing, the test fails under
// SLOTQ_REQUIRE_LOCAL_AWS=1 (make test) and is skipped otherwise.
func samPython(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("SLOTQ_REQUIRE_LOCAL_AWS") == "1" {
			t.Fatalf("%s: cfn-lint and the SAM translator ship with the machine image's Python (pip install cfn-lint)", why)
		}
		t.Skip(why)
	}
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		missing("cfn-lint is not installed")
	}
	if strings.Contains(filepath.ToSlash(bin), "/shims/") {
		if out, err := exec.Command("pyenv", "which", "cfn-lint").Output(); err == nil {
			bin = strings.TrimSpace(string(out))
		}
	}
	f, err := os.Open(bin)
	if err != nil {
		missing(err.Error())
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	py := strings.TrimSpace(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || !strings.Contains(py, "python") {
		missing("cannot tell cfn-lint's Python from " + bin)
	}
	return strings.Fields(py)[0]
}

// cfnTemplate is a template after the SAM transform.
type cfnTemplate struct {
	Parameters map[string]map[string]any
	Conditions map[string]any
	Resources  map[string]struct {
		Type           string
		Condition      string
		DeletionPolicy string
		Properties     map[string]any
	}
}

// transform runs the SAM transform on the template at path.
func transform(t *testing.T, path string) cfnTemplate {
	t.Helper()
	cmd := exec.Command(samPython(t), filepath.Join("testdata", "sam_transform.py"), path)
	cmd.Stderr = new(strings.Builder)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("SAM transform of %s: %v\n%s", path, err, cmd.Stderr)
	}
	var tmpl cfnTemplate
	if err := json.Unmarshal(out, &tmpl); err != nil {
		t.Fatalf("SAM transform of %s: %v", path, err)
	}
	return tmpl
}

// physicalNames lists, per resource type the stacks use, the property that
// names it in the account. A resource without it gets a name
// CloudFormation makes from the stack's name, its logical id and a random
// part. A type not listed here fails TestStacksCoexist: say how it is
// named first.
var physicalNames = map[string]string{
	"AWS::DynamoDB::Table":            "TableName",
	"AWS::SQS::Queue":                 "QueueName",
	"AWS::Lambda::Function":           "FunctionName",
	"AWS::Lambda::EventSourceMapping": "",
	"AWS::Lambda::EventInvokeConfig":  "",
	"AWS::IAM::Role":                  "RoleName",
	"AWS::IAM::ManagedPolicy":         "ManagedPolicyName",
	"AWS::Logs::LogGroup":             "LogGroupName",
	"AWS::Scheduler::Schedule":        "Name",
	"AWS::CloudWatch::Alarm":          "AlarmName",
	"AWS::CloudWatch::Dashboard":      "DashboardName",
}

// TestStacksCoexist deploys the template, on paper, as two stacks of one
// account and region (a dev and a prod stage): no resource of one may
// have the physical name of a resource of the other.
func TestStacksCoexist(t *testing.T) {
	stacksCoexist(t, transform(t, filepath.Join(root, "template.yaml")))
}

func stacksCoexist(t *testing.T, tmpl cfnTemplate) {
	t.Helper()
	names := func(stack string) map[string]string {
		out := map[string]string{}
		for id, r := range tmpl.Resources {
			prop, known := physicalNames[r.Type]
			if !known {
				t.Errorf("%s: resource type %s is not in physicalNames: how is it named?", id, r.Type)
				continue
			}
			v, ok := r.Properties[prop]
			if prop == "" || !ok {
				continue // CloudFormation names it after the stack
			}
			name, err := evalName(tmpl, v, stack)
			if err != "" {
				t.Errorf("%s.%s: %s", id, prop, err)
				continue
			}
			if r.Type == "AWS::Scheduler::Schedule" {
				group, _ := evalName(tmpl, r.Properties["GroupName"], stack)
				name = group + "/" + name // names are unique per schedule group
			}
			out[r.Type+" "+name] = id
		}
		return out
	}
	dev, prod := names("slotq-dev"), names("slotq-prod")
	for name, id := range dev {
		if other, ok := prod[name]; ok {
			t.Errorf("stacks slotq-dev and slotq-prod both create %s (%s, %s)", name, id, other)
		}
	}
}

// evalName works out a physical name as CloudFormation would in a stack
// called stack, with the parameters' defaults; a logical id's Ref is the
// name CloudFormation makes for it (stack-LogicalId-RANDOM). It returns an
// error message for what it cannot work out.
func evalName(tmpl cfnTemplate, v any, stack string) (string, string) {
	ref := func(name string) (string, string) {
		switch name {
		case "AWS::StackName":
			return stack, ""
		case "AWS::Region":
			return "us-east-1", ""
		case "AWS::AccountId":
			return "123456789012", ""
		case "AWS::Partition":
			return "aws", ""
		}
		if p, ok := tmpl.Parameters[name]; ok {
			if d, ok := p["Default"].(string); ok {
				return d, ""
			}
			return "", "parameter " + name + " has no string default"
		}
		if _, ok := tmpl.Resources[name]; ok {
			return stack + "-" + name + "-RANDOM", ""
		}
		return "", "unknown Ref " + name
	}
	switch x := v.(type) {
	case nil:
		return "", ""
	case string:
		return x, ""
	case map[string]any:
		if r, ok := x["Ref"].(string); ok {
			return ref(r)
		}
		if ga, ok := x["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
			s, err := ref(ga[0].(string))
			return s + "." + ga[1].(string), err
		}
		if sub, ok := x["Fn::Sub"].(string); ok {
			var msg string
			out := regexp.MustCompile(`\$\{([^}]+)\}`).ReplaceAllStringFunc(sub, func(m string) string {
				s, err := ref(strings.SplitN(m[2:len(m)-1], ".", 2)[0])
				if err != "" {
					msg = err
				}
				return s
			})
			return out, msg
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			items, _ := j[1].([]any)
			parts := make([]string, len(items))
			for i, it := range items {
				s, err := evalName(tmpl, it, stack)
				if err != "" {
					return "", err
				}
				parts[i] = s
			}
			return strings.Join(parts, j[0].(string)), ""
		}
	}
	return "", "cannot work out the name " + jsonString(v)
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
