// Package samgen writes a project's SAM template: slotq's template.yaml
// with the project's own part merged in (a stack.yaml the project keeps),
// so that a team deploys slotq with its own worker without a copy of
// slotq's stack, and upgrading slotq rewrites the stack from the new
// version's template. `slotq template` runs it; docs/deploy.md says what
// a stack.yaml may hold.
//
// The project's part may add parameters, conditions, mappings, resources
// and outputs, replace the description, set the defaults of slotq's
// parameters (a permissions boundary, the worker's subnets), tag every
// resource (Tags), and change the worker in the ways a worker of one's
// own needs: its description, memory size, tracing, reserved concurrency
// and environment variables (never slotq's), and more policies on its
// role.
// Anything else of slotq's it names is an error, so a project cannot
// drift from the stack of the slotq version it requires.
package samgen

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

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
	"WorkerFunction": {"Description": "replace", "MemorySize": "replace", "Environment": "variables",
		"Tracing": "replace", "ReservedConcurrentExecutions": "replace"},
	"WorkerRole": {"Policies": "append", "ManagedPolicyArns": "append"},
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
			case k.Value == "Tags":
				if err := tag(root, v); err != nil {
					return nil, err
				}
			case slices.Contains(addable, k.Value):
				if err := merge(root, k, v); err != nil {
					return nil, err
				}
			default:
				return nil, &Error{Field: k.Value, Message: fmt.Sprintf("not something a project's stack.yaml may set (Description, Tags, %v)", addable)}
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
	section := Value(root, k.Value)
	if section == nil {
		section = &yaml.Node{Kind: yaml.MappingNode}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k.Value}, section)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		name, val := v.Content[i], v.Content[i+1]
		field := k.Value + "." + name.Value
		mine := Value(section, name.Value)
		if mine == nil {
			section.Content = append(section.Content, name, val)
			continue
		}
		if k.Value == "Parameters" {
			if err := setDefault(field, mine, val); err != nil {
				return err
			}
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
	over := Value(v, "Properties")
	if over == nil || over.Kind != yaml.MappingNode {
		return &Error{Field: field + ".Properties", Message: "want a mapping"}
	}
	mine := Value(r, "Properties")
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
			list := Value(mine, k.Value)
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
	vars := Value(env, "Variables")
	if env.Kind != yaml.MappingNode || len(env.Content) != 2 || vars == nil || vars.Kind != yaml.MappingNode {
		return &Error{Field: field, Message: "want Variables only"}
	}
	mine := Value(props, "Environment")
	if mine == nil {
		mine = &yaml.Node{Kind: yaml.MappingNode}
		props.Content = append(props.Content, k, mine)
	}
	dst := Value(mine, "Variables")
	if dst == nil {
		dst = &yaml.Node{Kind: yaml.MappingNode}
		mine.Content = append(mine.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "Variables"}, dst)
	}
	for i := 0; i+1 < len(vars.Content); i += 2 {
		name := vars.Content[i].Value
		if slotqVar.MatchString(name) || Value(dst, name) != nil {
			return &Error{Field: field + ".Variables." + name, Message: "is slotq's (its functions read SLOTQ_* variables, the SDK AWS_*)"}
		}
		dst.Content = append(dst.Content, vars.Content[i], vars.Content[i+1])
	}
	return nil
}

// Value returns the value of key in mapping m, or nil (a YAML document
// read into yaml.Node).
func Value(m *yaml.Node, key string) *yaml.Node {
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

// setDefault applies a project's entry for one of slotq's parameters: it
// may set the parameter's Default, nothing else.
func setDefault(field string, mine, v *yaml.Node) error {
	if v.Kind != yaml.MappingNode || len(v.Content) != 2 || v.Content[0].Value != "Default" {
		return &Error{Field: field, Message: "is slotq's: a project may set only its Default"}
	}
	if d := v.Content[1]; d.Kind != yaml.ScalarNode {
		return &Error{Field: field + ".Default", Message: "want a value"}
	}
	set(mine, v.Content[0], v.Content[1])
	return nil
}

// taggable lists the resource types of the stack that take tags, and
// how: SAM's functions a mapping (which SAM propagates to the role and
// the event source it makes), CloudFormation's types a list of Key and
// Value. A type of the stack not listed takes none (a managed policy, the
// dashboard, the schedule, an event invoke config).
var taggable = map[string]string{
	"AWS::Serverless::Function": "map",
	"AWS::DynamoDB::Table":      "list",
	"AWS::SQS::Queue":           "list",
	"AWS::Logs::LogGroup":       "list",
	"AWS::IAM::Role":            "list",
	"AWS::CloudWatch::Alarm":    "list",
}

// tag puts the project's Tags, a mapping of names to values, on every
// resource of the stack that takes tags.
func tag(root, tags *yaml.Node) error {
	if tags.Kind != yaml.MappingNode || len(tags.Content) == 0 {
		return &Error{Field: "Tags", Message: "want a mapping of tag names to values"}
	}
	for i := 0; i+1 < len(tags.Content); i += 2 {
		k, v := tags.Content[i], tags.Content[i+1]
		if k.Value == "" || strings.HasPrefix(strings.ToLower(k.Value), "aws:") || len(k.Value) > 128 {
			return &Error{Field: "Tags." + k.Value, Message: "a tag name is 1 to 128 characters, not starting with aws:"}
		}
		if v.Kind != yaml.ScalarNode || len(v.Value) > 256 {
			return &Error{Field: "Tags." + k.Value, Message: "a tag value is a string of at most 256 characters"}
		}
	}
	res := Value(root, "Resources")
	for i := 0; i+1 < len(res.Content); i += 2 {
		r := res.Content[i+1]
		how, ok := taggable[Value(r, "Type").Value]
		if !ok {
			continue
		}
		props := Value(r, "Properties")
		if props == nil {
			props = &yaml.Node{Kind: yaml.MappingNode}
			r.Content = append(r.Content, scalar("Properties"), props)
		}
		list := Value(props, "Tags")
		if list == nil {
			list = &yaml.Node{Kind: yaml.MappingNode}
			if how == "list" {
				list.Kind = yaml.SequenceNode
			}
			props.Content = append(props.Content, scalar("Tags"), list)
		}
		for j := 0; j+1 < len(tags.Content); j += 2 {
			k, v := tags.Content[j], tags.Content[j+1]
			if how == "map" {
				list.Content = append(list.Content, scalar(k.Value), str(v.Value))
				continue
			}
			list.Content = append(list.Content, &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
				scalar("Key"), str(k.Value), scalar("Value"), str(v.Value)}})
		}
		if how == "map" && Value(props, "PropagateTags") == nil {
			props.Content = append(props.Content, scalar("PropagateTags"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
		}
	}
	return nil
}

// scalar is a YAML string node.
func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

// str is a YAML string node that stays a string ("1234", "true").
func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
}
