package dynamostore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// killing is a State whose run is killed (its context cancelled, as
// Lambda ends an invocation at its timeout) once it has written left
// jobs.
type killing struct {
	engine.State
	left   atomic.Int64
	cancel context.CancelFunc
}

func (k *killing) UpdateJob(ctx context.Context, j job.Job, from job.Version) error {
	if k.left.Add(-1) < 0 {
		k.cancel()
		return ctx.Err()
	}
	return k.State.UpdateJob(ctx, j, from)
}

// A table from before the due index, on DynamoDB Local: 450 held jobs of
// a paused queue written without their entries, and a resume function
// killed in every run after 150 job writes (fewer than the rebuild
// needs). Each run still does another queue's due work first (its timed
// pause ends, the jobs it held are released), and the rebuild goes on
// from the cursor the last killed run left in the schema mark, until it
// is over and every held job is found by the index.
func TestRebuildKilledEachRunOnDynamoDB(t *testing.T) {
	api := newClient(t, nil)
	table := newTable(t, api)
	st := dynamostore.New(api, table, dynamostore.Options{})
	setup := testenv.NewEngine(t, engine.Options{State: st})
	ctx := t.Context()
	const big, other, n = "rebuild-big", "rebuild-other", 450
	for _, q := range []string{big, other} {
		if _, err := setup.CreateQueue(ctx, q, slot.Config{Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
		if _, err := setup.Pause(ctx, q, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue := func(q string, n int) {
		for first := 0; first < n; first += job.MaxBatch {
			req := job.EnqueueRequest{Queue: q}
			for i := first; i < min(n, first+job.MaxBatch); i++ {
				req.Jobs = append(req.Jobs, job.Spec{ID: fmt.Sprintf("j%04d", i), Kind: "k"})
			}
			if _, err := setup.Enqueue(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	enqueue(big, n)
	enqueue(other, 5)
	for i := range n {
		_, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &table,
			Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("J#%s#j%04d", big, i)}, "sk": &types.AttributeValueMemberS{Value: "job"},
			},
			UpdateExpression: aws.String("REMOVE due_pk, due_sk"),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	held := func() int {
		q, err := st.GetQueue(ctx, big)
		if err != nil {
			t.Fatal(err)
		}
		h, err := st.ListHeld(ctx, big, q.Gen, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(h)
	}
	if got := held(); got != 0 {
		t.Fatalf("%d legacy jobs found held; want none", got)
	}
	if err := st.PutSchema(ctx, engine.Schema{}, engine.Schema{Version: engine.SchemaVersion}); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(300 * time.Millisecond)
	if _, err := setup.Pause(ctx, other, until); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(until))

	k := &killing{State: st}
	eng := testenv.NewEngine(t, engine.Options{State: k})
	var jobs []int64
	for run := 1; ; run++ {
		if run > 8 {
			t.Fatalf("rebuild not over after %d killed runs: %v jobs rewritten after each", run-1, jobs)
		}
		rctx, cancel := context.WithCancel(ctx)
		k.left.Store(150)
		k.cancel = cancel
		rep, err := eng.Resume(rctx)
		killed := rctx.Err() != nil
		cancel()
		if !killed && err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if run == 1 {
			if rep.Lifted != 1 || countHeld(t, st, other) != 0 {
				t.Fatalf("first run: %+v, %d of %s's jobs held; want its pause lifted and its jobs released", rep, countHeld(t, st, other), other)
			}
		}
		sc, err := st.Schema(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !sc.Pending() {
			t.Logf("rebuilt over %d killed runs: %v jobs rewritten after each", run, append(jobs, sc.Jobs))
			if run < 3 {
				t.Fatalf("over after %d runs: the work was meant to exceed two", run)
			}
			break
		}
		if !killed {
			t.Fatalf("run %d was not killed and left the rebuild at %+v", run, sc)
		}
		if len(jobs) > 0 && sc.Jobs <= jobs[len(jobs)-1] {
			t.Fatalf("run %d: no progress kept through the kill (%v, then %+v)", run, jobs, sc)
		}
		jobs = append(jobs, sc.Jobs)
	}
	if got := held(); got != n {
		t.Fatalf("after the rebuild %d held jobs found; want %d", got, n)
	}
}

// countHeld counts queue's jobs a pause holds, read strongly.
func countHeld(t *testing.T, st engine.State, queue string) int {
	t.Helper()
	q, err := st.GetQueue(t.Context(), queue)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := st.ListJobs(t.Context(), engine.ListRequest{Queue: queue, Gen: q.Gen, Status: job.Parked, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(jobs)
}
