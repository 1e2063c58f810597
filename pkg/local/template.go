package local

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/slotq/slotq/internal/lambdafn"
	"github.com/slotq/slotq/internal/local/esm"
	"github.com/slotq/slotq/internal/local/samlocal"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// FromTemplate reads a Stack from a SAM template such as template.yaml:
// the functions' timeouts, WorkerFunction's SQS event (BatchSize,
// MaximumBatchingWindowInSeconds, FunctionResponseTypes), the queue's
// VisibilityTimeout and RedrivePolicy maxReceiveCount, ResumeFunction's
// ScheduleV2 (rate, Input, RetryPolicy) and the DefaultInterval,
// DefaultLimit (in the place of DefaultInterval when set) and DefaultSkew
// parameters.
func FromTemplate(path string) (Stack, error) {
	t, err := samlocal.Load(path)
	if err != nil {
		return Stack{}, err
	}
	s := Stack{Timeouts: map[string]time.Duration{}}
	for _, id := range t.Functions() {
		f, err := t.Function(id)
		if err != nil {
			return s, err
		}
		s.Timeouts[id] = time.Duration(f.Timeout) * time.Second
	}
	w, err := t.Function(WorkerFunction)
	if err != nil {
		return s, err
	}
	queueID := ""
	for _, ev := range w.Events {
		e := asMap(ev)
		if e["Type"] != "SQS" {
			continue
		}
		p := asMap(e["Properties"])
		if ga, ok := asMap(p["Queue"])["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
			queueID = fmt.Sprint(ga[0])
		}
		s.BatchSize = atoi(p["BatchSize"], 10)
		s.BatchingWindow = time.Duration(atoi(p["MaximumBatchingWindowInSeconds"], 0)) * time.Second
		types, _ := p["FunctionResponseTypes"].([]any)
		s.ReportBatchItemFailures = slices.Contains(types, any("ReportBatchItemFailures"))
	}
	if queueID == "" {
		return s, fmt.Errorf("%s: %s has no SQS event", path, WorkerFunction)
	}
	q := t.Resources[queueID].Properties
	s.VisibilityTimeout = time.Duration(atoi(t.Default(q["VisibilityTimeout"]), 30)) * time.Second
	s.MaxReceiveCount = atoi(asMap(q["RedrivePolicy"])["maxReceiveCount"], 0)
	r, err := t.Function(ResumeFunction)
	if err != nil {
		return s, err
	}
	for _, ev := range r.Events {
		e := asMap(ev)
		if e["Type"] != "ScheduleV2" && e["Type"] != "Schedule" {
			continue
		}
		p := asMap(e["Properties"])
		if s.ResumeEvery, err = esm.ParseRate(fmt.Sprint(p["ScheduleExpression"])); err != nil {
			return s, fmt.Errorf("%s: %s: %w", path, ResumeFunction, err)
		}
		s.ResumeInput, _ = p["Input"].(string)
		s.ResumeRetries = atoi(asMap(p["RetryPolicy"])["MaximumRetryAttempts"], 0)
	}
	if s.ResumeEvery == 0 {
		return s, fmt.Errorf("%s: %s has no schedule", path, ResumeFunction)
	}
	for name, dst := range map[string]*time.Duration{"DefaultInterval": &s.Defaults.Interval, "DefaultSkew": &s.Defaults.Skew, "SlotLead": &s.Lead} {
		if d, ok := t.Parameters[name]["Default"].(string); ok {
			if *dst, err = slot.ParseDuration(d); err != nil {
				return s, fmt.Errorf("%s: parameter %s: %w", path, name, err)
			}
		}
	}
	if d, _ := t.Parameters["DefaultLimit"]["Default"].(string); d != "" {
		l, err := lambdafn.ParseDefaultLimit(d)
		if err != nil {
			return s, fmt.Errorf("%s: parameter DefaultLimit: %w", path, err)
		}
		s.Defaults.Interval, s.Defaults.Rate, s.Defaults.Burst, s.Defaults.Window, s.Defaults.Limits = l.Interval, l.Rate, l.Burst, l.Window, l.Limits
	}
	if d, _ := t.Parameters["DefaultKeyLimit"]["Default"].(string); d != "" {
		ls, err := api.ParseLimits(d)
		if err == nil {
			err = slot.ValidateKeyLimits(ls, "")
		}
		if err != nil {
			return s, fmt.Errorf("%s: parameter DefaultKeyLimit: %w", path, err)
		}
		s.Defaults.KeyLimits = ls
	}
	return s, nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func atoi(v any, def int) int {
	if n, err := strconv.Atoi(fmt.Sprint(v)); err == nil && v != nil {
		return n
	}
	return def
}
