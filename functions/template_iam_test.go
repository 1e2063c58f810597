package functions_test

import (
	"debug/elf"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/slotq/slotq"

// The AWS SDK packages whose calls need IAM permissions, by import path:
// the IAM service prefix of their actions.
var sdkServices = map[string]string{
	"github.com/aws/aws-sdk-go-v2/service/dynamodb":       "dynamodb",
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types": "dynamodb",
	"github.com/aws/aws-sdk-go-v2/service/sqs":            "sqs",
	"github.com/aws/aws-sdk-go-v2/service/lambda":         "lambda",
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch":     "cloudwatch",
	"github.com/aws/aws-sdk-go-v2/service/cloudformation": "cloudformation",
	"github.com/aws/aws-sdk-go-v2/service/scheduler":      "scheduler",
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs": "logs",
}

// iamAction is the IAM action an SDK operation's input (a literal
// dynamodb.QueryInput is a Query call) or a transaction's item (a literal
// types.Put is a PutItem inside TransactWriteItems) needs, or "".
func iamAction(service, typeName string) string {
	if service == "dynamodb" {
		switch typeName {
		case "Put", "Update", "Delete":
			return "dynamodb:" + typeName + "Item"
		case "ConditionCheck":
			return "dynamodb:ConditionCheckItem"
		case "TransactWriteItemsInput", "TransactGetItemsInput":
			return "" // each item needs its own action, found above
		}
	}
	op, ok := strings.CutSuffix(typeName, "Input")
	if !ok || op == "" {
		return ""
	}
	switch service + ":" + op {
	case "sqs:SendMessageBatch":
		return "sqs:SendMessage"
	case "sqs:DeleteMessageBatch":
		return "sqs:DeleteMessage"
	case "sqs:ChangeMessageVisibilityBatch":
		return "sqs:ChangeMessageVisibility"
	case "lambda:Invoke":
		return "lambda:InvokeFunction"
	}
	return service + ":" + op
}

// sdkCalls finds, in slotq's non-test Go files, the functions that build
// an SDK operation's input or a transaction's item, and the IAM action
// each needs: by linker symbol name (pkg.Func, pkg.(*T).Method).
func sdkCalls(t *testing.T) map[string][]string {
	t.Helper()
	calls := map[string][]string{}
	fset := token.NewFileSet()
	for _, top := range []string{"pkg", "internal", "functions"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			imports := map[string]string{} // local name → IAM service
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				svc, ok := sdkServices[p]
				if !ok {
					continue
				}
				name := p[strings.LastIndex(p, "/")+1:]
				if imp.Name != nil {
					name = imp.Name.Name
				}
				imports[name] = svc
			}
			if len(imports) == 0 {
				return nil
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			pkg := module + "/" + filepath.ToSlash(rel)
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				sym := symbolName(pkg, fn)
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					lit, ok := n.(*ast.CompositeLit)
					if !ok {
						return true
					}
					sel, ok := lit.Type.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					x, ok := sel.X.(*ast.Ident)
					if !ok || imports[x.Name] == "" {
						return true
					}
					if a := iamAction(imports[x.Name], sel.Sel.Name); a != "" && !slices.Contains(calls[sym], a) {
						calls[sym] = append(calls[sym], a)
					}
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return calls
}

// symbolName is fn's name in the linker's symbol table.
func symbolName(pkg string, fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return pkg + "." + fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	star := false
	if s, ok := typ.(*ast.StarExpr); ok {
		typ, star = s.X, true
	}
	switch g := typ.(type) {
	case *ast.IndexExpr:
		typ = g.X
	case *ast.IndexListExpr:
		typ = g.X
	}
	name := typ.(*ast.Ident).Name
	if star {
		return pkg + ".(*" + name + ")." + fn.Name.Name
	}
	return pkg + "." + name + "." + fn.Name.Name
}

// linked returns the function symbols of the function binary built from
// ./functions/dir, without inlining, so that a function whose code is
// reachable keeps its symbol.
func linked(t *testing.T, dir string) map[string]bool {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-gcflags=all=-l", "-o", bin, "./functions/"+dir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build ./functions/%s: %v\n%s", dir, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			name, _, _ := strings.Cut(s.Name, "[") // generic instances: F[...]
			out[name] = true
		}
	}
	return out
}

// neededActions is what the code of ./functions/dir does with AWS: the
// IAM actions of the SDK calls reachable from its main.
func neededActions(t *testing.T, dir string, calls map[string][]string) map[string][]string {
	t.Helper()
	syms := linked(t, dir)
	out := map[string][]string{}
	for sym, actions := range calls {
		if !syms[sym] {
			continue
		}
		for _, a := range actions {
			out[a] = append(out[a], sym)
		}
	}
	return out
}

// grant is one statement's action on its resources.
type grant struct {
	action    string
	resources []string
}

