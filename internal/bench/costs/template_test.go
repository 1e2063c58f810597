package costs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The report reads the stack's memory sizes and skew from the template;
// without one it says what it assumed.
func TestTemplateFigures(t *testing.T) {
	m := memorySizes("../../../template.yaml")
	for role := range functions {
		if m.mb[role] < 128 {
			t.Errorf("%s: %d MB", role, m.mb[role])
		}
	}
	if !strings.Contains(m.source, "Globals.Function.MemorySize") {
		t.Errorf("source %q", m.source)
	}
	if d := templateSkew("../../../template.yaml"); d != 10*time.Millisecond {
		t.Errorf("templateSkew = %v, want the template's DefaultSkew 10ms", d)
	}

	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte("Resources:\n  WorkerFunction:\n    Properties:\n      MemorySize: 256\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m = memorySizes(path)
	if m.mb["worker"] != 256 || m.mb["enqueue"] != defaultMemory || !strings.Contains(m.source, "WorkerFunction 256 MB") {
		t.Errorf("%+v", m)
	}
	if d := templateSkew(path); d != 0 {
		t.Errorf("templateSkew without the parameter = %v", d)
	}
	if m := memorySizes("nope.yaml"); !strings.HasPrefix(m.source, "assumed 128 MB") {
		t.Errorf("missing template: %q", m.source)
	}
}

// The fixed-cost table prices the stack template.yaml makes with its
// defaults: DeadLetterAlarm alone (one metric) and no dashboard. Alarms=all
// makes every alarm but LagAlarm, which needs a queue dimension as well;
// a metric math alarm reads each of its metrics (MissedSlotsAlarm and
// TableThrottlesAlarm two, TableErrorsAlarm seven). The parameters'
// descriptions say what they cost.
func TestTemplateCloudWatch(t *testing.T) {
	for _, tt := range []struct {
		name   string
		params map[string]string
		want   cloudWatch
	}{
		{"Defaults", nil, cloudWatch{alarms: 1, metrics: 1}},
		{"AllAlarms", allAlarms, cloudWatch{alarms: 16, metrics: 24}},
		{"PerQueue", perQueue, cloudWatch{alarms: 17, metrics: 25}},
		{"DeadLetterPerQueue", map[string]string{"MetricsDimension": "Queue"}, cloudWatch{alarms: 1, metrics: 1}},
		{"None", map[string]string{"Alarms": "none"}, cloudWatch{}},
		{"Dashboard", dashboard, cloudWatch{alarms: 1, metrics: 1, dashboards: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := templateCloudWatch("../../../template.yaml", tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("templateCloudWatch(%v) = %+v, want %+v", tt.params, got, tt.want)
			}
		})
	}

	b, err := os.ReadFile("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	params := get(doc.Content[0], "Parameters")
	for _, c := range []struct {
		param string
		set   map[string]string
		price func(cloudWatch) float64
	}{
		{"Alarms", nil, cloudWatch.month},
		{"Alarms", allAlarms, cloudWatch.month},
		{"Dashboard", dashboard, func(cw cloudWatch) float64 { return float64(cw.dashboards) * prices.DashboardMonth }},
	} {
		cw, err := templateCloudWatch("../../../template.yaml", c.set)
		if err != nil {
			t.Fatal(err)
		}
		desc := get(get(params, c.param), "Description")
		if price := fmt.Sprintf("$%.2f a month", c.price(cw)); desc == nil || !strings.Contains(desc.Value, price) {
			t.Errorf("the %s parameter's description does not say %s (the stack with %v)", c.param, price, c.set)
		}
	}
}

// Conditions are evaluated as CloudFormation does, with the parameters'
// defaults or the values given; what cannot be evaluated is an error.
func TestTemplateCloudWatchConditions(t *testing.T) {
	const tmpl = `Parameters:
  A: {Type: String, Default: "x"}
  B: {Type: String, Default: "y"}
Conditions:
  IsX: !Equals [!Ref A, x]
  NotY: !Not [!Equals [!Ref B, y]]
  Either: !Or [!Condition IsX, !Condition NotY]
  Both: !And [!Condition IsX, !Condition NotY]
  Odd: !Contains [[x], !Ref A]
Resources:
  Plain:
    Type: AWS::CloudWatch::Alarm
    Properties: {MetricName: M}
  WhenX:
    Type: AWS::CloudWatch::Alarm
    Condition: IsX
    Properties: {MetricName: M}
  WhenEither:
    Type: AWS::CloudWatch::Alarm
    Condition: Either
    Properties:
      Metrics:
        - {Id: a, MetricStat: {Metric: {MetricName: M}}}
        - {Id: b, MetricStat: {Metric: {MetricName: N}}}
        - {Id: e, Expression: a/b}
  WhenBoth:
    Type: AWS::CloudWatch::Dashboard
    Condition: Both
    Properties: {DashboardBody: "{}"}
  Queue:
    Type: AWS::SQS::Queue
`
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		params map[string]string
		want   cloudWatch
	}{
		{nil, cloudWatch{alarms: 3, metrics: 4}},
		{map[string]string{"A": "z"}, cloudWatch{alarms: 1, metrics: 1}},
		{map[string]string{"A": "z", "B": "z"}, cloudWatch{alarms: 2, metrics: 3}},
		{map[string]string{"B": "z"}, cloudWatch{alarms: 3, metrics: 4, dashboards: 1}},
	} {
		got, err := templateCloudWatch(path, tt.params)
		if err != nil || got != tt.want {
			t.Errorf("templateCloudWatch(%v) = %+v, %v; want %+v", tt.params, got, err, tt.want)
		}
	}
	if _, err := templateCloudWatch(path, map[string]string{"C": "x"}); err == nil {
		t.Error("a parameter the template does not have: no error")
	}
	odd := strings.Replace(tmpl, "Condition: IsX", "Condition: Odd", 1)
	if err := os.WriteFile(path, []byte(odd), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := templateCloudWatch(path, nil); err == nil || !strings.Contains(err.Error(), "WhenX") {
		t.Errorf("a condition it cannot evaluate: %v, want an error naming the resource", err)
	}
	if _, err := templateCloudWatch("nope.yaml", nil); err == nil {
		t.Error("a missing template: no error")
	}
}
