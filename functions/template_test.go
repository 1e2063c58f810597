package functions_test

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/lambdafn"
	"github.com/slotq/slotq/internal/local/samlocal"
	"github.com/slotq/slotq/pkg/local"
)

const root = ".."

func loadTemplate(t *testing.T) *samlocal.Template {
	t.Helper()
	tmpl, err := samlocal.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// buildTargets reads the Makefile's build-<LogicalId> targets and the
// function directory each one builds.
func buildTargets(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	target := regexp.MustCompile(`^build-([A-Za-z0-9]+):`)
	pkg := regexp.MustCompile(`\./functions/([a-z]+)\s*$`)
	out := map[string]string{}
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := target.FindStringSubmatch(line); m != nil {
			cur = m[1]
			out[cur] = ""
			continue
		}
		if cur != "" && strings.HasPrefix(line, "\t") {
			if m := pkg.FindStringSubmatch(line); m != nil {
				out[cur] = m[1]
			}
			continue
		}
		cur = ""
	}
	return out
}

func functionDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

func TestTemplateMatchesFunctions(t *testing.T) {
	tmpl := loadTemplate(t)
	targets := buildTargets(t)
	var built []string
	for id, dir := range targets {
		if !slices.Contains(tmpl.Functions(), id) {
			t.Errorf("Makefile target build-%s has no function in template.yaml", id)
		}
		built = append(built, dir)
	}
	for _, id := range tmpl.Functions() {
		f, err := tmpl.Function(id)
		if err != nil {
			t.Fatal(err)
		}
		if targets[id] == "" {
			t.Errorf("%s: no Makefile target build-%s building ./functions/…", id, id)
		}
		arch, _ := f.Properties["Architectures"].([]any)
		if f.CodeURI != "." || f.BuildMethod != "makefile" || f.Runtime != "provided.al2023" ||
			f.Handler != "bootstrap" || !slices.Equal(arch, []any{"arm64"}) {
			t.Errorf("%s: CodeUri %q, BuildMethod %q, Runtime %q, Handler %q, Architectures %v; want ., makefile, provided.al2023, bootstrap, [arm64]",
				id, f.CodeURI, f.BuildMethod, f.Runtime, f.Handler, arch)
		}
		if f.LogFormat != "JSON" {
			t.Errorf("%s: LoggingConfig.LogFormat %q, want JSON", id, f.LogFormat)
		}
	}
	for _, dir := range functionDirs(t) {
		if !slices.Contains(built, dir) {
			t.Errorf("functions/%s is not built by any build-<LogicalId> target of a template function", dir)
		}
	}
}

