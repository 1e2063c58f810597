package samlocal

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Resolver evaluates the intrinsic functions of template values against a
// local stack.
type Resolver struct {
	// Params are parameter values (defaults already applied).
	Params map[string]string
	// Refs are what !Ref of a logical id gives (a table name, a queue URL).
	Refs map[string]string
	// Attrs are what !GetAtt gives, keyed "LogicalId.Attribute".
	Attrs map[string]string
	// Conditions are the template's, which !If names.
	Conditions map[string]any
	// Mappings are the template's, which !FindInMap reads.
	Mappings map[string]any
}

// Condition evaluates the template's condition name.
func (r Resolver) Condition(name string) (bool, error) {
	c, ok := r.Conditions[name]
	if !ok {
		return false, fmt.Errorf("condition %s: not in the template", name)
	}
	return r.Bool(c)
}

// Bool evaluates a condition expression: Fn::Equals, Fn::Not, Fn::And,
// Fn::Or, Condition.
func (r Resolver) Bool(v any) (bool, error) {
	x, _ := v.(map[string]any)
	if name, ok := x["Condition"].(string); ok {
		return r.Condition(name)
	}
	if eq, ok := x["Fn::Equals"].([]any); ok && len(eq) == 2 {
		a, err := r.String(eq[0])
		if err != nil {
			return false, err
		}
		b, err := r.String(eq[1])
		return a == b, err
	}
	for _, fn := range []string{"Fn::Not", "Fn::And", "Fn::Or"} {
		args, ok := x[fn].([]any)
		if !ok {
			continue
		}
		vals := make([]bool, len(args))
		for i, a := range args {
			b, err := r.Bool(a)
			if err != nil {
				return false, err
			}
			vals[i] = b
		}
		switch {
		case fn == "Fn::Not" && len(vals) == 1:
			return !vals[0], nil
		case fn == "Fn::And":
			return !slices.Contains(vals, false), nil
		case fn == "Fn::Or":
			return slices.Contains(vals, true), nil
		}
	}
	return false, fmt.Errorf("cannot evaluate condition %v locally", v)
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

// String resolves v to a string.
func (r Resolver) String(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case map[string]any:
		if ref, ok := x["Ref"].(string); ok {
			if p, ok := r.Params[ref]; ok {
				return p, nil
			}
			if s, ok := r.Refs[ref]; ok {
				return s, nil
			}
			return "", fmt.Errorf("!Ref %s: unknown locally", ref)
		}
		if ga, ok := x["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
			key := fmt.Sprint(ga[0]) + "." + fmt.Sprint(ga[1])
			if s, ok := r.Attrs[key]; ok {
				return s, nil
			}
			return "", fmt.Errorf("!GetAtt %s: unknown locally", key)
		}
		if args, ok := x["Fn::If"].([]any); ok && len(args) == 3 {
			name, _ := args[0].(string)
			yes, err := r.Condition(name)
			if err != nil {
				return "", err
			}
			if yes {
				return r.String(args[1])
			}
			return r.String(args[2])
		}
		if sub, ok := x["Fn::Sub"].(string); ok {
			var err error
			out := subVar.ReplaceAllStringFunc(sub, func(m string) string {
				name := m[2 : len(m)-1]
				var s string
				var e error
				if res, attr, ok := strings.Cut(name, "."); ok {
					s, e = r.String(map[string]any{"Fn::GetAtt": []any{res, attr}})
				} else {
					s, e = r.String(map[string]any{"Ref": name})
				}
				if e != nil && err == nil {
					err = e
				}
				return s
			})
			return out, err
		}
		if fm, ok := x["Fn::FindInMap"].([]any); ok && len(fm) == 3 {
			keys := make([]string, 3)
			for i, k := range fm {
				s, err := r.String(k)
				if err != nil {
					return "", err
				}
				keys[i] = s
			}
			v, ok := asMap(asMap(r.Mappings[keys[0]])[keys[1]])[keys[2]]
			if !ok {
				return "", fmt.Errorf("!FindInMap %v: not in the template's mappings", keys)
			}
			return r.String(v)
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			items, _ := j[1].([]any)
			parts := make([]string, len(items))
			for i, it := range items {
				s, err := r.String(it)
				if err != nil {
					return "", err
				}
				parts[i] = s
			}
			return strings.Join(parts, sep), nil
		}
	case nil:
		return "", nil
	case bool, int, float64:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("cannot resolve %v locally", v)
}
