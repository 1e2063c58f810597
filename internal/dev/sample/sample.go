// Package sample loads the sample events in events/ for tests, so every
// handler test reads the same files users pass to `sam local invoke` and
// the samples cannot rot.
package sample

import (
	"os"
	"path/filepath"
	"testing"
)

// Event returns the contents of events/name, found from the test's working
// directory by walking up to the module root.
func Event(t testing.TB, name string) []byte {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("sample event %s: no go.mod above the test's directory", name)
		}
		dir = parent
	}
	b, err := os.ReadFile(filepath.Join(dir, "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