// rolePolicies returns what the role of a function (its logical id in the
// transformed template) allows: its inline policies and the managed
// policies of the template it attaches, conditional ones included (their
// widest case). AWS managed policies are returned by ARN.
func rolePolicies(t *testing.T, tmpl cfnTemplate, fn string) (grants []grant, awsManaged []string) {
	t.Helper()
	role := ""
	if ga, ok := asMapAny(tmpl.Resources[fn].Properties["Role"])["Fn::GetAtt"].([]any); ok {
		role, _ = ga[0].(string)
	}
	r, ok := tmpl.Resources[role]
	if !ok || r.Type != "AWS::IAM::Role" {
		t.Fatalf("%s: no role of the template (%v)", fn, tmpl.Resources[fn].Properties["Role"])
	}
	addDoc := func(doc any) {
		for _, st := range asList(asMapAny(doc)["Statement"]) {
			st := asMapAny(ifTrue(st))
			if st["Effect"] != "Allow" {
				t.Errorf("%s: statement %v", fn, st)
				continue
			}
			var res []string
			for _, r := range asList(st["Resource"]) {
				res = append(res, jsonString(r))
			}
			for _, a := range asList(st["Action"]) {
				grants = append(grants, grant{action: a.(string), resources: res})
			}
		}
	}
	for _, p := range asList(r.Properties["Policies"]) {
		addDoc(asMapAny(ifTrue(p))["PolicyDocument"])
	}
	for _, arn := range asList(r.Properties["ManagedPolicyArns"]) {
		if args, ok := asMapAny(arn)["Fn::If"].([]any); ok && len(args) == 3 {
			// A policy only a condition attaches: the worker's network
			// interfaces in a VPC (TestTemplateProduction holds it there).
			if s, _ := evalName(tmpl, args[1], "slotq"); args[0] == "WorkerInVpc" && s == vpcAccess {
				continue
			}
			arn = args[1]
		}
		if ref, ok := asMapAny(arn)["Ref"].(string); ok {
			addDoc(tmpl.Resources[ref].Properties["PolicyDocument"])
			continue
		}
		s, _ := evalName(tmpl, arn, "slotq")
		awsManaged = append(awsManaged, s)
	}
	return grants, awsManaged
}

func ifTrue(v any) any {
	if args, ok := asMapAny(v)["Fn::If"].([]any); ok && len(args) == 3 {
		return args[1]
	}
	return v
}

func asMapAny(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// What the functions' roles allow beyond their code's calls: Lambda's own
// logging (the basic execution role: create log streams, put log events),
// and for the worker the slot queue's event source mapping, which polls
// with the function's role.
var (
	basicExecution = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
	vpcAccess      = "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
	eventSource    = map[string][]string{"WorkerFunction": {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}}
	// The tracing layer's collector sends spans to X-Ray with the role of
	// the function it runs beside (only under GrantXRay:
	// TestTemplateTracingXRay); X-Ray's writes have no resource-level
	// permissions.
	xrayWrite = []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
)

// TestFunctionPolicies holds each function's role, as the SAM transform
// makes it, to the AWS calls its code makes: an action is allowed if and
// only if an SDK call that needs it is linked into the function's binary
// (or the event source needs it), on the stack's own resources.
func TestFunctionPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the four functions")
	}
	tmpl := transform(t, filepath.Join(root, "template.yaml"))
	calls := sdkCalls(t)
	targets := buildTargets(t)
	for _, fn := range loadTemplate(t).Functions() {
		t.Run(fn, func(t *testing.T) {
			need := neededActions(t, targets[fn], calls)
			grants, managed := rolePolicies(t, tmpl, fn)
			if !slices.Equal(managed, []string{basicExecution}) {
				t.Errorf("AWS managed policies %v, want only %s (logs)", managed, basicExecution)
			}
			allowed := map[string]bool{}
			for _, g := range grants {
				allowed[g.action] = true
				traced := fn != "AdminFunction" && slices.Contains(xrayWrite, g.action)
				if _, ok := need[g.action]; !ok && !slices.Contains(eventSource[fn], g.action) && !traced {
					t.Errorf("the role allows %s, which no call of the function's code needs", g.action)
				}
				for _, r := range g.resources {
					if r == `"*"` && g.action != "cloudwatch:GetMetricData" && !traced {
						t.Errorf("%s on every resource", g.action)
					}
					// The admin function's redrive receives and deletes the
					// dead-letter queue's messages (and sends to the slot
					// queue); every other SQS grant is on the slot queue.
					redrive := fn == "AdminFunction" && (g.action == "sqs:ReceiveMessage" || g.action == "sqs:DeleteMessage")
					if strings.HasPrefix(g.action, "sqs:") && r != `{"Fn::GetAtt":["SlotQueue","Arn"]}` &&
						!(redrive && r == `{"Fn::GetAtt":["DeadLetterQueue","Arn"]}`) {
						t.Errorf("%s on %s, want the slot queue only", g.action, r)
					}
					if strings.HasPrefix(g.action, "dynamodb:") && !strings.Contains(r, "Table") {
						t.Errorf("%s on %s, want the table only", g.action, r)
					}
					// The admin function's starts reads the worker's log
					// group: no other log group, and no other function.
					if strings.HasPrefix(g.action, "logs:") && (fn != "AdminFunction" || g.action != "logs:FilterLogEvents" ||
						r != `{"Fn::GetAtt":["WorkerLogGroup","Arn"]}`) {
						t.Errorf("%s on %s for %s, want logs:FilterLogEvents on the worker's log group for the admin function only", g.action, r, fn)
					}
				}
			}
			for _, a := range slices.Sorted(maps.Keys(need)) {
				if !allowed[a] {
					t.Errorf("the code calls %s (%s), which the role does not allow", a, strings.Join(need[a], ", "))
				}
			}
			for _, a := range eventSource[fn] {
				if !allowed[a] {
					t.Errorf("the event source needs %s, which the role does not allow", a)
				}
			}
			t.Logf("%s: %v", fn, fmt.Sprint(slices.Sorted(maps.Keys(allowed))))
		})
	}
}

