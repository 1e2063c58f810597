package local

import (
	"reflect"
	"testing"
)

// StackDefaults are template.yaml's settings: a program that embeds the
// local runtime, with no template at hand, runs the stack as deployed.
func TestStackDefaults(t *testing.T) {
	got, err := FromTemplate("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := StackDefaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("template.yaml gives\n%+v\nStackDefaults are\n%+v", got, want)
	}
}
