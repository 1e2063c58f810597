package local

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
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

// A stack whose DefaultLimit is set (a project's stack.yaml may set it)
// gives queues created without a limit that limit, in the place of
// DefaultInterval; Options.Defaults that give a limit in another form
// keep it whole.
func TestDefaultLimit(t *testing.T) {
	b, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const empty = "  DefaultLimit:\n    Type: String\n    Default: \"\"\n"
	if !strings.Contains(string(b), empty) {
		t.Fatalf("template.yaml has no DefaultLimit parameter written as\n%s", empty)
	}
	path := filepath.Join(t.TempDir(), "template.yaml")
	set := strings.Replace(string(b), empty, "  DefaultLimit:\n    Type: String\n    Default: rate 100/1m burst 10\n", 1)
	if err := os.WriteFile(path, []byte(set), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := FromTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	perMin := api.Rate{N: 100, Per: time.Minute}
	if d := s.Defaults; d.Interval != 0 || d.Rate != perMin || d.Burst != 10 || d.Skew != 10*time.Millisecond {
		t.Errorf("FromTemplate with DefaultLimit: defaults %+v", d)
	}
	o := Options{Stack: s}
	o.defaults()
	if d := o.Defaults; d.Interval != 0 || d.Rate != perMin || d.Burst != 10 {
		t.Errorf("Options.Defaults over such a stack: %+v", d)
	}
	o = Options{Defaults: api.Config{Window: api.Rate{N: 5000, Per: time.Hour}}}
	o.defaults()
	if d := o.Defaults; d.Interval != 0 || d.Window != (api.Rate{N: 5000, Per: time.Hour}) || d.Skew != 10*time.Millisecond {
		t.Errorf("Options.Defaults with a window: %+v", d)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), empty, "  DefaultLimit:\n    Type: String\n    Default: rate 100/1m burst 101\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FromTemplate(path); err == nil || !strings.Contains(err.Error(), "DefaultLimit") {
		t.Errorf("FromTemplate with a burst out of range: %v", err)
	}
}
