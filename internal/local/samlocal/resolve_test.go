package samlocal

import "testing"

// !If picks by the template's condition, as CloudFormation would.
func TestResolveIf(t *testing.T) {
	conds := map[string]any{
		"HasNs":  map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "Ns"}, ""}}}},
		"Either": map[string]any{"Fn::Or": []any{map[string]any{"Condition": "HasNs"}, map[string]any{"Fn::Equals": []any{"a", "a"}}}},
	}
	v := map[string]any{"Fn::If": []any{"HasNs", map[string]any{"Ref": "Ns"}, map[string]any{"Fn::Sub": "slotq/${AWS::StackName}"}}}
	for ns, want := range map[string]string{"": "slotq/st", "mine": "mine"} {
		r := Resolver{Params: map[string]string{"Ns": ns, "AWS::StackName": "st"}, Conditions: conds}
		if got, err := r.String(v); err != nil || got != want {
			t.Errorf("Ns %q: %q, %v; want %q", ns, got, err, want)
		}
		if ok, err := r.Condition("Either"); err != nil || !ok {
			t.Errorf("Either: %v, %v", ok, err)
		}
	}
}

// A property derived from a parameter through a mapping (the slot queue's
// VisibilityTimeout from WorkerTimeout) resolves with the parameter's
// value, or its default.
func TestResolveFindInMap(t *testing.T) {
	tmpl, err := Parse([]byte(`
Parameters:
  WorkerTimeout: {Type: Number, Default: 120}
Mappings:
  WorkerTimeouts:
    "120": {VisibilityTimeout: 720}
    "300": {VisibilityTimeout: 1800}
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: !Ref WorkerTimeout
  Q:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: !FindInMap [WorkerTimeouts, !Ref WorkerTimeout, VisibilityTimeout]
`))
	if err != nil {
		t.Fatal(err)
	}
	vis := tmpl.Resources["Q"].Properties["VisibilityTimeout"]
	if got := tmpl.Default(vis); got != "720" {
		t.Errorf("default VisibilityTimeout %q, want 720", got)
	}
	if f, _ := tmpl.Function("Fn"); f.Timeout != 120 {
		t.Errorf("Timeout %d, want the parameter's default 120", f.Timeout)
	}
	r := tmpl.Resolver()
	r.Params["WorkerTimeout"] = "300"
	if got, err := r.String(vis); err != nil || got != "1800" {
		t.Errorf("WorkerTimeout 300: %q, %v; want 1800", got, err)
	}
	r.Params["WorkerTimeout"] = "42"
	if _, err := r.String(vis); err == nil {
		t.Error("a value the mapping lacks resolved")
	}
}