// The policies the stack offers other roles (its outputs) allow what
// their users do and no more: a producer invokes the enqueue function
// (pkg/client's Enqueue); an operator invokes the enqueue and admin
// functions (the slotq CLI), reads the stack's outputs (slotq --stack:
// DescribeStacks) and looks at the dashboard, metrics and alarms. A
// statement some stacks have only (the dashboard's, under the condition
// that makes the dashboard) is listed as "if CONDITION: resource".
func TestAccessPolicies(t *testing.T) {
	tmpl := transform(t, filepath.Join(root, "template.yaml"))
	statements := func(id string) map[string][]string {
		t.Helper()
		r, ok := tmpl.Resources[id]
		if !ok || r.Type != "AWS::IAM::ManagedPolicy" {
			t.Fatalf("no managed policy %s", id)
		}
		out := map[string][]string{}
		for _, st := range asList(asMapAny(r.Properties["PolicyDocument"])["Statement"]) {
			cond := ""
			if args, ok := asMapAny(st)["Fn::If"].([]any); ok && len(args) == 3 {
				if jsonString(args[2]) != `{"Ref":"AWS::NoValue"}` {
					t.Errorf("%s: a statement under %v has an else: %v", id, args[0], args[2])
				}
				cond = fmt.Sprintf("if %v: ", args[0])
			}
			st := asMapAny(ifTrue(st))
			if st["Effect"] != "Allow" {
				t.Errorf("%s: %v", id, st)
			}
			for _, a := range asList(st["Action"]) {
				for _, res := range asList(st["Resource"]) {
					out[a.(string)] = append(out[a.(string)], cond+jsonString(res))
				}
			}
		}
		return out
	}
	arn := func(fn string) string { return `{"Fn::GetAtt":["` + fn + `","Arn"]}` }
	want := map[string]map[string][]string{
		"ProducerPolicy": {"lambda:InvokeFunction": {arn("EnqueueFunction")}},
		"OperatorPolicy": {
			"lambda:InvokeFunction":         {arn("EnqueueFunction"), arn("AdminFunction")},
			"cloudformation:DescribeStacks": {`{"Ref":"AWS::StackId"}`},
			"cloudwatch:GetDashboard":       {`if HasDashboard: {"Fn::Sub":"arn:${AWS::Partition}:cloudwatch::${AWS::AccountId}:dashboard/${StackDashboard}"}`},
			"cloudwatch:GetMetricData":      {`"*"`},
			"cloudwatch:ListMetrics":        {`"*"`},
			"cloudwatch:DescribeAlarms":     {`"*"`},
		},
	}
	for id, w := range want {
		if got := statements(id); !reflect.DeepEqual(got, w) {
			t.Errorf("%s allows %v, want %v", id, got, w)
		}
	}
	if c := tmpl.Resources["StackDashboard"].Condition; c != "HasDashboard" {
		t.Errorf("StackDashboard's Condition is %q; OperatorPolicy names it under HasDashboard", c)
	}
	outputs := templateNode(t, filepath.Join(root, "template.yaml"))
	for out, policy := range map[string]string{"ProducerPolicyArn": "ProducerPolicy", "OperatorPolicyArn": "OperatorPolicy"} {
		v := get(get(get(outputs, "Outputs"), out), "Value")
		if v == nil || v.Tag != "!Ref" || v.Value != policy {
			t.Errorf("output %s is not !Ref %s", out, policy)
		}
	}
}