// Each function's environment in the template is exactly what its main
// reads: the lambdafn.Spec it passes to lambdafn.Init. AWS_* variables are
// the SDK's (endpoints for sam local), OTEL_* OpenTelemetry's (read by
// internal/tracing), not the function's config.
func TestTemplateEnvironmentMatchesConfig(t *testing.T) {
	tmpl := loadTemplate(t)
	targets := buildTargets(t)
	specs := map[string]lambdafn.Spec{"Enqueue": lambdafn.Enqueue, "Worker": lambdafn.Worker, "Resume": lambdafn.Resume, "Admin": lambdafn.Admin}
	for _, id := range tmpl.Functions() {
		dir := targets[id]
		spec, ok := specs[initSpec(t, filepath.Join(dir, "main.go"))]
		if !ok {
			t.Errorf("functions/%s/main.go does not call lambdafn.Init with one of lambdafn's specs", dir)
			continue
		}
		if spec.Function != dir {
			t.Errorf("functions/%s/main.go uses the spec of %s", dir, spec.Function)
		}
		f, _ := tmpl.Function(id)
		var got []string
		for k := range f.Env {
			if !strings.HasPrefix(k, "AWS_") && !strings.HasPrefix(k, "OTEL_") {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(spec.Vars))
		if !slices.Equal(got, want) {
			t.Errorf("%s: template sets %v, its config reads %v", id, got, want)
		}
	}
}

// The worker's timeout is one parameter, WorkerTimeout, and the rest
// follow from it: the worker's Timeout and SLOTQ_WORKER_TIMEOUT (which
// every function reads: the lease of a running attempt and the longest
// target_timeout follow from it) are the parameter, and for each value it
// allows, the slot queue's VisibilityTimeout is six times it and the
// duration alarm fires at 90% of it.
func TestTemplateWorkerTimeout(t *testing.T) {
	tmpl := loadTemplate(t)
	ref := map[string]any{"Ref": "WorkerTimeout"}
	worker, err := tmpl.Function("WorkerFunction")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(worker.Properties["Timeout"], ref) {
		t.Errorf("WorkerFunction Timeout is %v, want !Ref WorkerTimeout", worker.Properties["Timeout"])
	}
	for _, id := range tmpl.Functions() {
		f, _ := tmpl.Function(id)
		if !reflect.DeepEqual(f.Env[lambdafn.EnvWorkerTimeout], ref) {
			t.Errorf("%s: %s is %v, want !Ref WorkerTimeout", id, lambdafn.EnvWorkerTimeout, f.Env[lambdafn.EnvWorkerTimeout])
		}
	}
	lookup := func(what string) map[string]any {
		return map[string]any{"Fn::FindInMap": []any{"WorkerTimeouts", ref, what}}
	}
	if got := tmpl.Resources["SlotQueue"].Properties["VisibilityTimeout"]; !reflect.DeepEqual(got, lookup("VisibilityTimeout")) {
		t.Errorf("SlotQueue VisibilityTimeout is %v, want it from the WorkerTimeouts mapping", got)
	}
	if got := tmpl.Resources["WorkerDurationAlarm"].Properties["Threshold"]; !reflect.DeepEqual(got, lookup("DurationAlarmMs")) {
		t.Errorf("WorkerDurationAlarm Threshold is %v, want it from the WorkerTimeouts mapping", got)
	}
	allowed, _ := tmpl.Parameters["WorkerTimeout"]["AllowedValues"].([]any)
	if len(allowed) == 0 {
		t.Fatal("WorkerTimeout has no AllowedValues: the mapping needs one entry per value")
	}
	rows, _ := tmpl.Mappings["WorkerTimeouts"].(map[string]any)
	if len(rows) != len(allowed) {
		t.Errorf("WorkerTimeouts has %d entries for %d allowed values", len(rows), len(allowed))
	}
	for _, v := range allowed {
		sec, _ := strconv.Atoi(fmt.Sprint(v))
		if time.Duration(sec)*time.Second < engine.MinWorkerTimeout {
			t.Errorf("WorkerTimeout allows %ds, below what the functions accept (%s)", sec, engine.MinWorkerTimeout)
		}
		row, _ := rows[fmt.Sprint(v)].(map[string]any)
		if got, want := fmt.Sprint(row["VisibilityTimeout"]), fmt.Sprint(6*sec); got != want {
			t.Errorf("WorkerTimeouts[%d].VisibilityTimeout = %s, want %s (6x)", sec, got, want)
		}
		if got, want := fmt.Sprint(row["DurationAlarmMs"]), fmt.Sprint(sec*900); got != want {
			t.Errorf("WorkerTimeouts[%d].DurationAlarmMs = %s, want %s (90%%)", sec, got, want)
		}
	}
	if worker.Timeout != int(local.StackDefaults().Timeouts[local.WorkerFunction].Seconds()) {
		t.Errorf("the worker's default timeout %ds is not the local runtime's", worker.Timeout)
	}
}

// initSpec returns X of the lambdafn.Init(lambdafn.X) call in a main.go,
// or "Worker" for a main that calls worker.Start (pkg/worker reads
// lambdafn.Worker's variables).
func initSpec(t *testing.T, path string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := ""
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		if fn, ok := call.Fun.(*ast.SelectorExpr); ok && fn.Sel.Name == "Start" && isIdent(fn.X, "worker") {
			name = "Worker"
		}
		if fn, ok := call.Fun.(*ast.SelectorExpr); ok && fn.Sel.Name == "Init" && isIdent(fn.X, "lambdafn") {
			if arg, ok := call.Args[0].(*ast.SelectorExpr); ok && isIdent(arg.X, "lambdafn") {
				name = arg.Sel.Name
			}
		}
		return true
	})
	return name
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func TestTemplateEventSources(t *testing.T) {
	tmpl := loadTemplate(t)
	var sqsEvents, schedules int
	for _, id := range tmpl.Functions() {
		f, _ := tmpl.Function(id)
		for name, ev := range f.Events {
			m := ev.(map[string]any)
			props, _ := m["Properties"].(map[string]any)
			switch m["Type"] {
			case "SQS":
				sqsEvents++
				types, _ := props["FunctionResponseTypes"].([]any)
				if !slices.Contains(types, any("ReportBatchItemFailures")) {
					t.Errorf("%s.%s: FunctionResponseTypes %v lacks ReportBatchItemFailures", id, name, types)
				}
				for _, p := range []string{"BatchSize", "MaximumBatchingWindowInSeconds"} {
					if _, ok := props[p]; !ok {
						t.Errorf("%s.%s: %s is not set explicitly", id, name, p)
					}
				}
			case "ScheduleV2":
				schedules++
				if props["ScheduleExpression"] != "rate(1 minute)" || props["RetryPolicy"] == nil {
					t.Errorf("%s.%s: schedule %v, retry policy %v", id, name, props["ScheduleExpression"], props["RetryPolicy"])
				}
			}
		}
	}
	if sqsEvents != 1 || schedules != 1 {
		t.Errorf("%d SQS event sources and %d schedules, want 1 each", sqsEvents, schedules)
	}
}

