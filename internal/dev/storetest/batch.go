package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
)

// testBatch checks ListBatch (engine.BatchStore): a batch's list holds
// its queued jobs at its ticket and generation only, as they were
// written (batched), up to its limit.
func testBatch(t *testing.T, newState func(t *testing.T) engine.State) {
	t.Run("List", func(t *testing.T) {
		st := newState(t)
		ctx := t.Context()
		const gen = 41
		q := queueOfGen(t, st, gen)
		batched := func(id string, ticket int64, g int64) job.Job {
			j := newJob(q, id, ticket, job.Queued)
			j.Batched, j.Gen = true, g
			return j
		}
		in := []job.Job{batched("m1", 5, gen), batched("m2", 5, gen), batched("m3", 5, gen), batched("m4", 5, gen)}
		others := []job.Job{
			batched("t4", 4, gen),   // another batch of the queue
			batched("t6", 6, gen),   // another batch of the queue
			batched("g9", 5, gen+1), // the ticket of another generation
		}
		lone := newJob(q, "lone", 5, job.Queued) // not of a batch, at the ticket
		lone.Gen = gen
		createJobs(t, st, append(append(slices.Clone(in), others...), lone)...)
		// m4 claimed: running, no longer waiting for its batch.
		claimed := in[3]
		claimed.Status, claimed.StartedAt = job.Running, at(5*time.Second)
		if err := st.UpdateJob(ctx, claimed, in[3].Version()); err != nil {
			t.Fatalf("claim m4: %v", err)
		}
		b := engine.BatchRef{Queue: q, Gen: gen, Ticket: 5}
		got, err := st.ListBatch(ctx, b, 10)
		if err != nil {
			t.Fatalf("ListBatch: %v", err)
		}
		if ids := jobIDs(got); !slices.Equal(ids, []string{"m1", "m2", "m3"}) {
			t.Fatalf("ListBatch(ticket 5) = %v; want the batch's queued jobs m1 m2 m3 (not m4, claimed; not t4, t6, g9, lone)", ids)
		}
		for i, j := range got {
			if d := diffJob(j, in[i]); d != "" {
				t.Errorf("ListBatch: %s: %s", j.ID, d)
			}
			if !j.Batched || j.Gen != gen {
				t.Errorf("ListBatch: %s batched %v, gen %d; want batched, gen %d", j.ID, j.Batched, j.Gen, gen)
			}
		}
		got, err = st.ListBatch(ctx, b, 2)
		if err != nil || len(got) != 2 {
			t.Fatalf("ListBatch(limit 2) = %v, %v; want 2 jobs", jobIDs(got), err)
		}
		for _, j := range got {
			if !slices.Contains([]string{"m1", "m2", "m3"}, j.ID) {
				t.Errorf("ListBatch(limit 2) answered %s, not of the batch's queued jobs", j.ID)
			}
		}
		if got, err := st.ListBatch(ctx, engine.BatchRef{Queue: q, Gen: gen, Ticket: 9}, 10); err != nil || len(got) != 0 {
			t.Errorf("ListBatch of a ticket with no jobs = %v, %v; want none", jobIDs(got), err)
		}
	})
}

func jobIDs(jobs []job.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	slices.Sort(out)
	return out
}
