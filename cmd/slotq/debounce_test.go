package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/slotq/slotq/pkg/api"
)

// `slotq enqueue --debounce-key K --debounce D`: the jobs of a burst
// answer debounced into the first but it, and --wait on the last waits
// for the job that starts, which ran with the last payload.
func TestEnqueueDebounce(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.ok("queues", "create", "deb", "--interval", "100ms")
	var first api.EnqueueResult
	c.okJSON(&first, "enqueue", "deb", "--kind", "echo", "--debounce-key", "k", "--debounce", "1s", "--payload", `{"n":0}`)
	if a := first.Jobs[0]; a.Status == api.StatusDebounced {
		t.Fatalf("the first job answered %+v, want a job of its own", a)
	}
	for n := 1; n < 5; n++ {
		var res api.EnqueueResult
		c.okJSON(&res, "enqueue", "deb", "--kind", "echo", "--debounce-key", "k", "--debounce", "1s", "--payload", fmt.Sprintf(`{"n":%d}`, n))
		if a := res.Jobs[0]; a.Status != api.StatusDebounced || a.DebouncedInto != first.Jobs[0].JobID {
			t.Fatalf("job %d answered %+v, want debounced into %s", n, a, first.Jobs[0].JobID)
		}
	}
	var j api.Job
	c.okJSON(&j, "enqueue", "deb", "--kind", "echo", "--debounce-key", "k", "--debounce", "1s", "--payload", `{"n":5}`, "--wait", "--timeout", "1m")
	var p struct{ N int }
	if err := json.Unmarshal(j.Payload, &p); err != nil || j.ID != first.Jobs[0].JobID || j.Status != api.Succeeded || p.N != 5 {
		t.Fatalf("waited for %s %s with payload %s, want %s succeeded with the last payload", j.ID, j.Status, j.Payload, first.Jobs[0].JobID)
	}
	c.exits([]string{"enqueue", "deb", "--kind", "echo", "--debounce-key", "k"}, 1, "invalid_debounce (job.debounce)")
	c.exits([]string{"enqueue", "deb", "--kind", "echo", "--debounce-key", "k", "--debounce", "2h"}, 1, "invalid_debounce (job.debounce)")
}
