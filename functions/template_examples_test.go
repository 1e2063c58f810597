package functions_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The example projects deploy slotq's stack with a worker of their own.
// Everything they share with template.yaml is held equal to it, so a
// change to the stack (a policy, a queue setting, a new parameter)
// cannot leave an example deploying an older stack.
var examples = []string{"acme"}

// TestExampleTemplatesMatch compares each example's template.yaml with
// slotq's: parameters, conditions, globals, outputs and every resource
// are slotq's, except that an example may add parameters, and its
// WorkerFunction its own Description and Environment variables (never one
// of slotq's, which Globals set).
func TestExampleTemplatesMatch(t *testing.T) {
	root := templateNode(t, filepath.Join(root, "template.yaml"))
	for _, name := range examples {
		t.Run(name, func(t *testing.T) {
			ex := templateNode(t, filepath.Join("..", "examples", name, "template.yaml"))
			for _, section := range []string{"AWSTemplateFormatVersion", "Transform", "Conditions", "Globals", "Outputs"} {
				sameNode(t, section, get(root, section), get(ex, section))
			}
			for _, section := range []string{"Parameters", "Resources"} {
				r, e := get(root, section), get(ex, section)
				for _, k := range keys(r) {
					rv, ev := get(r, k), get(e, k)
					if ev == nil {
						t.Errorf("%s.%s is missing", section, k)
						continue
					}
					if section == "Resources" && k == "WorkerFunction" {
						rp, ep := get(rv, "Properties"), get(ev, "Properties")
						for _, p := range keys(rp) {
							if p != "Description" && p != "Environment" {
								sameNode(t, "Resources.WorkerFunction.Properties."+p, get(rp, p), get(ep, p))
							}
						}
						for _, v := range keys(get(get(ep, "Environment"), "Variables")) {
							if regexp.MustCompile(`^(SLOTQ|AWS)_`).MatchString(v) {
								t.Errorf("WorkerFunction sets %s, which is slotq's (Globals)", v)
							}
						}
						continue
					}
					sameNode(t, section+"."+k, rv, ev)
				}
				if section == "Resources" {
					for _, k := range keys(e) {
						if get(r, k) == nil {
							t.Errorf("Resources.%s is not slotq's", k)
						}
					}
				}
			}
		})
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

// get returns the value of key in mapping m, or nil.
func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
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
		t.Errorf("%s differs from template.yaml's:\nslotq:\n%s\nexample:\n%s", what, ca, cb)
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
