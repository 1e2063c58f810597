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
