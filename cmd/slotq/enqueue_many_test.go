package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/slotq/slotq/pkg/api"
)

// `slotq enqueue --count N` and `--from FILE|-` enqueue many jobs in calls
// of up to api.MaxBatch: ids and payloads from a pattern, or from JSON
// lines; sent again with the same ids, none is enqueued twice.
func TestEnqueueMany(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.ok("queues", "create", "many", "--interval", "1h")
	c.ok("queues", "pause", "many")

	const n = api.MaxBatch + 20 // two calls
	var res api.EnqueueResult
	c.okJSON(&res, "enqueue", "many", "--kind", "echo", "--count", fmt.Sprint(n), "--id", "job-{n}", "--payload", `{"n":{n}}`)
	if len(res.Jobs) != n {
		t.Fatalf("--count %d: %d jobs answered", n, len(res.Jobs))
	}
	for i, a := range res.Jobs {
		if want := fmt.Sprintf("job-%d", i+1); a.JobID != want || a.Ticket != int64(i+1) || a.Existing {
			t.Fatalf("job %d answered %+v, want id %s, ticket %d, new", i, a, want, i+1)
		}
	}
	var j api.Job
	c.okJSON(&j, "jobs", "get", "many", "job-7")
	var p struct{ N int }
	if err := json.Unmarshal(j.Payload, &p); err != nil || p.N != 7 {
		t.Errorf("job-7's payload %s, want {\"n\":7}", j.Payload)
	}
	// Again: every job was enqueued before.
	c.okJSON(&res, "enqueue", "many", "--kind", "echo", "--count", fmt.Sprint(n), "--id", "job-{n}", "--payload", `{"n":{n}}`)
	for _, a := range res.Jobs {
		if !a.Existing {
			t.Fatalf("sent again, %s answered %+v: want enqueued before", a.JobID, a)
		}
	}
	if out := c.ok("enqueue", "many", "--kind", "echo", "--count", "30", "--id", "job-{n}"); !strings.Contains(out, "30 jobs on queue many: 0 new, 30 enqueued before") {
		t.Errorf("the summary of 30 jobs enqueued before:\n%s", out)
	}

	stdin = strings.NewReader(`{"id":"line-1","payload":{"a":1}}` + "\n\n" +
		`{"id":"line-2","kind":"sleep","priority":2}` + "\n" + `{"id":"line-3","key":"k9"}` + "\n")
	c.okJSON(&res, "enqueue", "many", "--kind", "echo", "--key", "k1", "--from", "-")
	if len(res.Jobs) != 3 {
		t.Fatalf("--from with 3 lines: %+v", res)
	}
	for _, w := range []struct{ id, kind, key string }{{"line-1", "echo", "k1"}, {"line-2", "sleep", "k1"}, {"line-3", "echo", "k9"}} {
		var got api.Job
		c.okJSON(&got, "jobs", "get", "many", w.id)
		if got.Kind != w.kind || got.Key != w.key {
			t.Errorf("%s: kind %q key %q, want %q and %q (a line's own, else the flags')", w.id, got.Kind, got.Key, w.kind, w.key)
		}
	}
}

// What --count and --from refuse, before any call: nothing is enqueued.
func TestEnqueueManyRefused(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	for _, tc := range []struct {
		args  []string
		stdin string
		field string
	}{
		{[]string{"--kind", "echo", "--count", "2", "--id", "same"}, "", "job.id"},
		{[]string{"--kind", "echo", "--count", "0"}, "", "count"},
		{[]string{"--kind", "echo", "--from", "-"}, "{\"kind\":\"echo\"}\nnot json\n", "jobs[1]"},
		{[]string{"--kind", "echo", "--from", "-"}, "\n", "jobs"},
		{[]string{"--kind", "echo", "--count", "2", "--from", "-"}, "", ""},
		{[]string{"--kind", "echo", "--count", "2", "--wait"}, "", ""},
		{[]string{"--from", "-", "--id", "x"}, "{\"kind\":\"echo\"}\n", ""},
	} {
		stdin = strings.NewReader(tc.stdin)
		out, errOut, code := c.run(append([]string{"enqueue", "refused", "--json"}, tc.args...)...)
		if code == 0 {
			t.Errorf("enqueue %v: exit 0 (%s), want a refusal", tc.args, out)
			continue
		}
		if tc.field != "" {
			var e struct{ Error struct{ Field string } }
			if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Error.Field != tc.field {
				t.Errorf("enqueue %v: %s, want field %q", tc.args, errOut, tc.field)
			}
		}
	}
	if _, errOut, code := c.run("queues", "get", "refused"); code == 0 {
		t.Errorf("a refused enqueue created its queue: %s", errOut)
	}
}
