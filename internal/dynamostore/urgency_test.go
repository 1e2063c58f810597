package dynamostore_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// metered counts the job writes of a resume run.
type metered struct {
	engine.State
	writes atomic.Int64
}

func (m *metered) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	m.writes.Add(1)
	return m.State.UpdateJob(ctx, j, from)
}

// writeClock is a run's context whose deadline comes closer by per with
// every job write (besides the time that passes): a budget of writes,
// whatever the host's speed. Its Done is its parent's.
type writeClock struct {
	context.Context
	end time.Time
	per time.Duration
	m   *metered
}

func (c writeClock) Deadline() (time.Time, bool) {
	return c.end.Add(-time.Duration(c.m.writes.Load()) * c.per), true
}

// More due entries than a resume run can act on before its deadline, on
// DynamoDB Local: 300 far-parked jobs of two queues, their slots
// interleaved, all due at once, and a run whose minute is used up 250 ms
// a job write (5 waves of 50 at most, whatever the host's speed, before
// it keeps its last seconds in hand); the run makes one call at a time
// (ResumeConcurrency 1), so that its writes use its time one after
// another (internal/engine's TestResumeMostUrgentFirstWithinItsTime cuts
// a run of passes at once). The run reads them all (pages of the index), acts on the most
// urgent first across both queues (what it leaves has later slots than
// all but a wave of what it released) and reports its backlog; the next
// runs release the rest, each at its slot.
func TestResumeMostUrgentFirstOnDynamoDB(t *testing.T) {
	st := newStore(t)
	m := &metered{State: st}
	tr := memstore.NewTransport(memstore.TransportOptions{MaxDelay: time.Minute})
	eng := testenv.NewEngine(t, engine.Options{State: m, Transport: tr, ResumeConcurrency: 1})
	ctx := t.Context()
	prefix := fmt.Sprintf("urgent-%d", time.Now().UnixNano())
	queues := []string{prefix + "-a", prefix + "-b"}
	for _, q := range queues {
		if _, err := eng.CreateQueue(ctx, q, slot.Config{Interval: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 300
	// Far enough that every job parks however long a loaded host takes
	// to enqueue them.
	nb := time.Now().Add(time.Minute + 20*time.Second)
	slotOf := map[job.Ref]time.Time{}
	for first := 0; first < n; first += job.MaxBatch {
		for qi, q := range queues {
			req := job.EnqueueRequest{Queue: q}
			for i := first; i < min(n, first+job.MaxBatch); i += 2 {
				req.Jobs = append(req.Jobs, job.Spec{ID: fmt.Sprintf("j%04d", i+qi), Kind: "k", NotBefore: &nb})
			}
			res, err := eng.Enqueue(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range res.Jobs {
				if a.Status != job.Parked {
					t.Fatalf("job %s %s, want parked: enqueue took too long", a.JobID, a.Status)
				}
				slotOf[job.Ref{Queue: q, ID: a.JobID}] = a.SlotAt
			}
		}
	}
	latest := slices.MaxFunc(slices.Collect(maps.Values(slotOf)), time.Time.Compare)
	// Every entry due (a transport's reach before its slot).
	time.Sleep(time.Until(latest.Add(-time.Minute + 100*time.Millisecond)))

	m.writes.Store(0)
	rep, err := eng.Resume(writeClock{Context: ctx, end: time.Now().Add(time.Minute), per: 250 * time.Millisecond, m: m})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Due < n || rep.Backlog == 0 || rep.Released+rep.Backlog != rep.Due {
		t.Fatalf("first run: %+v; want %d due, some released and the rest its backlog", rep, n)
	}
	t.Logf("first run: %d released, backlog %d, %d job writes", rep.Released, rep.Backlog, m.writes.Load())
	type entry struct {
		ref  job.Ref
		at   time.Time
		sent bool
	}
	var all []entry
	for ref, at := range slotOf {
		j, err := st.GetJob(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, entry{ref, at, j.Status == job.Queued})
	}
	slices.SortFunc(all, func(a, b entry) int { return a.at.Compare(b.at) })
	sent := 0
	for _, e := range all {
		if e.sent {
			sent++
		}
	}
	for i, e := range all[:max(0, sent-50)] {
		if !e.sent {
			t.Fatalf("job %v (slot %d of %d) left for the next run while %d with later slots were released", e.ref, i, n, sent)
		}
	}
	testenv.WaitFor(t, "the rest released", func() bool {
		rep, err := eng.Resume(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Reticketed != 0 {
			t.Fatalf("a later run re-ticketed %d jobs: their slots were missed", rep.Reticketed)
		}
		for ref := range slotOf {
			if j, err := st.GetJob(ctx, ref); err != nil || j.Status != job.Queued {
				return false
			}
		}
		return true
	})
}
