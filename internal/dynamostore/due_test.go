package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/target"
)

// starts records the starts of kind "k" jobs.
type starts struct {
	mu sync.Mutex
	at map[string][]time.Time
	by []string
}

func (s *starts) handle(_ context.Context, j *api.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[j.ID] = append(s.at[j.ID], time.Now())
	s.by = append(s.by, j.ID)
	return nil
}

// runEngine returns an engine on st whose transport delays at most
// maxDelay, with workers that run kind "k" jobs into the returned starts
// until the test ends.
func runEngine(t *testing.T, st engine.State, maxDelay time.Duration, budget int) (*engine.Engine, *starts) {
	t.Helper()
	s := &starts{at: map[string][]time.Time{}}
	mux := target.NewMux()
	mux.HandleFunc("k", s.handle)
	tr := memstore.NewTransport(memstore.TransportOptions{MaxDelay: maxDelay})
	// A lead that covers DynamoDB Local's latency on a loaded host: a
	// worker whose gate write and claim take longer than lead and skew
	// gives its reserved start up.
	eng := testenv.NewEngine(t, engine.Options{State: st, Transport: tr, Runner: &dispatch.Dispatcher{Mux: mux}, ResumeBudget: budget, Lead: 500 * time.Millisecond})
	testenv.RunWorkers(t, tr, 4, eng)
	return eng, s
}

