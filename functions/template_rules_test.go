package functions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dev/dynamolocal"
)

// refusal is what CloudFormation would refuse of a parameter set before it
// creates or changes anything: Parameters.NAME (the parameter's own
// constraints) or Rules.NAME (an assertion).
type refusal struct {
	Where   string `json:"where"`
	Message string `json:"message"`
}

// refused transforms the template at path with the SAM translator, once
// for each named parameter set, and evaluates each parameter's
// constraints and the template's Rules with those values
// (testdata/sam_check.py): what AWS would refuse, by set.
func refused(t *testing.T, path string, sets map[string]map[string]string) map[string][]refusal {
	t.Helper()
	in, err := json.Marshal(sets)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(samPython(t), filepath.Join("testdata", "sam_check.py"), path)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = new(strings.Builder)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sam_check: %v\n%s", err, cmd.Stderr)
	}
	var got map[string][]refusal
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("sam_check: %v", err)
	}
	return got
}

const (
	arm64Layer = "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"
	amd64Layer = "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-amd64-ver-0-117-0:1"
)

// The settings a real account refuses at deploy time, or that would break
// the stack at run time, are refused by the template itself before
// anything is created: each bad parameter set is refused where the test
// says and nowhere else, and good ones are not. The template still passes
// cfn-lint (TestCfnLint), which checks the Rules' form.
func TestTemplateRefusesBadSettings(t *testing.T) {
	path := filepath.Join(root, "template.yaml")
	lint(t, path)
	cases := []struct {
		name   string
		params map[string]string
		want   []string
	}{
		{"Defaults", nil, nil},
		{"Production", map[string]string{
			"WorkerSubnetIds": "subnet-0a,subnet-0b", "WorkerSecurityGroupIds": "sg-0a",
			"WorkerReservedConcurrency": "100", "WorkerMaxConcurrency": "100",
			"TracingLayerArn": arm64Layer, "TracingEndpoint": "http://localhost:4318",
			"AllowedTargets": strings.Repeat("https://a.example.com/*,", 42)[:1000],
			"Alarms":         "all", "Dashboard": "true",
		}, nil},
		{"NoAlarms", map[string]string{"Alarms": "none"}, nil},
		// The alarms are picked by name: a misspelt set is refused, not
		// taken for none.
		{"AlarmsMisspelt", map[string]string{"Alarms": "All"}, []string{"Parameters.Alarms"}},
		// The event source would run more workers than the reservation
		// lets Lambda start: throttled messages come back, and after five
		// receives go to the dead-letter queue.
		{"ReservedBelowMax", map[string]string{"WorkerReservedConcurrency": "50", "WorkerMaxConcurrency": "100"},
			[]string{"Rules.WorkerReservedConcurrencyFitsEventSource"}},
		{"ReservedAboveMax", map[string]string{"WorkerReservedConcurrency": "200", "WorkerMaxConcurrency": "100"},
			[]string{"Rules.WorkerReservedConcurrencyFitsEventSource"}},
		// Lambda refuses a VPC configuration without security groups.
		{"SubnetsWithoutSecurityGroups", map[string]string{"WorkerSubnetIds": "subnet-0a"},
			[]string{"Rules.WorkerSubnetsNeedSecurityGroups"}},
		{"SecurityGroupsWithoutSubnets", map[string]string{"WorkerSecurityGroupIds": "sg-0a"},
			[]string{"Rules.WorkerSecurityGroupsNeedSubnets"}},
		// Lambda refuses an environment of more than 4 KB
		// (TestTemplateEnvironmentFits adds the rest up).
		{"TargetsPastTheEnvironment", map[string]string{"AllowedTargets": strings.Repeat("https://a.example.com/*,", 60)},
			[]string{"Parameters.AllowedTargets"}},
		{"NetworksPastTheEnvironment", map[string]string{"AllowedNetworks": strings.Repeat("10.1.0.0/16,", 60)},
			[]string{"Parameters.AllowedNetworks"}},
		// The functions are arm64: an x86 layer's collector does not start.
		{"TracingLayerOfX86", map[string]string{"TracingLayerArn": amd64Layer, "TracingEndpoint": "http://localhost:4318"},
			[]string{"Parameters.TracingLayerArn"}},
		{"TracingLayerOfX86_64", map[string]string{"TracingLayerArn": strings.Replace(amd64Layer, "amd64", "x86_64", 1)},
			[]string{"Parameters.TracingLayerArn"}},
		// X-Ray's own endpoint wants SigV4: every export would be refused.
		{"TracingToXRaysEndpoint", map[string]string{"TracingEndpoint": "https://xray.eu-west-1.amazonaws.com"},
			[]string{"Parameters.TracingEndpoint"}},
	}
	sets := map[string]map[string]string{}
	for _, tt := range cases {
		sets[tt.name] = tt.params
	}
	results := refused(t, path, sets)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range results[tt.name] {
				got = append(got, r.Where)
				if r.Message == "" {
					t.Errorf("%s refuses with no message", r.Where)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("refused %v, want %v", got, tt.want)
			}
		})
	}
	// A team's stack, made by samgen, keeps the rules.
	t.Run("Generated", func(t *testing.T) {
		gen := generated(t, "Tags:\n  CostCenter: \"1234\"\n")
		got := refused(t, gen, map[string]map[string]string{"bad": {"WorkerSubnetIds": "subnet-0a"}})["bad"]
		if len(got) != 1 || got[0].Where != "Rules.WorkerSubnetsNeedSecurityGroups" {
			t.Errorf("the generated stack refused %v, want Rules.WorkerSubnetsNeedSecurityGroups", got)
		}
	})
}

