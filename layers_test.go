package slotq_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/slotq/slotq/"

// pkgInfo is what `go list -json` says of one package.
type pkgInfo struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// listPackages lists every package of the module, test files left out:
// what a build links.
func listPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkgInfo{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkgInfo
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; want the whole module", len(pkgs))
	}
	return pkgs
}

// under reports whether the module's package p is folder or lies in it.
func under(p, folder string) bool { return p == folder || strings.HasPrefix(p, folder+"/") }

// tooling is what builds, tests and measures slotq, or serves people from
// the slotq command: no Lambda function links it.
func tooling(p string) bool {
	return under(p, "internal/dev") || under(p, "internal/bench") || under(p, "internal/cli") || under(p, "internal/local") || p == "pkg/local"
}

// TestLayers holds the import direction of slotq's layers:
// functions and cmd → pkg → the runtime under internal/ → slot, job →
// the standard library, and nothing that ships in a Lambda imports the
// tooling under internal/dev and internal/cli.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	rules := []struct {
		name string
		// applies selects the packages the rule is about.
		applies func(p string) bool
		// refused tells a dependency the rule forbids; direct limits the
		// rule to direct imports.
		refused func(dep string) bool
		direct  bool
	}{
		{
			name:    "a handler author's packages compile none of the engine (pkg/api, pkg/client, pkg/target)",
			applies: func(p string) bool { return p == "pkg/api" || p == "pkg/client" || p == "pkg/target" },
			refused: func(d string) bool {
				return strings.HasPrefix(d, module) && d != module+"pkg/api" && d != module+"internal/attempt"
			},
		},
		{
			name:    "pkg/ imports internal/ only where a runtime needs it (pkg/worker, pkg/local)",
			applies: func(p string) bool { return under(p, "pkg") && p != "pkg/worker" && p != "pkg/local" },
			refused: func(d string) bool {
				return strings.HasPrefix(d, module+"internal/") && d != module+"internal/attempt"
			},
			direct: true,
		},
		{
			name:    "what ships in a Lambda links no tooling (functions/, pkg/worker)",
			applies: func(p string) bool { return under(p, "functions") || p == "pkg/worker" },
			refused: func(d string) bool { return strings.HasPrefix(d, module) && tooling(strings.TrimPrefix(d, module)) },
		},
		{
			name: "the runtime under internal/ imports no tooling and nothing above it",
			applies: func(p string) bool {
				return under(p, "internal") && !tooling(p)
			},
			refused: func(d string) bool {
				r := strings.TrimPrefix(d, module)
				return strings.HasPrefix(d, module) && (tooling(r) || under(r, "cmd") || under(r, "functions") ||
					r == "pkg/worker" || r == "pkg/client")
			},
			direct: true,
		},
		{
			name: "the local runtime (internal/local, pkg/local) links none of the tests' helpers under internal/dev and the benchmarks under internal/bench",
			applies: func(p string) bool {
				return under(p, "internal/local") || p == "pkg/local"
			},
			refused: func(d string) bool {
				return strings.HasPrefix(d, module+"internal/dev/") || strings.HasPrefix(d, module+"internal/bench/")
			},
		},
		{
			name: "the slotq command operators install links nothing under internal/dev (the tests' helpers, the emulators' launchers, " +
				"the AWS calls counted) nor the measurements on the real adapters (internal/bench/costs, awssim, benchcmd); slotq-bench does",
			applies: func(p string) bool { return p == "cmd/slotq" },
			refused: func(d string) bool {
				r := strings.TrimPrefix(d, module)
				return strings.HasPrefix(d, module) && (under(r, "internal/dev") ||
					r == "internal/bench/costs" || under(r, "internal/bench/awssim") || under(r, "internal/bench/benchcmd"))
			},
		},
		{
			name: "the core is plain Go: slot, job, attempt, input, clock and engine never import AWS",
			applies: func(p string) bool {
				switch p {
				case "internal/slot", "internal/job", "internal/attempt", "internal/input", "internal/clock", "internal/engine":
					return true
				}
				return false
			},
			refused: func(d string) bool { return strings.HasPrefix(d, "github.com/aws/") },
		},
	}
	for _, r := range rules {
		matched := 0
		for p, info := range pkgs {
			if !r.applies(p) {
				continue
			}
			matched++
			deps := info.Deps
			if r.direct {
				deps = info.Imports
			}
			for _, d := range deps {
				if r.refused(d) {
					t.Errorf("%s: %s imports %s", r.name, p, d)
				}
			}
		}
		if matched == 0 {
			t.Errorf("%s: no package matched; the rule checks nothing", r.name)
		}
	}
}
