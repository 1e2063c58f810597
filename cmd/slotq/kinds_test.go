package main

import (
	"strings"
	"testing"
)

// TestUnknownKindRefused: on the local runtime, which runs the worker's
// handlers, a job or a schedule of a kind no handler takes is refused at
// enqueue (unknown_kind, with the full path of the field), and nothing is
// written: no queue created by the enqueue, no schedule.
func TestUnknownKindRefused(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.exits([]string{"enqueue", "reports", "--kind", "send-report"}, exitFail, "unknown_kind (job.kind)")
	if _, errOut, code := c.run("queues", "stats", "reports"); code != exitFail || !strings.Contains(errOut, "queue_not_found") {
		t.Errorf("the refused enqueue created its queue: exit %d %s", code, errOut)
	}
	c.ok("queues", "create", "reports", "--interval", "1s")
	c.exits([]string{"schedules", "create", "reports", "morning", "--cron", "0 8 * * *", "--tz", "Europe/Paris", "--kind", "send-report"},
		exitFail, "unknown_kind (schedule.job.kind)")
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
	if code != exitOK || !strings.Contains(errOut, "keeps its limit (rate 10/1s)") || !strings.Contains(errOut, "slotq queues configure rated --interval 2s") {
		t.Errorf("enqueue --interval on a rated queue: exit %d, stderr %q", code, errOut)
	}
	for range 2 { // creates it, then finds it under that interval
		if _, errOut, code := c.run("enqueue", "spaced", "--kind", "echo", "--interval", "2s"); code != exitOK || errOut != "" {
			t.Errorf("enqueue --interval 2s on a queue of 2s or none: exit %d, stderr %q", code, errOut)
		}
	}
}

// TestQueueExistsSaysItOnce: creating a queue that exists is refused
// with one plain message, its operation named once.
func TestQueueExistsSaysItOnce(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.ok("queues", "create", "reports", "--interval", "1s")
	_, errOut, code := c.run("queues", "create", "reports", "--interval", "1s")
	if code != exitFail || !strings.Contains(errOut, "queue_exists (queue)") || strings.Count(errOut, "create queue reports") != 1 {
		t.Errorf("exit %d, stderr %q; want queue_exists, said once", code, errOut)
	}
}
