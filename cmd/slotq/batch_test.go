package main

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/localtest"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/local"
)

// The check of batches on slotq local: a queue created with
// --rate 10/1s --batch-max 10 --batch-wait 50ms and 200 echo jobs
// enqueued at once finish in 20 starts at least 100 ms apart (less the
// skew), every job succeeded once. The runtime's lead is 50 ms, a
// stack's kind (SlotLead, 500 ms by default) rather than the embedded
// store's 2 ms: a leader claims its batch within a lead before its start,
// which under the race detector on a busy host takes longer than 2 ms.
// A job its leader could not claim in time takes a new ticket
// (job.Retickets) and starts in a later start: such jobs add as many
// starts at most, never a start closer to another than the limit allows.
func TestQueueBatches(t *testing.T) {
	c := cli{t: t, endpoint: localtest.Start(t, local.Options{Lead: 50 * time.Millisecond}).InvokeURL}
	c.ok("queues", "create", "bq", "--rate", "10/1s", "--batch-max", "10", "--batch-wait", "50ms")
	var qs []api.Queue
	c.okJSON(&qs, "queues")
	if len(qs) != 1 {
		t.Fatalf("queues %+v, want bq alone", qs)
	}
	q := qs[0]
	if q.Config.BatchMax != 10 || q.Config.BatchWait != 50*time.Millisecond {
		t.Fatalf("queue config %+v, want batch_max 10 and batch_wait 50ms", q.Config)
	}
	var res api.EnqueueResult
	c.okJSON(&res, "enqueue", "bq", "--kind", "echo", "--count", "200", "--id", "b-{n}")
	if len(res.Jobs) != 200 {
		t.Fatalf("%d jobs accepted, want 200", len(res.Jobs))
	}
	starts := map[time.Time]int{}
	reticketed := 0
	for n := 1; n <= 200; n++ {
		var j api.Job
		c.okJSON(&j, "jobs", "get", "bq", fmt.Sprintf("b-%d", n), "--wait", "--timeout", "2m")
		if j.Status != api.Succeeded || j.Attempt != 1 {
			t.Fatalf("job %s: %s at attempt %d, want succeeded at its first", j.ID, j.Status, j.Attempt)
		}
		starts[j.StartedAt]++
		if j.Retickets > 0 {
			reticketed++
		}
	}
	at := slices.SortedFunc(maps.Keys(starts), time.Time.Compare)
	if len(at) < 20 || len(at) > 20+reticketed || reticketed > 20 {
		t.Fatalf("%d starts, %d jobs re-ticketed: want 20 batches of 10 (and at most a start more per job a busy host re-ticketed, at most 20 of them)", len(at), reticketed)
	}
	skew := time.Duration(q.Config.Skew)
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < 100*time.Millisecond-skew {
			t.Errorf("starts %d and %d %v apart, less than 100ms − skew %v", i-1, i, gap, skew)
		}
	}
	c.exits([]string{"queues", "create", "bad", "--rate", "10/1s", "--batch-max", "101"}, 1, "invalid_batch (config.batch_max)")
	c.exits([]string{"enqueue", "bq", "--kind", "echo", "--key", "k"}, 1, "invalid_batch (job.key)")
}
