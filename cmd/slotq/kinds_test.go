package main

import (
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/pkg/api"
)

// TestUnknownKindRefused: on the local runtime, which runs the worker's
// handlers, a job or a schedule of a kind no handler takes is refused at
// enqueue (unknown_kind, with the full path of the field), and nothing is
// written: no queue created by the enqueue, no schedule.
func TestUnknownKindRefused(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.exits([]string{"enqueue", "reports", "--kind", "send-report"}, clikit.ExitFail, "unknown_kind (job.kind)")
	if _, errOut, code := c.run("queues", "stats", "reports"); code != clikit.ExitFail || !strings.Contains(errOut, "queue_not_found") {
		t.Errorf("the refused enqueue created its queue: exit %d %s", code, errOut)
	}
	c.ok("queues", "create", "reports", "--interval", "1s")
	c.exits([]string{"schedules", "create", "reports", "morning", "--cron", "0 8 * * *", "--tz", "Europe/Paris", "--kind", "send-report"},
		clikit.ExitFail, "unknown_kind (schedule.job.kind)")
	if out := c.ok("schedules", "list", "reports"); strings.Contains(out, "morning") {
		t.Errorf("the refused schedule was created:\n%s", out)
	}
	c.ok("enqueue", "reports", "--kind", "echo", "--wait")
}

// TestEnqueueIntervalKept: enqueue --interval sets the limit of a queue
// the call creates; on a queue that exists under another limit it does
// nothing, and the command says so (and how to change the limit).
func TestEnqueueIntervalKept(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.ok("queues", "create", "rated", "--rate", "10/1s")
	_, errOut, code := c.run("enqueue", "rated", "--kind", "echo", "--interval", "2s")
	if code != clikit.ExitOK || !strings.Contains(errOut, "keeps its limit (rate 10/1s)") || !strings.Contains(errOut, "slotq queues configure rated --interval 2s") {
		t.Errorf("enqueue --interval on a rated queue: exit %d, stderr %q", code, errOut)
	}
	for range 2 { // creates it, then finds it under that interval
		if _, errOut, code := c.run("enqueue", "spaced", "--kind", "echo", "--interval", "2s"); code != clikit.ExitOK || errOut != "" {
			t.Errorf("enqueue --interval 2s on a queue of 2s or none: exit %d, stderr %q", code, errOut)
		}
	}
}

// TestEnqueueCreatesWithRateOrWindow: --rate (with --burst) and --window
// give the queue an enqueue creates its limit, as --interval does, and
// a queue that exists under another limit keeps it, with the same note.
// A limit the function would refuse is refused before the call, with
// its code and field, and nothing is created.
func TestEnqueueCreatesWithRateOrWindow(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	for _, tt := range []struct {
		queue string
		flags []string
		limit string
	}{
		{"bursty", []string{"--rate", "100/1m", "--burst", "5"}, "rate 100/1m burst 5"},
		{"steady", []string{"--rate", "10/1s"}, "rate 10/1s"},
		{"hourly", []string{"--window", "5000/1h"}, "window 5000/1h"},
	} {
		for range 2 { // creates it, then finds it under that limit
			args := append([]string{"enqueue", tt.queue, "--kind", "echo"}, tt.flags...)
			if _, errOut, code := c.run(args...); code != clikit.ExitOK || errOut != "" {
				t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
			}
		}
		var st engine.Stats
		c.okJSON(&st, "queues", "stats", tt.queue)
		if l := limits(api.Config(st.Config)); l != tt.limit {
			t.Errorf("queue %s created with %v has limit %q, want %q", tt.queue, tt.flags, l, tt.limit)
		}
	}
	// A queue that exists under another limit keeps it, and the command
	// says so, with the configure that would change it.
	_, errOut, code := c.run("enqueue", "steady", "--kind", "echo", "--window", "3/1m")
	if code != clikit.ExitOK || !strings.Contains(errOut, "keeps its limit (rate 10/1s): --window sets") || !strings.Contains(errOut, "slotq queues configure steady --window 3/1m'") {
		t.Errorf("enqueue --window on a rated queue: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = c.run("enqueue", "hourly", "--kind", "echo", "--rate", "10/1s", "--burst", "2")
	if code != clikit.ExitOK || !strings.Contains(errOut, "keeps its limit (window 5000/1h): --rate sets") || !strings.Contains(errOut, "slotq queues configure hourly --rate 10/1s --burst 2'") {
		t.Errorf("enqueue --rate --burst on a windowed queue: exit %d, stderr %q", code, errOut)
	}
	// Refused before the call, naming the field; the queue is not created.
	for _, tt := range []struct {
		flags  []string
		code   int
		stderr string
	}{
		{[]string{"--rate", "1/1000h"}, clikit.ExitFail, "slotq enqueue: invalid_rate (rate): --rate 1/1000h: "},
		{[]string{"--rate", "10/1s", "--burst", "101"}, clikit.ExitFail, "slotq enqueue: invalid_burst (burst): --burst 101: "},
		{[]string{"--window", "200000/1h"}, clikit.ExitFail, "slotq enqueue: invalid_window (window): --window 200000/1h: "},
		{[]string{"--interval", "1s", "--window", "3/1m"}, clikit.ExitUsage, "give one of --interval, --rate (with --burst) and --window, not --interval and --window"},
		{[]string{"--burst", "3"}, clikit.ExitUsage, "--burst goes with --rate"},
		{[]string{"--rate", "often"}, clikit.ExitUsage, "--rate"},
	} {
		c.exits(append([]string{"enqueue", "refused", "--kind", "echo"}, tt.flags...), tt.code, tt.stderr)
	}
	if _, errOut, code := c.run("queues", "stats", "refused"); code != clikit.ExitFail || !strings.Contains(errOut, "queue_not_found") {
		t.Errorf("a refused enqueue created its queue: exit %d %s", code, errOut)
	}
}

// TestQueueExistsSaysItOnce: creating a queue that exists is refused
// with one plain message, its operation named once.
func TestQueueExistsSaysItOnce(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.ok("queues", "create", "reports", "--interval", "1s")
	_, errOut, code := c.run("queues", "create", "reports", "--interval", "1s")
	if code != clikit.ExitFail || !strings.Contains(errOut, "queue_exists (queue)") || strings.Count(errOut, "create queue reports") != 1 {
		t.Errorf("exit %d, stderr %q; want queue_exists, said once", code, errOut)
	}
}
