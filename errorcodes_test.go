package slotq_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// apiCodes are pkg/api's error codes: the values of its Code… constants.
func apiCodes(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "pkg/api/error.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
				continue
			}
			if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, _ := strconv.Unquote(lit.Value)
				codes[v] = true
			}
		}
		return true
	})
	if len(codes) < 50 {
		t.Fatalf("pkg/api/error.go: found %d codes; it holds more: did the constants' form change?", len(codes))
	}
	return codes
}

var tableCode = regexp.MustCompile("`([a-z_]+)`")

// TestErrorCodeTable holds docs/operations.md's table of error codes equal
// to pkg/api's codes: each code the functions or the client answer with
// has a row, and each row's code exists.
func TestErrorCodeTable(t *testing.T) {
	codes := apiCodes(t)
	b, err := os.ReadFile("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Error codes\n")
	if !ok {
		t.Fatal("docs/operations.md: no section ## Error codes")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	table := map[string]bool{}
	for _, l := range strings.Split(section, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, m := range tableCode.FindAllStringSubmatch(cells[1], -1) {
			table[m[1]] = true
		}
	}
	var missing, unknown []string
	for c := range codes {
		if !table[c] {
			missing = append(missing, c)
		}
	}
	for c := range table {
		if !codes[c] {
			unknown = append(unknown, c)
		}
	}
	slices.Sort(missing)
	slices.Sort(unknown)
	if len(missing) > 0 {
		t.Errorf("docs/operations.md's error codes lack pkg/api's %s", strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		t.Errorf("docs/operations.md's error codes name %s, which pkg/api does not hold", strings.Join(unknown, ", "))
	}
}

var invalidCall = regexp.MustCompile(`(?:input\.Invalid\(|Code:\s*)"([a-z_]+)"`)

// TestErrorCodesAreAPI: every code slotq's code answers with as a literal
// (input.Invalid, an Error's Code) is one of pkg/api's, so that the
// table above, held to pkg/api, cannot miss one.
func TestErrorCodesAreAPI(t *testing.T) {
	codes := apiCodes(t)
	seen := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != "." || d.Name() == "examples" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range invalidCall.FindAllStringSubmatch(string(b), -1) {
			seen++
			if !codes[m[1]] {
				t.Errorf("%s answers with code %q, which pkg/api/error.go does not hold", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 50 {
		t.Errorf("found %d coded errors; the code has more: is the pattern broken?", seen)
	}
}
