package main

import (
	"fmt"
	"testing"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
)

// TestStatsIdleQueues: a queue whose jobs all ran shows nothing waiting,
// whether its jobs held places in the line, ran under key limits (which
// book them out of the line) or were a schedule's occurrences, and a
// schedule deleted with its occurrences made ahead leaves nothing waiting
// either. While line jobs wait, they are counted.
func TestStatsIdleQueues(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	stats := func(queue string) engine.Stats {
		var st engine.Stats
		c.okJSON(&st, "queues", "stats", queue)
		return st
	}

	c.ok("queues", "create", "tenants", "--rate", "200/1s", "--key-rate", "5/1s", "--key-max-running", "0")
	for _, k := range []string{"a", "b", "c"} {
		c.ok("enqueue", "tenants", "--kind", "echo", "--key", k, "--wait")
	}
	if st := stats("tenants"); st.Waiting != 0 {
		t.Errorf("keyed queue, its three jobs done: waiting %d, want 0", st.Waiting)
	}

	c.ok("queues", "create", "lined", "--interval", "10ms")
	for i := range 3 {
		c.ok("enqueue", "lined", "--kind", "echo", "--id", fmt.Sprint("l", i), "--wait")
	}
	if st := stats("lined"); st.Waiting != 0 {
		t.Errorf("queue whose line ran: waiting %d, want 0", st.Waiting)
	}
	c.ok("queues", "pause", "lined")
	for i := range 2 {
		c.ok("enqueue", "lined", "--kind", "echo", "--id", fmt.Sprint("w", i))
	}
	if st := stats("lined"); st.Waiting != 2 {
		t.Errorf("paused queue with two jobs in line: waiting %d, want 2", st.Waiting)
	}

	c.ok("queues", "create", "reports", "--interval", "100ms")
	c.ok("schedules", "create", "reports", "beat", "--every", "1s", "--kind", "echo")
	testenv.WaitFor(t, "an occurrence of the schedule succeeds", func() bool {
		var st struct {
			Activity struct {
				Succeeded int `json:"succeeded"`
			} `json:"activity"`
		}
		c.okJSON(&st, "queues", "stats", "reports")
		return st.Activity.Succeeded > 0
	})
	c.ok("schedules", "delete", "reports", "beat")
	if st := stats("reports"); st.Waiting != 0 {
		t.Errorf("queue whose schedule was deleted: waiting %d, want 0", st.Waiting)
	}
}
