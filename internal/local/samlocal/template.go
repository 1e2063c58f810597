package samlocal

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Template is a parsed SAM template. Values are plain Go values (maps,
// slices, strings); a CloudFormation tag such as !Ref X becomes its long
// form, map{"Ref": "X"}, and !GetAtt A.B becomes map{"Fn::GetAtt": [A B]}.
type Template struct {
	Parameters map[string]map[string]any
	Mappings   map[string]any
	Conditions map[string]any
	Globals    map[string]any
	Resources  map[string]Resource
}

// Resource is one entry of Resources.
type Resource struct {
	Type       string
	Properties map[string]any
	Metadata   map[string]any
}

// Load parses the template at path.
func Load(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse parses a template.
func Parse(b []byte) (*Template, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("parse template: empty")
	}
	doc, ok := value(root.Content[0]).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parse template: not a mapping")
	}
	t := &Template{Parameters: map[string]map[string]any{}, Resources: map[string]Resource{}}
	for k, v := range asMap(doc["Parameters"]) {
		t.Parameters[k] = asMap(v)
	}
	t.Globals = asMap(doc["Globals"])
	t.Conditions = asMap(doc["Conditions"])
	t.Mappings = asMap(doc["Mappings"])
	for k, v := range asMap(doc["Resources"]) {
		m := asMap(v)
		t.Resources[k] = Resource{Type: str(m["Type"]), Properties: asMap(m["Properties"]), Metadata: asMap(m["Metadata"])}
	}
	return t, nil
}

// value turns a YAML node into Go values, expanding CloudFormation tags.
func value(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return value(n.Content[0])
	case yaml.AliasNode:
		return value(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = value(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			s[i] = value(c)
		}
		v = s
	default:
		v = n.Value
	}
	tag := n.Tag
	if !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") {
		return v
	}
	name := strings.TrimPrefix(tag, "!")
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}
	case "GetAtt":
		if s, ok := v.(string); ok {
			res, attr, _ := strings.Cut(s, ".")
			return map[string]any{"Fn::GetAtt": []any{res, attr}}
		}
	}
	return map[string]any{"Fn::" + name: v}
}

// Resolver returns a resolver of the template's parameter defaults,
// mappings and conditions, with no resources.
func (t *Template) Resolver() Resolver {
	r := Resolver{Params: map[string]string{}, Mappings: t.Mappings, Conditions: t.Conditions}
	for name, p := range t.Parameters {
		if p["Default"] != nil {
			r.Params[name] = fmt.Sprint(p["Default"])
		} else {
			r.Params[name] = ""
		}
	}
	return r
}

// Default resolves v, a property such as a function's Timeout, as the
// stack deployed with its parameters' defaults has it: a literal, a !Ref
// of a parameter, or a !FindInMap on those. Anything else is "".
func (t *Template) Default(v any) string {
	s, err := t.Resolver().String(v)
	if err != nil {
		return ""
	}
	return s
}

// Functions returns the logical ids of the serverless functions, sorted.
func (t *Template) Functions() []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == "AWS::Serverless::Function" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Function is a serverless function with the template's Globals applied.
type Function struct {
	LogicalID   string
	CodeURI     string
	BuildMethod string
	Runtime     string
	Handler     string
	// Env holds the unresolved Environment.Variables, Globals first.
	Env map[string]any
	// Timeout in seconds, MemorySize in MB.
	Timeout    int
	MemorySize int
	// LogFormat and LogLevel come from LoggingConfig (LogLevel unresolved).
	LogFormat string
	LogLevel  any
	// Events are the function's event sources, by name.
	Events map[string]any
	// Properties are the merged properties, for anything else.
	Properties map[string]any
}

// Function returns one function.
func (t *Template) Function(id string) (Function, error) {
	r, ok := t.Resources[id]
	if !ok || r.Type != "AWS::Serverless::Function" {
		return Function{}, fmt.Errorf("template has no function %s (functions: %v)", id, t.Functions())
	}
	props := merge(asMap(t.Globals["Function"]), r.Properties)
	f := Function{
		LogicalID: id, CodeURI: str(props["CodeUri"]), BuildMethod: str(r.Metadata["BuildMethod"]),
		Runtime: str(props["Runtime"]), Handler: str(props["Handler"]),
		Env:    asMap(asMap(props["Environment"])["Variables"]),
		Events: asMap(props["Events"]), Properties: props,
		Timeout: 3, MemorySize: 128,
	}
	if n, err := strconv.Atoi(t.Default(props["Timeout"])); err == nil {
		f.Timeout = n
	}
	if n, err := strconv.Atoi(str(props["MemorySize"])); err == nil {
		f.MemorySize = n
	}
	logging := asMap(props["LoggingConfig"])
	f.LogFormat, f.LogLevel = str(logging["LogFormat"]), logging["ApplicationLogLevel"]
	return f, nil
}

// merge overlays b on a, as SAM applies a function's properties over
// Globals: maps merge key by key, anything else is replaced.
func merge(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		am, aok := out[k].(map[string]any)
		bm, bok := v.(map[string]any)
		if aok && bok && !intrinsic(am) && !intrinsic(bm) {
			out[k] = merge(am, bm)
			continue
		}
		out[k] = v
	}
	return out
}

func intrinsic(m map[string]any) bool {
	if len(m) != 1 {
		return false
	}
	for k := range m {
		return k == "Ref" || strings.HasPrefix(k, "Fn::")
	}
	return false
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
