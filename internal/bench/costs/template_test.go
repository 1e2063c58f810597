package costs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The report reads the stack's memory sizes and skew from the template;
// without one it says what it assumed.
func TestTemplateFigures(t *testing.T) {
	m := memorySizes("../../../template.yaml")
	for role := range functions {
		if m.mb[role] < 128 {
			t.Errorf("%s: %d MB", role, m.mb[role])
		}
	}
	if !strings.Contains(m.source, "Globals.Function.MemorySize") {
		t.Errorf("source %q", m.source)
	}
	if a, m := templateAlarms("../../../template.yaml"); a != 16 || m != 24 {
		t.Errorf("templateAlarms = %d alarms, %d metrics; want the default stack's 16 alarms reading 24 metrics (LagAlarm only with a queue dimension)", a, m)
	}
	if d := templateSkew("../../../template.yaml"); d != 10*time.Millisecond {
		t.Errorf("templateSkew = %v, want the template's DefaultSkew 10ms", d)
	}

	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte("Resources:\n  WorkerFunction:\n    Properties:\n      MemorySize: 256\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m = memorySizes(path)
	if m.mb["worker"] != 256 || m.mb["enqueue"] != defaultMemory || !strings.Contains(m.source, "WorkerFunction 256 MB") {
		t.Errorf("%+v", m)
	}
	if d := templateSkew(path); d != 0 {
		t.Errorf("templateSkew without the parameter = %v", d)
	}
	if m := memorySizes("nope.yaml"); !strings.HasPrefix(m.source, "assumed 128 MB") {
		t.Errorf("missing template: %q", m.source)
	}
}
