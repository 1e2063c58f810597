package functions_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/slotq/slotq/internal/lambdafn"
	"github.com/slotq/slotq/internal/metrics"
)

// The AWS metrics the dashboard and alarms may name besides slotq's own:
// the functions' and the dead-letter queue's.
var awsMetrics = map[string][]string{
	"AWS/Lambda":   {"Errors", "Throttles", "Duration", "Invocations", "RecursiveInvocationsDropped"},
	"AWS/SQS":      {"ApproximateNumberOfMessagesVisible"},
	"AWS/DynamoDB": {"ReadThrottleEvents", "WriteThrottleEvents", "SystemErrors"},
}

func emitted() []string {
	var names []string
	for _, m := range metrics.Metrics {
		names = append(names, m.Name)
	}
	return names
}

// The dashboard shows only metrics somebody writes: slotq's (internal/metrics'
// list, in the namespace the functions write to, by the queue dimension
// or, for refusals, by code) or the stack's functions' and dead-letter
// queue's. It shows the figures operations asks for.
func TestTemplateDashboardMetrics(t *testing.T) {
	res := get(templateNode(t, filepath.Join(root, "template.yaml")), "Resources")
	sub := get(get(get(res, "StackDashboard"), "Properties"), "DashboardBody")
	if sub == nil || sub.Tag != "!Sub" || len(sub.Content) != 2 {
		t.Fatal("StackDashboard.Properties.DashboardBody is not a !Sub [body, variables]")
	}
	vars := sub.Content[1]
	// The dashboard's namespace is the one the functions are told to
	// write to.
	env := get(get(get(get(templateNode(t, filepath.Join(root, "template.yaml")), "Globals"), "Function"), "Environment"), "Variables")
	sameNode(t, "Dashboard's Ns", get(env, lambdafn.EnvMetricsNamespace), get(vars, "Ns"))
	// Its searches are by the queue dimension the functions are told to
	// write under, when there is one, and stack-wide without.
	if dim := get(vars, "Dim"); dim == nil || dim.Tag != "!If" || len(dim.Content) != 3 ||
		dim.Content[0].Value != "HasMetricsDimension" || dim.Content[1].Tag != "!Sub" || dim.Content[1].Value != ",${MetricsDimension}" || dim.Content[2].Value != "" {
		t.Errorf("Dashboard's Dim is not !If [HasMetricsDimension, !Sub \",${MetricsDimension}\", \"\"]")
	}
	if d := get(env, lambdafn.EnvMetricsDimension); d == nil || d.Tag != "!Ref" || d.Value != "MetricsDimension" {
		t.Errorf("%s is not !Ref MetricsDimension", lambdafn.EnvMetricsDimension)
	}

	body := regexp.MustCompile(`\$\{[^}]+\}`).ReplaceAllStringFunc(sub.Content[0].Value, func(v string) string {
		switch v {
		case "${Ns}":
			return "NS"
		case "${Dim}":
			return ",DIM"
		case "${LagThreshold}":
			return "1"
		}
		return "X"
	})
	var dash struct {
		Widgets []struct {
			Properties struct {
				Title   string  `json:"title"`
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &dash); err != nil {
		t.Fatalf("dashboard body is not JSON: %v\n%s", err, body)
	}
	search := regexp.MustCompile(`^SEARCH\('\{NS,(DIM|Code)\} MetricName="(\w+)"', '\w+', 60\)$`)
	var shown []string
	for _, w := range dash.Widgets {
		if len(w.Properties.Metrics) == 0 {
			t.Errorf("widget %q shows no metric", w.Properties.Title)
		}
		for _, row := range w.Properties.Metrics {
			switch first := row[0].(type) {
			case map[string]any:
				m := search.FindStringSubmatch(first["expression"].(string))
				if m == nil {
					t.Errorf("widget %q: expression %q is not a SEARCH of slotq's namespace by queue or code", w.Properties.Title, first["expression"])
					continue
				}
				if (m[1] == "Code") != (m[2] == metrics.JobsRefused) {
					t.Errorf("widget %q: %s searched by %s", w.Properties.Title, m[2], m[1])
				}
				shown = append(shown, m[2])
			case string:
				name, _ := row[1].(string)
				if first == "NS" {
					shown = append(shown, name)
				} else if !slices.Contains(awsMetrics[first], name) {
					t.Errorf("widget %q: %s %s is not a metric of the stack's resources", w.Properties.Title, first, name)
				}
			}
		}
	}
	for _, name := range shown {
		if !slices.Contains(emitted(), name) {
			t.Errorf("the dashboard shows %s, which nobody writes (internal/metrics)", name)
		}
	}
	for _, want := range []string{metrics.Starts, metrics.StartLateness, metrics.Lag, metrics.Waiting, metrics.AttemptFailures, metrics.DeadLetters} {
		if !slices.Contains(shown, want) {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// Every alarm names a metric somebody writes, notifies the optional topic,
// says how many of its periods must breach (DatapointsToAlarm), and the
// ones the operations guide promises are there.
func TestTemplateAlarms(t *testing.T) {
	doc := templateNode(t, filepath.Join(root, "template.yaml"))
	env := get(get(get(get(doc, "Globals"), "Function"), "Environment"), "Variables")
	res := get(doc, "Resources")
	var alarms []string
	for _, id := range keys(res) {
		r := get(res, id)
		if get(r, "Type").Value != "AWS::CloudWatch::Alarm" {
			continue
		}
		alarms = append(alarms, id)
		p := get(r, "Properties")
		evals, dps := get(p, "EvaluationPeriods"), get(p, "DatapointsToAlarm")
		if evals == nil || dps == nil || atoi(dps.Value) < 1 || atoi(dps.Value) > atoi(evals.Value) {
			t.Errorf("%s: DatapointsToAlarm %v of EvaluationPeriods %v", id, dps, evals)
		}
		if math := get(p, "Metrics"); math != nil {
			// Metric math over the stack's resources' metrics.
			stats := 0
			for _, m := range math.Content {
				stat := get(get(m, "MetricStat"), "Metric")
				if stat == nil {
					continue
				}
				stats++
				ns, name := get(stat, "Namespace").Value, get(stat, "MetricName").Value
				if n := get(stat, "Namespace"); n.Tag == "!If" {
					// slotq's own, stack-wide (under no dimension).
					sameNode(t, id+" Namespace", get(env, lambdafn.EnvMetricsNamespace), n)
					if !slices.Contains(emitted(), name) {
						t.Errorf("%s watches %s, which nobody writes (internal/metrics)", id, name)
					}
					if get(stat, "Dimensions") != nil {
						t.Errorf("%s: %s has Dimensions; slotq's stack-wide metrics have none", id, name)
					}
					continue
				}
				if !slices.Contains(awsMetrics[ns], name) {
					t.Errorf("%s watches %s %s, not a metric of the stack's resources", id, ns, name)
				}
				if d := get(stat, "Dimensions"); d == nil || get(d.Content[0], "Value").Tag != "!Ref" {
					t.Errorf("%s: %s %s must name one of the stack's resources", id, ns, name)
				}
			}
			if stats == 0 {
				t.Errorf("%s: metric math over no metric", id)
			}
			checkActions(t, id, p)
			continue
		}
		ns, name := get(p, "Namespace"), get(p, "MetricName").Value
		if ns.Tag == "!If" {
			sameNode(t, id+" Namespace", get(env, lambdafn.EnvMetricsNamespace), ns)
			if !slices.Contains(emitted(), name) {
				t.Errorf("%s watches %s, which nobody writes (internal/metrics)", id, name)
			}
		} else if !slices.Contains(awsMetrics[ns.Value], name) {
			t.Errorf("%s watches %s %s, not a metric of the stack's resources", id, ns.Value, name)
		} else if d := get(p, "Dimensions"); d == nil || len(d.Content) != 1 {
			t.Errorf("%s: %s %s must name one of the stack's resources", id, ns.Value, name)
		}
		checkActions(t, id, p)
	}
	// The resume run's backlog is the stack's (metrics.Recorder.Resumed
	// writes it under no dimension): its alarm names none.
	if p := get(get(res, "ResumeBacklogAlarm"), "Properties"); p != nil && get(p, "Dimensions") != nil {
		t.Errorf("ResumeBacklogAlarm has Dimensions; ResumeBacklog is published for the stack, under none")
	}
	for _, want := range everyAlarm {
		if !slices.Contains(alarms, want) {
			t.Errorf("no %s", want)
		}
	}
}

// everyAlarm lists the alarms the operations guide promises, which a
// stack deployed with Alarms=all and a queue dimension has.
var everyAlarm = []string{"LagAlarm", "MissedSlotsAlarm", "ResumeBacklogAlarm", "JobFailuresAlarm", "DeadLetterAlarm", "WorkerErrorsAlarm", "WorkerThrottlesAlarm",
	"WorkerDurationAlarm", "ResumeErrorsAlarm", "ResumeMissedAlarm", "EnqueueErrorsAlarm", "EnqueueThrottlesAlarm",
	"AdminErrorsAlarm", "AdminThrottlesAlarm", "TableThrottlesAlarm", "TableErrorsAlarm", "RecursionAlarm"}

// Which alarms and dashboard a stack gets, by its parameters: by default
// DeadLetterAlarm only (a message lost is the one signal an idle stack
// pays for, docs/costs.md) and no dashboard; every alarm with Alarms=all,
// but LagAlarm only with a queue dimension too (nothing writes Lag
// without one: the share of missed slots, which every worker writes,
// stands in); none with Alarms=none; the dashboard with Dashboard=true.
func TestTemplateAlarmSets(t *testing.T) {
	tmpl := loadTemplate(t)
	res := get(templateNode(t, filepath.Join(root, "template.yaml")), "Resources")
	made := func(params map[string]string) (alarms []string, dashboard bool) {
		t.Helper()
		r := tmpl.Resolver()
		maps.Copy(r.Params, params)
		for _, id := range keys(res) {
			typ := get(get(res, id), "Type").Value
			if typ != "AWS::CloudWatch::Alarm" && typ != "AWS::CloudWatch::Dashboard" {
				continue
			}
			if c := get(get(res, id), "Condition"); c != nil {
				yes, err := r.Condition(c.Value)
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				if !yes {
					continue
				}
			}
			if typ == "AWS::CloudWatch::Dashboard" {
				dashboard = true
				continue
			}
			alarms = append(alarms, id)
		}
		slices.Sort(alarms)
		return alarms, dashboard
	}
	withoutLag := slices.DeleteFunc(slices.Clone(everyAlarm), func(a string) bool { return a == "LagAlarm" })
	for _, tt := range []struct {
		name      string
		params    map[string]string
		alarms    []string
		dashboard bool
	}{
		{"Defaults", nil, []string{"DeadLetterAlarm"}, false},
		{"All", map[string]string{"Alarms": "all"}, withoutLag, false},
		{"AllPerQueue", map[string]string{"Alarms": "all", "MetricsDimension": "Queue"}, everyAlarm, false},
		{"DeadLetterPerQueue", map[string]string{"Alarms": "dead-letter", "MetricsDimension": "Queue"}, []string{"DeadLetterAlarm"}, false},
		{"None", map[string]string{"Alarms": "none", "MetricsDimension": "Queue"}, nil, false},
		{"Dashboard", map[string]string{"Dashboard": "true"}, []string{"DeadLetterAlarm"}, true},
		{"Production", map[string]string{"Alarms": "all", "Dashboard": "true"}, withoutLag, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			alarms, dashboard := made(tt.params)
			want := slices.Sorted(slices.Values(tt.alarms))
			if !slices.Equal(alarms, want) || dashboard != tt.dashboard {
				t.Errorf("alarms %v, dashboard %v; want %v, %v", alarms, dashboard, want, tt.dashboard)
			}
		})
	}
}

func checkActions(t *testing.T, id string, p *yaml.Node) {
	t.Helper()
	for _, a := range []string{"AlarmActions", "OKActions"} {
		if v := get(p, a); v == nil || v.Tag != "!If" || v.Content[0].Value != "HasAlarmTopic" {
			t.Errorf("%s: %s is not !If [HasAlarmTopic, ...]", id, a)
		}
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// Every parameter is used somewhere in the template.
func TestTemplateParametersUsed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, p := range keys(get(doc.Content[0], "Parameters")) {
		if !strings.Contains(text, "!Ref "+p) && !strings.Contains(text, "${"+p+"}") {
			t.Errorf("parameter %s is not used", p)
		}
	}
}