// sam build runs the Makefile in the repository itself: with CodeUri: .
// it would otherwise copy the whole repository once per function.
func TestSamconfigBuildsInSource(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "samconfig.toml"))
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?s)\[default\.build\.parameters\](.*?)(\n\[|$)`).FindSubmatch(b)
	if section == nil || !regexp.MustCompile(`(?m)^build_in_source\s*=\s*true\s*$`).Match(section[1]) {
		t.Error("samconfig.toml: [default.build.parameters] does not set build_in_source = true")
	}
}

// Every build-<LogicalId> target builds an arm64 Linux bootstrap, as sam
// build will run it, stripped.
func TestBuildTargetsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four arm64 binaries")
	}
	for id := range buildTargets(t) {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cmd := exec.Command("make", "--no-print-directory", "-C", root, "build-"+id, "ARTIFACTS_DIR="+dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("make build-%s: %v\n%s", id, err, out)
			}
			f, err := elf.Open(filepath.Join(dir, "bootstrap"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Machine != elf.EM_AARCH64 {
				t.Errorf("bootstrap is for %v, want arm64", f.Machine)
			}
			// -ldflags='-s -w': no symbol table, no DWARF.
			if _, err := f.Symbols(); !errors.Is(err, elf.ErrNoSymbols) {
				t.Errorf("bootstrap has a symbol table (%v): build it with -ldflags='-s -w'", err)
			}
			if f.Section(".debug_info") != nil || f.Section(".zdebug_info") != nil {
				t.Error("bootstrap carries DWARF: build it with -ldflags='-s -w'")
			}
		})
	}
}

func TestCfnLint(t *testing.T) {
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		if os.Getenv("SLOTQ_REQUIRE_LOCAL_AWS") == "1" || os.Getenv("SLOTQ_REQUIRE_MOTO") == "1" {
			t.Fatal("cfn-lint is missing: it ships with the machine image's Python (pip install cfn-lint)")
		}
		t.Skip("cfn-lint is not installed")
	}
	// -c I: informational checks too, such as I3011 (a stateful
	// resource without an explicit DeletionPolicy).
	out, err := exec.Command(bin, "-c", "I", "--", filepath.Join(root, "template.yaml")).CombinedOutput()
	if err != nil {
		t.Errorf("cfn-lint -c I template.yaml: %v\n%s", err, out)
	}
}

// DefaultLimit's AllowedPattern lets every limit the functions read pass
// (SLOTQ_DEFAULT_LIMIT, lambdafn.Load) and stops a value that is no list
// of limits before a deploy; its default, empty, leaves DefaultInterval.
func TestTemplateDefaultLimit(t *testing.T) {
	p := loadTemplate(t).Parameters["DefaultLimit"]
	if d, _ := p["Default"].(string); d != "" {
		t.Errorf("DefaultLimit's default %q, want empty", d)
	}
	pattern, _ := p["AllowedPattern"].(string)
	re, err := regexp.Compile(pattern)
	if err != nil {
		t.Fatalf("AllowedPattern %q: %v", pattern, err)
	}
	env := map[string]string{
		lambdafn.EnvTable: "t", lambdafn.EnvQueueURL: "https://sqs.example.com/1/q", lambdafn.EnvWorkerTimeout: "120",
		lambdafn.EnvDefaultInterval: "1s", lambdafn.EnvDefaultSkew: "10ms",
	}
	for v, loads := range map[string]bool{
		"":                                   true,
		"rate 100/1m burst 10":               true,
		"window 5000/1h":                     true,
		"interval 500ms":                     true,
		"rate 10/1s burst 2; window 1000/1h": true,
		"rate 10/1s;window 100/1m; window 1000/1h": true,
		"100/1m":        false,
		"fast":          false,
		"rate 100/1m; ": false,
		"rate 1/1s; rate 10/1m; window 100/1h; window 1000/24h": false,
	} {
		env[lambdafn.EnvDefaultLimit] = v
		_, err := lambdafn.Load(lambdafn.Admin, func(k string) string { return env[k] })
		if (err == nil) != loads {
			t.Fatalf("%q: Load says %v, want it to load: %v", v, err, loads)
		}
		if re.MatchString(v) != loads {
			t.Errorf("DefaultLimit %q: AllowedPattern matches %v, Load %v", v, re.MatchString(v), err)
		}
		// The same words give every key a limit (DefaultKeyLimit).
		delete(env, lambdafn.EnvDefaultLimit)
		env[lambdafn.EnvDefaultKeyLimit] = v
		cfg, err := lambdafn.Load(lambdafn.Admin, func(k string) string { return env[k] })
		if (err == nil) != loads {
			t.Fatalf("key limit %q: Load says %v, want it to load: %v", v, err, loads)
		}
		if err == nil && (v == "") != (len(cfg.Defaults.KeyLimits) == 0) {
			t.Errorf("key limit %q: the defaults' key_limits are %v", v, cfg.Defaults.KeyLimits)
		}
		delete(env, lambdafn.EnvDefaultKeyLimit)
	}
	kp := loadTemplate(t).Parameters["DefaultKeyLimit"]
	if d, _ := kp["Default"].(string); d != "" || kp["AllowedPattern"] != p["AllowedPattern"] {
		t.Errorf("DefaultKeyLimit: default %q, pattern %v; want empty and DefaultLimit's", d, kp["AllowedPattern"])
	}
}

// Tracing is off by default and costs nothing: with TracingEndpoint and
// TracingLayerArn empty, the enqueue, worker and resume functions get
// OTEL_TRACES_EXPORTER=none and no layer. Set, the endpoint turns the
// OTLP exporter on for those three, and the layer is theirs; the admin
// function, which makes no spans, gets neither.
func TestTemplateTracing(t *testing.T) {
	tmpl := loadTemplate(t)
	for _, p := range []string{"TracingEndpoint", "TracingLayerArn"} {
		if d, _ := tmpl.Parameters[p]["Default"].(string); d != "" {
			t.Errorf("%s's default %q, want empty", p, d)
		}
	}
	resolver := func(endpoint, layer string) samlocal.Resolver {
		params := map[string]string{}
		for name, p := range tmpl.Parameters {
			params[name] = fmt.Sprint(p["Default"])
			if p["Default"] == nil {
				params[name] = ""
			}
		}
		params["TracingEndpoint"], params["TracingLayerArn"] = endpoint, layer
		return samlocal.Resolver{Params: params, Refs: map[string]string{}, Attrs: map[string]string{}, Conditions: tmpl.Conditions, Mappings: tmpl.Mappings}
	}
	const layer = "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"
	for _, tt := range []struct {
		endpoint, layer, exporter string
	}{
		{"", "", "none"},
		{"http://localhost:4318", layer, "otlp"},
	} {
		r := resolver(tt.endpoint, tt.layer)
		for _, id := range []string{"EnqueueFunction", "WorkerFunction", "ResumeFunction", "AdminFunction"} {
			f, err := tmpl.Function(id)
			if err != nil {
				t.Fatal(err)
			}
			exporter, endpoint := "", ""
			if v, ok := f.Env["OTEL_TRACES_EXPORTER"]; ok {
				if exporter, err = r.String(v); err != nil {
					t.Fatalf("%s: %v", id, err)
				}
			}
			if v, ok := f.Env["OTEL_EXPORTER_OTLP_ENDPOINT"]; ok {
				if endpoint, err = r.String(v); err != nil {
					t.Fatalf("%s: %v", id, err)
				}
			}
			want, wantEndpoint := tt.exporter, tt.endpoint
			if id == "AdminFunction" {
				want, wantEndpoint = "", ""
			}
			if exporter != want || endpoint != wantEndpoint {
				t.Errorf("TracingEndpoint %q: %s has OTEL_TRACES_EXPORTER %q, OTEL_EXPORTER_OTLP_ENDPOINT %q; want %q, %q",
					tt.endpoint, id, exporter, endpoint, want, wantEndpoint)
			}
			hasLayer, err := r.Condition("HasTracingLayer")
			if err != nil {
				t.Fatal(err)
			}
			layers := tmpl.Resources[id].Properties["Layers"]
			if (layers != nil) != (id != "AdminFunction") || hasLayer != (tt.layer != "") {
				t.Errorf("%s: Layers %v, HasTracingLayer %v with TracingLayerArn %q", id, layers, hasLayer, tt.layer)
			}
		}
	}
}

// The tracing layer's collector sends to X-Ray by default, with the role
// of the function it runs beside: with TracingLayerArn set (and
// TracingXRay left "true") the enqueue, worker and resume roles may write
// to X-Ray; without a layer, or with TracingXRay "false", no role may;
// the admin function, which runs no layer, never.
func TestTemplateTracingXRay(t *testing.T) {
	tmpl := loadTemplate(t)
	cfn := transform(t, filepath.Join(root, "template.yaml"))
	// xrayGrants returns, per function, the conditions its role's X-Ray
	// grants are under ("" for none: always).
	xrayGrants := func(fn string) []string {
		role := fn + "Role"
		if fn == "WorkerFunction" {
			role = "WorkerRole"
		}
		var conds []string
		visit := func(cond string, doc any) {
			for _, st := range asList(asMapAny(doc)["Statement"]) {
				for _, a := range asList(asMapAny(st)["Action"]) {
					if s, _ := a.(string); strings.HasPrefix(s, "xray:") {
						conds = append(conds, cond)
					}
				}
			}
		}
		unwrap := func(v any) (string, any) {
			if args, ok := asMapAny(v)["Fn::If"].([]any); ok && len(args) == 3 {
				return args[0].(string), args[1]
			}
			return "", v
		}
		props := cfn.Resources[role].Properties
		for _, p := range asList(props["Policies"]) {
			cond, p := unwrap(p)
			visit(cond, asMapAny(p)["PolicyDocument"])
		}
		for _, arn := range asList(props["ManagedPolicyArns"]) {
			cond, arn := unwrap(arn)
			if ref, ok := asMapAny(arn)["Ref"].(string); ok {
				if r := cfn.Resources[ref]; r.Type == "AWS::IAM::ManagedPolicy" {
					visit(cond, r.Properties["PolicyDocument"])
				}
			}
		}
		return conds
	}
	params := func(layer, xray string) map[string]string {
		out := map[string]string{}
		for name, p := range tmpl.Parameters {
			out[name] = ""
			if p["Default"] != nil {
				out[name] = fmt.Sprint(p["Default"])
			}
		}
		out["TracingLayerArn"], out["TracingXRay"] = layer, xray
		if layer != "" {
			out["TracingEndpoint"] = "http://localhost:4318"
		}
		return out
	}
	const layer = "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"
	for _, tt := range []struct {
		layer, xray string
		granted     bool
	}{
		{"", "true", false},
		{layer, "true", true},
		{layer, "false", false},
	} {
		r := samlocal.Resolver{Params: params(tt.layer, tt.xray), Refs: map[string]string{}, Attrs: map[string]string{}, Conditions: tmpl.Conditions, Mappings: tmpl.Mappings}
		for _, fn := range tmpl.Functions() {
			granted := false
			for _, cond := range xrayGrants(fn) {
				on := true
				if cond != "" {
					var err error
					if on, err = r.Condition(cond); err != nil {
						t.Fatalf("%s: %v", cond, err)
					}
				}
				granted = granted || on
			}
			if want := tt.granted && fn != "AdminFunction"; granted != want {
				t.Errorf("TracingLayerArn %q, TracingXRay %s: %s's role may write to X-Ray: %v, want %v", tt.layer, tt.xray, fn, granted, want)
			}
		}
	}
}
