package costs

import (
	"fmt"
	"maps"
	"os"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/slotq/slotq/internal/local/samgen"
	"github.com/slotq/slotq/internal/local/samlocal"
)

// get returns the value of key in a YAML mapping, or nil.
var get = samgen.Value

// defaultMemory is assumed when the template gives no MemorySize.
const defaultMemory = 128

// functions maps the engine roles to the template's logical ids.
var functions = map[string]string{
	"enqueue": "EnqueueFunction", "worker": "WorkerFunction", "resume": "ResumeFunction", "admin": "AdminFunction",
}

// memory is each role's memory size in MB and where it came from.
type memory struct {
	mb     map[string]int
	source string
}

// memorySizes reads Globals.Function.MemorySize and each function's own
// MemorySize from the SAM template (as yaml.Nodes: the template's !Ref
// tags stay opaque).
func memorySizes(path string) memory {
	m := memory{mb: map[string]int{}, source: fmt.Sprintf("assumed %d MB (no MemorySize in %s)", defaultMemory, path)}
	for r := range functions {
		m.mb[r] = defaultMemory
	}
	b, err := os.ReadFile(path)
	if err != nil {
		m.source = fmt.Sprintf("assumed %d MB (%v)", defaultMemory, err)
		return m
	}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return m
	}
	root := doc.Content[0]
	if g := get(get(get(root, "Globals"), "Function"), "MemorySize"); g != nil {
		if v, err := strconv.Atoi(g.Value); err == nil {
			for r := range functions {
				m.mb[r] = v
			}
			m.source = fmt.Sprintf("%s Globals.Function.MemorySize = %d MB", path, v)
		}
	}
	for r, id := range functions {
		if n := get(get(get(get(root, "Resources"), id), "Properties"), "MemorySize"); n != nil {
			if v, err := strconv.Atoi(n.Value); err == nil {
				m.mb[r] = v
				m.source += fmt.Sprintf("; %s %d MB", id, v)
			}
		}
	}
	return m
}

// templateSkew reads the default of the template's DefaultSkew parameter:
// the skew the stack gives queues, which decides how often a start comes
// early to the gate (a failed conditional write). 0 if the template does
// not say.
func templateSkew(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	n := get(get(get(doc.Content[0], "Parameters"), "DefaultSkew"), "Default")
	if n == nil {
		return 0
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		return 0
	}
	return d
}

// cloudWatch is what a stack's alarms and dashboards are, which
// CloudWatch bills by the month whether jobs run or not.
type cloudWatch struct {
	// alarms is the number of alarms; metrics the metrics they read, which
	// CloudWatch bills: one for a plain alarm, each MetricStat of a metric
	// math alarm.
	alarms, metrics int
	dashboards      int
}

// month is what cw costs a month.
func (cw cloudWatch) month() float64 {
	return float64(cw.metrics)*prices.AlarmMetricMonth + float64(cw.dashboards)*prices.DashboardMonth
}

// templateCloudWatch counts the alarms and dashboards of the stack the
// template at path makes with params, the template's defaults for the
// parameters params does not name: a resource under a Condition counts
// when the condition holds with those values (CloudFormation's Fn::Equals,
// Fn::Not, Fn::And, Fn::Or and Condition, evaluated by samlocal). A
// condition it cannot evaluate is an error, not a guess.
func templateCloudWatch(path string, params map[string]string) (cloudWatch, error) {
	var cw cloudWatch
	b, err := os.ReadFile(path)
	if err != nil {
		return cw, err
	}
	tmpl, err := samlocal.Parse(b)
	if err != nil {
		return cw, err
	}
	r := tmpl.Resolver()
	for name := range params {
		if _, ok := r.Params[name]; !ok {
			return cw, fmt.Errorf("%s: no parameter %s", path, name)
		}
	}
	maps.Copy(r.Params, params)
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return cw, err
	}
	res := get(doc.Content[0], "Resources")
	for i := 0; res != nil && i+1 < len(res.Content); i += 2 {
		id, n := res.Content[i].Value, res.Content[i+1]
		t := get(n, "Type")
		if t == nil || (t.Value != "AWS::CloudWatch::Alarm" && t.Value != "AWS::CloudWatch::Dashboard") {
			continue
		}
		if c := get(n, "Condition"); c != nil {
			made, err := r.Condition(c.Value)
			if err != nil {
				return cw, fmt.Errorf("%s: Resources.%s.Condition: %w", path, id, err)
			}
			if !made {
				continue
			}
		}
		if t.Value == "AWS::CloudWatch::Dashboard" {
			cw.dashboards++
			continue
		}
		cw.alarms++
		math := get(get(n, "Properties"), "Metrics")
		if math == nil {
			cw.metrics++
			continue
		}
		for _, m := range math.Content {
			if get(m, "MetricStat") != nil {
				cw.metrics++
			}
		}
	}
	return cw, nil
}
