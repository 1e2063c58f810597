package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// More due entries than a resume run can act on before its deadline:
// 3,000 far-parked jobs of two queues, their slots interleaved 200 ms
// apart, all due at once, on a store where every write takes 100 ms and
// the run has 4 places for calls at once. The first run ends before its
// deadline, acts on the most urgent first across both queues (a pass of
// each queue at a time: every job it leaves has a later slot than all but
// a pass per queue of those it released) and says what it left (its
// backlog); the next run releases the rest, and none misses its slot. A timed
// pause that ends meanwhile, read last, is lifted in the first run: the
// jobs it holds wait for it now.
func TestResumeMostUrgentFirstWithinItsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memstore.New(memstore.Options{})
		tr := memstore.NewTransport(memstore.TransportOptions{MaxDelay: 15 * time.Minute})
		setup := testenv.NewEngine(t, engine.Options{State: mem, Transport: tr})
		queues := []string{"a", "b"}
		for _, q := range queues {
			if _, err := setup.CreateQueue(ctx, q, slot.Config{Interval: 10 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
		}
		const n = 3000
		const apart = 200 * time.Millisecond
		t0 := time.Now()
		slotOf := map[string]time.Time{}
		for i := range n {
			q, id := queues[i%2], fmt.Sprintf("j%04d", i)
			nb := t0.Add(20*time.Minute + time.Duration(i)*apart)
			res, err := setup.Enqueue(ctx, job.EnqueueRequest{Queue: q, Job: &job.Spec{ID: id, Kind: "k", NotBefore: &nb}})
			if err != nil {
				t.Fatal(err)
			}
			slotOf[q+"/"+id] = res.Jobs[0].SlotAt
		}
		// A third queue's timed pause ends after every job's entry came
		// due: its entry is read last, but the jobs it holds wait for it
		// now, while the parked jobs' slots are minutes away.
		if _, err := setup.CreateQueue(ctx, "c", slot.Config{Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
		if _, err := setup.Pause(ctx, "c", t0.Add(5*time.Minute+n*apart-time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		enqueueN(t, setup, "c", 3)
		// Every entry due (a transport's reach before its slot); every
		// slot still 8 minutes or more away.
		_ = clock.Sleep(ctx, 5*time.Minute+n*apart)

		eng := testenv.NewEngine(t, engine.Options{State: slowState{State: mem, latency: 100 * time.Millisecond}, Transport: tr, ResumeConcurrency: 4})
		rep, took, err := timedResume(ctx, eng)
		if err != nil {
			t.Fatal(err)
		}
		if took >= time.Minute {
			t.Fatalf("first run took %v, past its deadline", took)
		}
		if rep.Due != n+1 || rep.Lifted != 1 || rep.Backlog == 0 || rep.Released-3+rep.Backlog != n {
			t.Fatalf("first run: %+v; want %d due, c's pause lifted and its 3 jobs released, some of the others and the rest its backlog", rep, n+1)
		}
		rep.Released -= 3
		type entry struct {
			key  string
			at   time.Time
			sent bool
		}
		var all []entry
		for key, at := range slotOf {
			q, id, _ := strings.Cut(key, "/")
			j, err := mem.GetJob(ctx, job.Ref{Queue: q, ID: id})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, entry{key, at, j.Status == job.Queued})
		}
		slices.SortFunc(all, func(a, b entry) int { return a.at.Compare(b.at) })
		sent := 0
		for _, e := range all {
			if e.sent {
				sent++
			}
		}
		if sent != rep.Released {
			t.Fatalf("%d jobs queued, the report says %d released", sent, rep.Released)
		}
		for i, e := range all[:max(0, sent-len(queues)*engine.ResumePass)] {
			if !e.sent {
				t.Fatalf("job %s (slot %d of %d) left for the next run while %d with later slots were released", e.key, i, n, sent)
			}
		}

		t.Logf("first run: %d released, backlog %d, in %v", rep.Released, rep.Backlog, took)
		rep, err = eng.Resume(ctx)
		if err != nil || rep.Backlog != 0 || rep.Reticketed != 0 {
			t.Fatalf("second run: %+v, %v; want the rest released, no backlog, no re-ticket", rep, err)
		}
		for key, at := range slotOf {
			q, id, _ := strings.Cut(key, "/")
			j, err := mem.GetJob(ctx, job.Ref{Queue: q, ID: id})
			if err != nil || j.Status != job.Queued || !j.SlotAt.Equal(at) {
				t.Fatalf("job %s: %v, %v, slot %v; want queued at its slot %v", key, j.Status, err, j.SlotAt, at)
			}
		}
	})
}
