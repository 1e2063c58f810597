// Package samgen writes a project's SAM template: slotq's template.yaml
// with the project's own part merged in (a stack.yaml the project keeps),
// so that a team deploys slotq with its own worker without a copy of
// slotq's stack, and upgrading slotq rewrites the stack from the new
// version's template. `slotq template` runs it; docs/deploy.md says what
// a stack.yaml may hold.
//
// The project's part may add parameters, conditions, mappings, resources
// and outputs, replace the description, and change the worker in the
// ways a worker of one's own needs: its description, memory size and
// environment variables (never slotq's), and more policies on its role.
// Anything else of slotq's it names is an error, so a project cannot
// drift from the stack of the slotq version it requires.
package samgen

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"gopkg.in/yaml.v3"
)

// Error is a project part that cannot be merged: Field is the path of
// the bad value in it, such as Resources.Table or
// Resources.WorkerFunction.Properties.Environment.Variables.SLOTQ_TABLE.
type Error struct {
	Field   string
	Message string
}

func (e *Error) Error() string { return e.Field + ": " + e.Message }

// Sections a project's part may add entries to.
var addable = []string{"Parameters", "Conditions", "Mappings", "Resources", "Outputs"}

// What a project's part may change of slotq's resources: by logical id,
// the properties and how.
var changeable = map[string]map[string]string{
	"WorkerFunction": {"Description": "replace", "MemorySize": "replace", "Environment": "variables"},
	"WorkerRole":     {"Policies": "append", "ManagedPolicyArns": "append"},
}

// slotqVar matches the environment variables slotq's functions read, and
// the SDK's.
var slotqVar = regexp.MustCompile(`^(SLOTQ|AWS)_`)

// Generate returns base, slotq's template.yaml, with part, a project's
// stack.yaml, merged in. An empty part gives base as it is.
func Generate(base, part []byte) ([]byte, error) {
	doc, err := mapping(base, "template")
	if err != nil {
		return nil, err
	}
	over, err := mapping(part, "stack.yaml")
	if err != nil {
		return nil, err
	}
	root := doc.Content[0]
	if over != nil {
		for i := 0; i+1 < len(over.Content[0].Content); i += 2 {
			k, v := over.Content[0].Content[i], over.Content[0].Content[i+1]
			switch {
			case k.Value == "Description":
				set(root, k, v)
			case slices.Contains(addable, k.Value):
				if err := merge(root, k, v); err != nil {
					return nil, err
				}
			default:
				return nil, &Error{Field: k.Value, Message: fmt.Sprintf("not something a project's stack.yaml may set (Description, %v)", addable)}
			}
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("write template: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write template: %w", err)
	}
	return buf.Bytes(), nil
}

// mapping parses a YAML document whose top is a mapping; empty input is
// nil.
func mapping(b []byte, what string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parse %s: %w", what, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	if doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("parse %s: not a mapping", what)
	}
	return &doc, nil
}

// merge adds the entries of the project's section v to slotq's.
func merge(root, k, v *yaml.Node) error {
	if v.Kind != yaml.MappingNode {
		return &Error{Field: k.Value, Message: "not a mapping"}
	}
	section := get(root, k.Value)
	if section == nil {
		section = &yaml.Node{Kind: yaml.MappingNode}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k.Value}, section)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		name, val := v.Content[i], v.Content[i+1]
		field := k.Value + "." + name.Value
		mine := get(section, name.Value)
		if mine == nil {
			section.Content = append(section.Content, name, val)
			continue
		}
		props, ok := changeable[name.Value]
		if k.Value != "Resources" || !ok {
			return &Error{Field: field, Message: "is slotq's: a project may add its own, not change slotq's"}
		}
		if err := change(field, mine, val, props); err != nil {
			return err
		}
	}
	return nil
}

// change applies the project's changes v to slotq's resource r.
func change(field string, r, v *yaml.Node, props map[string]string) error {
	for i := 0; i+1 < len(v.Content); i += 2 {
		if v.Content[i].Value != "Properties" {
			return &Error{Field: field + "." + v.Content[i].Value, Message: "is slotq's: only Properties may change"}
		}
	}
	over := get(v, "Properties")
	if over == nil || over.Kind != yaml.MappingNode {
		return &Error{Field: field + ".Properties", Message: "want a mapping"}
	}
	mine := get(r, "Properties")
	for i := 0; i+1 < len(over.Content); i += 2 {
		k, val := over.Content[i], over.Content[i+1]
		f := field + ".Properties." + k.Value
		switch props[k.Value] {
		case "replace":
			set(mine, k, val)
		case "append":
			if val.Kind != yaml.SequenceNode {
				return &Error{Field: f, Message: "want a list, added to slotq's"}
			}
			list := get(mine, k.Value)
			if list == nil {
				list = &yaml.Node{Kind: yaml.SequenceNode}
				mine.Content = append(mine.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k.Value}, list)
			}
			list.Content = append(list.Content, val.Content...)
		case "variables":
			if err := addVariables(f, mine, k, val); err != nil {
				return err
			}
		default:
			return &Error{Field: f, Message: "is slotq's: a project may change only " + fmt.Sprint(slices.Sorted(maps.Keys(props)))}
		}
	}
	return nil
}

// addVariables adds the project's Environment.Variables to a function's.
func addVariables(field string, props, k, env *yaml.Node) error {
	vars := get(env, "Variables")
	if env.Kind != yaml.MappingNode || len(env.Content) != 2 || vars == nil || vars.Kind != yaml.MappingNode {
		return &Error{Field: field, Message: "want Variables only"}
	}
	mine := get(props, "Environment")
	if mine == nil {
		mine = &yaml.Node{Kind: yaml.MappingNode}
		props.Content = append(props.Content, k, mine)
	}
	dst := get(mine, "Variables")
	if dst == nil {
		dst = &yaml.Node{Kind: yaml.MappingNode}
		mine.Content = append(mine.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "Variables"}, dst)
	}
	for i := 0; i+1 < len(vars.Content); i += 2 {
		name := vars.Content[i].Value
		if slotqVar.MatchString(name) || get(dst, name) != nil {
			return &Error{Field: field + ".Variables." + name, Message: "is slotq's (its functions read SLOTQ_* variables, the SDK AWS_*)"}
		}
		dst.Content = append(dst.Content, vars.Content[i], vars.Content[i+1])
	}
	return nil
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

// set sets key k of mapping m to v.
func set(m, k, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k.Value {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, k, v)
}