// Scheduled jobs booked in random order, on DynamoDB Local, with the
// transport's reach cut to 2 s: the resume function (every 250 ms) finds
// each in the due index and releases it once, before its not_before, and
// it starts once, not before it, on its first ticket, the starts spaced
// by the interval. How late after its not_before a job starts is
// BenchmarkScheduledStartOnDynamoDB's figure; this test logs it.
func TestResumeScheduledInAnyOrderOnDynamoDB(t *testing.T) {
	st := newStore(t)
	eng, s := runEngine(t, st, 2*time.Second, 0)
	ctx := t.Context()
	q := fmt.Sprintf("sched-%d", time.Now().UnixNano())
	// A skew a loaded host's worker keeps within (the default is 2 ms
	// here): a worker that wakes later than the skew gives its start up
	// for a new ticket.
	const interval, skew = 50 * time.Millisecond, 40 * time.Millisecond
	if _, err := eng.CreateQueue(ctx, q, slot.Config{Interval: interval, Skew: skew}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	r := rand.New(rand.NewPCG(16, 2))
	notBefore := map[string]time.Time{}
	for i := range n {
		// 2 s beyond the transport's reach at the least, so that a job
		// stays parked however long a loaded host takes to enqueue it.
		nb := time.Now().Add(4*time.Second + time.Duration(r.Int64N(int64(5*time.Second)))).Truncate(time.Millisecond)
		res, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: q, Job: &job.Spec{ID: fmt.Sprintf("j%02d", i), Kind: "k", NotBefore: &nb}})
		if err != nil {
			t.Fatal(err)
		}
		if a := res.Jobs[0]; a.Status != job.Parked {
			t.Fatalf("job %s is %s; want parked", a.JobID, a.Status)
		}
		notBefore[res.Jobs[0].JobID] = nb
	}
	// The resume function's schedule, until every job has started; then
	// each job's record, once it has ended. (Reading the records on the
	// schedule would load DynamoDB Local, and slow the workers' gates.)
	resumeUntil(t, eng, 250*time.Millisecond, fmt.Sprintf("%d scheduled jobs to start", n), func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.at) == n
	})
	jobs := map[string]job.Job{}
	for id := range notBefore {
		testenv.WaitFor(t, id+" to end", func() bool {
			j, err := st.GetJob(ctx, job.Ref{Queue: q, ID: id})
			if err != nil {
				t.Fatal(err)
			}
			jobs[id] = j
			return j.Status.Final()
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gates []time.Time
	var latest time.Duration
	for id, nb := range notBefore {
		at, j := s.at[id], jobs[id]
		if len(at) != 1 || at[0].Before(nb) || j.Status != job.Succeeded {
			t.Errorf("job %s (not_before %v) started at %v, %s; want once, not before its not_before, and succeeded", id, nb, at, j.Status)
			continue
		}
		latest = max(latest, at[0].Sub(nb))
		gates = append(gates, j.StartedAt)
		released := 0
		for _, ev := range j.History {
			if ev.Kind == job.Released {
				released++
			}
		}
		if j.Retickets != 0 || released != 1 {
			t.Errorf("job %s: retickets %d, released %d times; want released once on its first ticket", id, j.Retickets, released)
		}
	}
	slices.SortFunc(gates, time.Time.Compare)
	for i := range gates {
		for k := i + 1; k < len(gates); k++ {
			if gap := gates[k].Sub(gates[i]); gap < time.Duration(k-i)*interval-skew {
				t.Errorf("starts %d and %d reserved %v apart; want at least %d·%v − %v", i, k, gap, k-i, interval, skew)
			}
		}
	}
	t.Logf("%d jobs started once each; the latest %v after its not_before", n, latest)
}

// A re-pause in the middle of a release round, on DynamoDB Local: the jobs
// re-ticketed by the round's first pass (budget 2) park again, and the next
// round releases all four in the order they were accepted.
func TestResumeRepauseKeepsOrderOnDynamoDB(t *testing.T) {
	st := newStore(t)
	eng, s := runEngine(t, st, 0, 2)
	ctx := t.Context()
	q := fmt.Sprintf("repause-%d", time.Now().UnixNano())
	// A skew a loaded host's worker stays within: one later than the skew
	// for its start gives its slot up for a new ticket, out of this order.
	if _, err := eng.CreateQueue(ctx, q, slot.Config{Interval: time.Second, Skew: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Pause(ctx, q, time.Time{}); err != nil {
		t.Fatal(err)
	}
	// Not before 3s from now: far enough that the second pause, however
	// slow a loaded DynamoDB Local makes the first pass, comes before a
	// and b are due (a worker then finds them paused and parks them).
	ids := []string{"a", "b", "c", "d"}
	req := job.EnqueueRequest{Queue: q}
	for _, id := range ids {
		req.Jobs = append(req.Jobs, job.Spec{ID: id, Kind: "k", NotBefore: ptr(time.Now().Add(3 * time.Second))})
	}
	if _, err := eng.Enqueue(ctx, req); err != nil {
		t.Fatal(err)
	}
	if rep, err := eng.Unpause(ctx, q); err != nil || rep.Reticketed != 2 {
		t.Fatalf("first pass: %+v, %v; want 2 re-ticketed (the budget)", rep, err)
	}
	if _, err := eng.Pause(ctx, q, time.Time{}); err != nil {
		t.Fatal(err)
	}
	held := func(id string) bool {
		j, err := st.GetJob(ctx, job.Ref{Queue: q, ID: id})
		return err == nil && engine.JobHeld(j)
	}
	testenv.WaitFor(t, "a and b to park again on the second pause", func() bool { return held("a") && held("b") })
	if _, err := eng.Unpause(ctx, q); err != nil {
		t.Fatal(err)
	}
	var got []string
	resumeUntil(t, eng, 200*time.Millisecond, "the four jobs to start", func() bool {
		s.mu.Lock()
		got = slices.Clone(s.by)
		s.mu.Unlock()
		return len(got) >= len(ids)
	})
	if !slices.Equal(got, ids) {
		t.Fatalf("start order %v, want %v: parked order not kept", got, ids)
	}
}

func ptr[T any](v T) *T { return &v }

// resumeUntil runs the resume function every period, as its schedule
// would, until done answers true after a run.
func resumeUntil(t *testing.T, eng *engine.Engine, period time.Duration, what string, done func() bool) {
	t.Helper()
	next := time.Now()
	testenv.WaitFor(t, what, func() bool {
		if time.Now().Before(next) {
			return false
		}
		next = time.Now().Add(period)
		if _, err := eng.Resume(t.Context()); err != nil {
			t.Fatal(err)
		}
		return done()
	})
}

// Records written before the due index carry no entry: Reindex writes
// them again, as they are, and they are found. Simulated on DynamoDB Local
// by taking the entries' attributes off a parked job, a held job and a
// held lane.
func TestReindexOnDynamoDB(t *testing.T) {
	eng, found := legacyRecords(t)
	rep, err := eng.Reindex(t.Context())
	if err != nil || rep.Jobs != 2 || rep.Lanes != 1 {
		t.Fatalf("Reindex: %+v, %v; want 2 jobs and 1 lane", rep, err)
	}
	found.check(t, "after the reindex")
}

// A table from before the due index needs no manual step: the resume
// function finds its schema mark old (here: none, as on a table created
// before marks were kept), rewrites the records as Reindex does, and
// marks it current, after the run's due work; the next run reads the
// mark only (once per engine, then every few minutes).
func TestUpgradeSchemaOnDynamoDB(t *testing.T) {
	eng, found := legacyRecords(t)
	ctx := t.Context()
	if err := found.st.PutSchema(ctx, engine.Schema{}, engine.Schema{Version: engine.SchemaVersion}); err != nil {
		t.Fatal(err) // a table without a mark: from before the due index
	}
	rep, err := eng.Resume(ctx)
	if err != nil || rep.Upgraded == nil || rep.Upgraded.Jobs != 2 || rep.Upgraded.Lanes != 1 {
		t.Fatalf("first resume run: %+v (upgraded %+v), %v; want 2 jobs and 1 lane rewritten", rep, rep.Upgraded, err)
	}
	// The run did what was due first, then rewrote them: they are
	// found, and the next run acts on them (the lane, whose holder's
	// lease had passed, is reaped).
	found.check(t, "after the first resume run")
	if sc, err := found.st.Schema(ctx); err != nil || sc.Pending() || sc.Version != engine.SchemaVersion {
		t.Errorf("schema mark %+v, %v; want version %d", sc, err, engine.SchemaVersion)
	}
	if rep, err := eng.Resume(ctx); err != nil || rep.Upgraded != nil {
		t.Errorf("second resume run: upgraded %+v, %v; want nothing", rep.Upgraded, err)
	}
	due, h := found.read(t)
	if len(due) != 1 || due[0].Kind != engine.DueJob || len(h) != 1 || h[0].ID != "h" {
		t.Fatalf("after the second resume run: %+v due, held %v; want the far job and the held job", due, h)
	}
}

// legacyFound reads what the due index finds of legacyRecords' records.
type legacyFound struct {
	st        *dynamostore.Store
	far, held string
}

// check fails unless the due index finds the far job, the lane and the
// held job.
func (f legacyFound) check(t *testing.T, when string) {
	t.Helper()
	due, h := f.read(t)
	kinds := map[engine.DueKind]int{}
	for _, d := range due {
		kinds[d.Kind]++
	}
	if kinds[engine.DueJob] != 1 || kinds[engine.DueLane] != 1 || len(h) != 1 || h[0].ID != "h" {
		t.Fatalf("%s: %+v due, held %v; want the far job, the lane and the held job", when, due, h)
	}
}

func (f legacyFound) read(t *testing.T) (due []engine.DueEntry, heldJobs []job.Job) {
	t.Helper()
	ctx := t.Context()
	all, err := f.st.ListDue(ctx, time.Now().Add(time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range all {
		if d.Queue == f.far {
			due = append(due, d)
		}
	}
	hq, err := f.st.GetQueue(ctx, f.held)
	if err != nil {
		t.Fatal(err)
	}
	if heldJobs, err = f.st.ListHeld(ctx, f.held, hq.Gen, 10); err != nil {
		t.Fatal(err)
	}
	return due, heldJobs
}

// legacyRecords makes, on DynamoDB Local, records as a table from before
// the due index holds them: a parked far job, a job a pause holds and a
// held lane, with the entries' attributes taken off.
func legacyRecords(t *testing.T) (*engine.Engine, legacyFound) {
	api := newClient(t, nil)
	table := newTable(t, api)
	st := dynamostore.New(api, table, dynamostore.Options{})
	eng := testenv.NewEngine(t, engine.Options{State: st})
	ctx := t.Context()
	far, held := "reindex-far", "reindex-held"
	for _, q := range []string{far, held} {
		if _, err := eng.CreateQueue(ctx, q, slot.Config{Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	nb := time.Now().Add(16 * time.Minute)
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: far, Job: &job.Spec{ID: "f", Kind: "k", NotBefore: &nb}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Pause(ctx, held, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: held, Job: &job.Spec{ID: "h", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	q, err := st.GetQueue(ctx, far)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutLane(ctx, slot.Lane{Queue: far, Key: "k", Gen: q.Gen, Holder: slot.Waiter{Ticket: 9, JobID: "x"}, Until: time.Now(), Last: 10,
		Waiting: []slot.Waiter{{Ticket: 10, JobID: "y"}}}, 0, 2); err != nil {
		t.Fatal(err)
	}
	legacy := func(pk, sk string) {
		t.Helper()
		_, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &table,
			Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk},
			},
			UpdateExpression: aws.String("REMOVE due_pk, due_sk"),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	legacy("J#"+far+"#f", "job")
	legacy("J#"+held+"#h", "job")
	legacy("L#"+far, "K#k")
	found := legacyFound{st: st, far: far, held: held}
	if due, h := found.read(t); len(due) != 0 || len(h) != 0 {
		t.Fatalf("legacy records: %+v due, %d held; want none", due, len(h))
	}
	return eng, found
}

// While DynamoDB builds the due index of an upgraded table, it refuses
// queries on it (a ValidationException, "Cannot read from backfilling
// global secondary index"): ListDue says ErrIndexNotReady, and a resume
// run reads nothing of it and fails nothing. Injected: DynamoDB Local
// builds an index at once.
func TestDueIndexBackfilling(t *testing.T) {
	var backfill atomic.Bool
	api := newClient(t, func(next httpClient) httpClient {
		return doFunc(func(r *http.Request) (*http.Response, error) {
			if backfill.Load() && strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".Query") {
				return awsError(r, http.StatusBadRequest, "ValidationException",
					"Cannot read from backfilling global secondary index: due", ""), nil
			}
			return next.Do(r)
		})
	})
	st := dynamostore.New(api, newTable(t, api), dynamostore.Options{})
	eng := testenv.NewEngine(t, engine.Options{State: st})
	backfill.Store(true)
	if _, err := st.ListDue(t.Context(), time.Now(), 10); !errors.Is(err, engine.ErrIndexNotReady) {
		t.Fatalf("ListDue on a backfilling index: %v, want ErrIndexNotReady", err)
	}
	rep, err := eng.Resume(t.Context())
	if err != nil || !rep.IndexBuilding {
		t.Fatalf("resume run on a backfilling index: %+v, %v; want no error and index_building", rep, err)
	}
}