// Lambda refuses a function whose environment variables take more than
// 4 KB. Every value the template puts there is bounded (a parameter's
// MaxLength or allowed values, a name AWS bounds), and the longest of
// each, with the names, fit in every function's environment.
func TestTemplateEnvironmentFits(t *testing.T) {
	const limit = 4096
	tmpl := loadTemplate(t)
	// The longest value a Ref to a resource gives in the environment.
	resourceMax := map[string]int{
		// A table name: at most 255 characters.
		"Table": 255,
		// A queue's URL: https://sqs.REGION.amazonaws.com[.cn]/ACCOUNT/NAME,
		// a name of at most 80 characters, a region's of at most 25.
		"SlotQueue": len("https://sqs.") + 25 + len(".amazonaws.com.cn/") + 12 + 1 + 80,
		// A log group's name: at most 512 characters.
		"WorkerLogGroup": 512,
	}
	resourceMax["DeadLetterQueue"] = resourceMax["SlotQueue"]
	var longest func(v any) (int, error)
	longest = func(v any) (int, error) {
		switch x := v.(type) {
		case string:
			return len(x), nil
		case map[string]any:
			if ref, ok := x["Ref"].(string); ok {
				if n, ok := resourceMax[ref]; ok {
					return n, nil
				}
				p, ok := tmpl.Parameters[ref]
				if !ok {
					return 0, fmt.Errorf("Ref %s: neither a parameter nor a resource with a known longest value", ref)
				}
				if m, ok := p["MaxLength"]; ok {
					return strconv.Atoi(fmt.Sprint(m))
				}
				if vs, ok := p["AllowedValues"].([]any); ok {
					n := 0
					for _, v := range vs {
						n = max(n, len(fmt.Sprint(v)))
					}
					return n, nil
				}
				if m, ok := p["MaxValue"]; ok && p["Type"] == "Number" {
					return len(fmt.Sprint(m)), nil
				}
				return 0, fmt.Errorf("parameter %s has no MaxLength: its value could take the whole environment", ref)
			}
			if args, ok := x["Fn::If"].([]any); ok && len(args) == 3 {
				a, err := longest(args[1])
				if err != nil {
					return 0, err
				}
				b, err := longest(args[2])
				return max(a, b), err
			}
			if s, ok := x["Fn::Sub"].(string); ok && strings.Count(s, "${") == 1 && strings.Contains(s, "${AWS::StackName}") {
				return len(s) - len("${AWS::StackName}") + 128, nil // a stack's name: at most 128
			}
		}
		return 0, fmt.Errorf("%v: no known longest value", v)
	}
	for _, id := range tmpl.Functions() {
		f, err := tmpl.Function(id)
		if err != nil {
			t.Fatal(err)
		}
		size := 0
		for k, v := range f.Env {
			n, err := longest(v)
			if err != nil {
				t.Errorf("%s: %s: %v", id, k, err)
				continue
			}
			// As Lambda counts it, at the most: the JSON of the map.
			size += len(k) + n + len(`"":"",`)
		}
		if size > limit {
			t.Errorf("%s: the environment may take %d bytes, above Lambda's %d", id, size, limit)
		}
		t.Logf("%s: at most %d bytes of environment", id, size)
	}
}

// A failed first create rolls back by deleting the table it made
// (DeletionPolicy RetainExceptOnCreate). DynamoDB refuses to delete a
// table with deletion protection on, so a protected table would fail that
// rollback (ROLLBACK_FAILED) and stay behind, orphaned: the table is
// created unprotected by default, and an operator turns protection on once
// the stack exists (docs/deploy.md). DynamoDB Local refuses the delete as
// DynamoDB does.
func TestTableDeletionProtectionOnCreate(t *testing.T) {
	p := loadTemplate(t).Parameters["TableDeletionProtection"]
	if d := fmt.Sprint(p["Default"]); d != "false" {
		t.Errorf("TableDeletionProtection's default %q, want false: a failed first create could not delete a protected table", d)
	}
	tmpl := transform(t, filepath.Join(root, "template.yaml"))
	if pol := tmpl.Resources["Table"].DeletionPolicy; pol != "RetainExceptOnCreate" {
		t.Errorf("Table DeletionPolicy %q, want RetainExceptOnCreate", pol)
	}

	dynamolocal.Require(t)
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg, dynamolocal.Quiet)
	for _, protected := range []bool{true, false} {
		name := fmt.Sprintf("slotq-protection-%v-%d", protected, os.Getpid())
		_, err := db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
			TableName:                 aws.String(name),
			BillingMode:               types.BillingModePayPerRequest,
			AttributeDefinitions:      []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:                 []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			DeletionProtectionEnabled: aws.Bool(protected),
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.DeleteTable(t.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		if protected && err == nil {
			t.Error("DeleteTable of a protected table succeeded; want it refused, as a rollback would find")
		}
		if !protected && err != nil {
			t.Errorf("DeleteTable of an unprotected table: %v", err)
		}
		if protected {
			// Leave nothing behind.
			if _, err := db.UpdateTable(t.Context(), &dynamodb.UpdateTableInput{TableName: aws.String(name), DeletionProtectionEnabled: aws.Bool(false)}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.DeleteTable(t.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
