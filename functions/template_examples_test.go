package functions_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/slotq/slotq"
	"github.com/slotq/slotq/internal/local/samgen"
	"github.com/slotq/slotq/internal/local/samlocal"
)

// get returns the value of key in a YAML mapping, or nil.
var get = samgen.Value

// The example projects deploy slotq's stack with a worker of their own.
// They keep no copy of the stack: `slotq template` writes it from the
// project's stack.yaml and the template.yaml of the slotq version the
// project requires (here, the repository's), so a change to the stack
// reaches them with nothing to merge.
var examples = []string{"acme"}

// TestExampleStacks checks what each example deploys: the template its
// Makefile writes (make template.yaml) is samgen's from its stack.yaml,
// no template is kept in its repository, cfn-lint passes on it, two
// stacks of it fit in one account, and its Makefile builds every function
// of it for sam build.
func TestExampleStacks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds slotq's command in each example's module")
	}
	for _, name := range examples {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, "examples", name)
			if out, err := exec.Command("git", "-C", dir, "ls-files", "--error-unmatch", "template.yaml").CombinedOutput(); err == nil {
				t.Errorf("examples/%s keeps a template.yaml in the repository (%s): the Makefile writes it", name, bytes.TrimSpace(out))
			}
			part, err := os.ReadFile(filepath.Join(dir, "stack.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			base, err := os.ReadFile(filepath.Join(root, "template.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := samgen.Generate(base, part)
			if err != nil {
				t.Fatalf("stack.yaml: %v", err)
			}

			// What the example deploys: its Makefile's template.
			path := filepath.Join(t.TempDir(), "template.yaml")
			cmd := exec.Command("make", "--no-print-directory", "-C", dir, "template.yaml", "TEMPLATE="+path)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("make template.yaml: %v\n%s", err, out)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(withoutComments(got), withoutComments(want)) {
				t.Errorf("make template.yaml wrote another template than slotq template from stack.yaml and template.yaml")
			}

			lint(t, path)
			stacksCoexist(t, transform(t, path))

			tmpl, err := samlocal.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			mk, err := os.ReadFile(filepath.Join(dir, "Makefile"))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range tmpl.Functions() {
				if !regexp.MustCompile(`(?m)^build-` + id + `:`).Match(mk) {
					t.Errorf("examples/%s/Makefile has no build-%s target for sam build", name, id)
				}
			}
			// The worker is the example's: its own variables beside slotq's.
			var doc yaml.Node
			if err := yaml.Unmarshal(part, &doc); err != nil {
				t.Fatal(err)
			}
			w, _ := tmpl.Function("WorkerFunction")
			for _, v := range keys(get(get(get(get(get(doc.Content[0], "Resources"), "WorkerFunction"), "Properties"), "Environment"), "Variables")) {
				if _, ok := w.Env[v]; !ok {
					t.Errorf("the worker lacks stack.yaml's variable %s", v)
				}
			}
		})
	}
}

// withoutComments drops a template's comment lines (the header names the
// version of the slotq command that wrote it).
func withoutComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// generated writes the stack samgen makes of slotq's template and the
// team's part (YAML) into a file of the test's own, and returns its path.
func generated(t *testing.T, part string) string {
	t.Helper()
	out, err := samgen.Generate(slotq.Template, []byte(part))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// lint runs cfn-lint on a template; missing, it fails under
// SLOTQ_REQUIRE_LOCAL_AWS=1 and is skipped otherwise.
func lint(t *testing.T, path string) {
	t.Helper()
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		if os.Getenv("SLOTQ_REQUIRE_LOCAL_AWS") == "1" {
			t.Fatal("cfn-lint is missing: it ships with the machine image's Python (pip install cfn-lint)")
		}
		t.Skip("cfn-lint is not installed")
	}
	if out, err := exec.Command(bin, "-c", "I", "--", path).CombinedOutput(); err != nil {
		t.Errorf("cfn-lint %s: %v\n%s", filepath.Base(path), err, out)
	}
}

// templateNode reads a template into its top-level mapping node.
func templateNode(t *testing.T, path string) *yaml.Node {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc.Content[0]
}

// keys returns the keys of mapping m.
func keys(m *yaml.Node) []string {
	var out []string
	if m != nil && m.Kind == yaml.MappingNode {
		for i := 0; i < len(m.Content); i += 2 {
			out = append(out, m.Content[i].Value)
		}
	}
	return out
}

// sameNode fails t unless a and b are the same YAML, tags (!Ref, !GetAtt)
// included and comments, style and key order aside.
func sameNode(t *testing.T, what string, a, b *yaml.Node) {
	t.Helper()
	if ca, cb := canonical(a), canonical(b); ca != cb {
		t.Errorf("%s differs:\n%s\nand:\n%s", what, ca, cb)
	}
}

func canonical(n *yaml.Node) string {
	if n == nil {
		return "(missing)\n"
	}
	b, err := yaml.Marshal(strip(n))
	if err != nil {
		return "(unprintable: " + err.Error() + ")"
	}
	return string(b)
}

// strip returns a copy of n without comments or styles, mappings sorted
// by key.
func strip(n *yaml.Node) *yaml.Node {
	c := &yaml.Node{Kind: n.Kind, Tag: n.ShortTag(), Value: n.Value}
	for _, ch := range n.Content {
		c.Content = append(c.Content, strip(ch))
	}
	if c.Kind == yaml.MappingNode {
		type pair struct{ k, v *yaml.Node }
		var ps []pair
		for i := 0; i+1 < len(c.Content); i += 2 {
			ps = append(ps, pair{c.Content[i], c.Content[i+1]})
		}
		slices.SortFunc(ps, func(a, b pair) int { return strings.Compare(a.k.Value, b.k.Value) })
		c.Content = c.Content[:0]
		for _, p := range ps {
			c.Content = append(c.Content, p.k, p.v)
		}
	}
	return c
}
