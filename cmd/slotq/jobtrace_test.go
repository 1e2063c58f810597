package main

import (
	"regexp"
	"testing"
)

// TestJobsGetShowsTrace: jobs get's table shows the trace context the
// record keeps (traceparent, tracestate), as its --json does.
func TestJobsGetShowsTrace(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	c.ok("invoke", "EnqueueFunction", `{"queue":"traced","job":{"id":"t1","kind":"echo","traceparent":"`+tp+`","tracestate":"vendor=1"}}`)
	out := c.ok("jobs", "get", "traced", "t1", "--wait")
	for _, want := range []string{`(?m)^traceparent +` + tp + `$`, `(?m)^tracestate +vendor=1$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("jobs get lacks %s:\n%s", want, out)
		}
	}
}
