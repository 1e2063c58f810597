package dynamostore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/dynamostore"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// oldView is the table as 436bcf3 reads it: every item of a kind it
// reads, decoded by its readers.
type oldView struct {
	configs map[string]oldConfig // by queue
	jobs    map[string]oldJob    // by queue/id
	due     map[string]bool      // jobs (queue/id) its resume function finds due
	lanes   map[string][]string  // by queue/key: the ids it holds and keeps waiting
	refused map[string]error     // what it refuses, by item ("pk sk")
}

// readAsOld scans table and reads each item as 436bcf3 would.
func readAsOld(t *testing.T, api *dynamodb.Client, table string) oldView {
	t.Helper()
	v := oldView{configs: map[string]oldConfig{}, jobs: map[string]oldJob{}, due: map[string]bool{}, lanes: map[string][]string{},
		refused: map[string]error{}}
	p := dynamodb.NewScanPaginator(api, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Items {
			it := oldItem{m: m}
			pk, sk := it.str("pk"), it.str("sk")
			if err := v.read(pk, sk, m); err != nil {
				v.refused[pk+" "+sk] = err
			}
		}
	}
	return v
}

func (v *oldView) read(pk, sk string, m map[string]types.AttributeValue) error {
	it := oldItem{m: m}
	if duePK := it.str("due_pk"); duePK != "" && duePK != oldDueShard(pk, sk) && !strings.HasPrefix(duePK, "H#") {
		return fmt.Errorf("due in partition %s, which 436bcf3 never queries", duePK)
	}
	switch {
	case strings.HasPrefix(pk, "Q#") && sk == "config":
		raw := it.str("config")
		if _, err := decodeOldConfig("6bc214b^", raw); err != nil {
			return fmt.Errorf("6bc214b^: decode queue config: %w", err)
		}
		c, err := decodeOldConfig("436bcf3", raw)
		if err == nil {
			err = c.oldRuns()
		}
		if err != nil {
			return fmt.Errorf("436bcf3: decode queue config: %w", err)
		}
		v.configs[strings.TrimPrefix(pk, "Q#")] = c
	case strings.HasPrefix(pk, "Q#") && sk == "state":
		s, err := decodeOldState(m)
		if err == nil && s.Interval <= 0 {
			err = fmt.Errorf("interval %s: the old gate spaces starts by it", s.Interval)
		}
		return err
	case strings.HasPrefix(pk, "J#") && sk == "job":
		j, err := decodeOldJob(m)
		if err != nil {
			return err
		}
		v.jobs[j.Queue+"/"+j.ID] = j
		v.due[j.Queue+"/"+j.ID] = it.str("due_pk") != ""
	case strings.HasPrefix(pk, "L#") && strings.HasPrefix(sk, "K#"):
		ids, err := decodeOldLane(m)
		if err != nil {
			return err
		}
		v.lanes[strings.TrimPrefix(pk, "L#")+"/"+strings.TrimPrefix(sk, "K#")] = ids
	}
	// Other items (the resume lease, the schema mark, a lane's tail
	// items) 436bcf3 never reads, or reads by no attribute it decodes.
	return nil
}

// stranded lists the jobs 436bcf3 would leave where they are: a waiting
// job it would not run, release or hand its key to.
func (v oldView) stranded(sent *sentLog) []string {
	var out []string
	for ref, j := range v.jobs {
		switch {
		case j.Status != "queued" && j.Status != "parked":
			continue // running (its attempt's own), or over
		case j.Status == "queued" && !sent.carries(j):
			out = append(out, ref+": queued, and no message 436bcf3 runs carries it")
		case j.Status == "parked" && j.ParkReason == "key" && !slices.Contains(v.lanes[j.Queue+"/"+j.Lane], j.ID):
			out = append(out, ref+": waits for its key, which its lane does not list")
		case j.Status == "parked" && j.ParkReason != "key" && j.ParkReason != "max_running" && !v.due[ref]:
			out = append(out, ref+": parked ("+j.ParkReason+") with no entry of the due index")
		}
		if _, ok := v.configs[j.Queue]; !ok {
			out = append(out, ref+": its queue's configuration is refused")
		}
	}
	slices.Sort(out)
	return out
}

// sentLog is a transport that keeps what it is given, as SQS would:
// each envelope's JSON (sqstransport's body).
type sentLog struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (s *sentLog) MaxDelay() time.Duration { return 15 * time.Minute }

func (s *sentLog) Send(_ context.Context, msgs []engine.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		b, err := json.Marshal(m.Envelope)
		if err != nil {
			return err
		}
		s.bodies = append(s.bodies, b)
	}
	return nil
}

// envelope is the last message sent for job id, as this release reads it.
func (s *sentLog) envelope(t *testing.T, id string) job.Envelope {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range slices.Backward(s.bodies) {
		if e, err := job.DecodeEnvelope(b); err == nil && e.JobID == id {
			return e
		}
	}
	t.Fatalf("no message carries %s", id)
	return job.Envelope{}
}

// carries reports whether a message sent decodes under 436bcf3's reader
// and matches j's record as its worker compares them (job.Version): the
// worker runs j instead of dropping the message as stale.
func (s *sentLog) carries(j oldJob) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bodies {
		e, err := decodeOldEnvelope(b)
		if err == nil && e.Queue == j.Queue && e.JobID == j.ID && e.Ticket == j.Ticket && e.Attempt == j.Attempt && e.Gen == j.Gen {
			return true
		}
	}
	return false
}

// holdRunner runs jobs at once, but for those whose id begins with
// "hold", which run until release.
type holdRunner struct {
	started chan string
	release chan struct{}
}

func (r *holdRunner) Run(ctx context.Context, j *job.Job, _ slot.Config) error {
	if strings.HasPrefix(j.ID, "hold") {
		r.started <- j.ID
		select {
		case <-r.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// TestRollbackOldReaders: what this release writes for queues that use
// no newer setting — a queue created by its first enqueue, one created
// and configured with the previous release's settings, their jobs
// (queued, parked far, waiting for a key, running), a key's lane, the
// messages — reads whole under 436bcf3's readers, and every waiting job
// is one that release runs, releases or hands its key to: a rollback
// loses none. Checked while a key's holder runs and after it handed the
// key on.
func TestRollbackOldReaders(t *testing.T) {
	api := newClient(t, nil, fastRetries)
	table := newTable(t, api)
	sent := &sentLog{}
	run := &holdRunner{started: make(chan string, 1), release: make(chan struct{})}
	eng := engine.New(engine.Options{State: dynamostore.New(api, table, dynamostore.Options{}), Transport: sent, Runner: run, Lease: time.Minute, Lead: 500 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	ctx := t.Context()
	far := time.Now().Add(time.Hour)
	plain := []job.Spec{{ID: "p1", Kind: "k"}, {ID: "p2", Kind: "k", Payload: json.RawMessage(`{"n":1}`)}, {ID: "p3", Kind: "k", NotBefore: &far}}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "plain", Jobs: plain}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CreateQueue(ctx, "set", slot.Config{Interval: 300 * time.Millisecond, MaxAttempts: 5, Retention: 2 * time.Hour,
		TargetTimeout: 10 * time.Second, Targets: []string{"https://api.example.com/*"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Configure(ctx, "set", slot.Config{Interval: 200 * time.Millisecond, MaxAttempts: 4, Backoff: 2 * time.Second,
		Retention: 3 * time.Hour, MaxRunning: 3, Targets: []string{"https://api.example.com/*"}}); err != nil {
		t.Fatal(err)
	}
	keyed := []job.Spec{{ID: "hold1", Kind: "k", Key: "k"}, {ID: "s2", Kind: "k", Key: "k"}, {ID: "s3", Kind: "k", Key: "k"}, {ID: "s4", Kind: "k"}}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "set", Jobs: keyed}); err != nil {
		t.Fatal(err)
	}
	// A worker that comes after its slot's room re-tickets its job and
	// sends it again (DynamoDB Local is slow): each job is worked, under
	// its latest message, until it started or waits for its key.
	work := func(id string, settled func(job.Job) bool) error {
		for {
			if err := eng.Work(context.WithoutCancel(ctx), sent.envelope(t, id)); err != nil {
				return err
			}
			j, err := eng.Job(ctx, job.Ref{Queue: "set", ID: id})
			if err != nil || settled(j) {
				return err
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- work("hold1", func(j job.Job) bool { return j.Status.Final() }) }()
	select {
	case <-run.started:
	case err := <-done:
		t.Fatalf("the key's first job ended before it started: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the key's first job did not start")
	}
	for _, id := range []string{"s2", "s3"} {
		if err := work(id, func(j job.Job) bool { return j.Status == job.Parked }); err != nil {
			t.Fatalf("work %s: %v", id, err)
		}
	}
	check := func(when string, waiting int) {
		v := readAsOld(t, api, table)
		for item, err := range v.refused {
			t.Errorf("%s: 436bcf3 refuses %s: %v", when, item, err)
		}
		for _, s := range v.stranded(sent) {
			t.Errorf("%s: %s", when, s)
		}
		if got := len(v.lanes["set/k"]); got != waiting {
			t.Errorf("%s: 436bcf3 reads %d jobs on key k's lane, want %d: %v", when, got, waiting, v.lanes["set/k"])
		}
		if c := v.configs["set"]; c.MaxAttempts != 4 || c.Retention != 3*time.Hour || c.MaxRunning != 3 || c.Interval != 200*time.Millisecond {
			t.Errorf("%s: 436bcf3 reads set's configuration as %+v", when, c)
		}
	}
	check("while the key's holder runs", 3)
	close(run.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	check("after the holder handed the key on", 2)
}

// TestRollbackRefusedByDesign: what a newer feature writes, 436bcf3
// refuses whole rather than read it in part and write it back without
// what it does not know — the list docs/deploy.md's rollback section
// gives: a configuration with a later setting (max_slow_downs,
// retry_after_default, book_ahead, a rate), and a lane with a tail
// (waiters past the inline budget). A lane within it, and the queue's
// state, it reads.
func TestRollbackRefusedByDesign(t *testing.T) {
	db := newClient(t, nil, fastRetries)
	table := newTable(t, db)
	st := dynamostore.New(db, table, dynamostore.Options{})
	eng := engine.New(engine.Options{State: st, Transport: &sentLog{}, Logger: slog.New(slog.DiscardHandler)})
	ctx := t.Context()
	later := map[string]slot.Config{
		"slowdowns":  {MaxSlowDowns: 5},
		"retryafter": {RetryAfterDefault: 5 * time.Second},
		"bookahead":  {BookAhead: 10},
		"keybook":    {KeyBookAhead: 2},
		"rate":       {Rate: api.Rate{N: 100, Per: time.Minute}},
	}
	var want []string
	for name, c := range later {
		if _, err := eng.CreateQueue(ctx, name, c); err != nil {
			t.Fatal(err)
		}
		want = append(want, "Q#"+name+" config")
	}
	q, err := eng.CreateQueue(ctx, "lanes", slot.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for key, n := range map[string]int{"short": 3, "long": 30} {
		l, err := st.GetLane(ctx, "lanes", key)
		if err != nil {
			t.Fatal(err)
		}
		l.Gen, l.Holder = q.Gen, slot.Waiter{Ticket: 1, JobID: "holder"}
		for i := range n {
			l.Waiting = append(l.Waiting, slot.Waiter{Ticket: int64(i + 2), JobID: fmt.Sprintf("job-%036d", i)})
		}
		if _, err := st.PutLane(ctx, l, l.Version, 0); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, "L#lanes K#long")
	v := readAsOld(t, db, table)
	var got []string
	for item, err := range v.refused {
		got = append(got, item)
		t.Logf("436bcf3 refuses %s: %v", item, err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("436bcf3 refuses %q, want %q", got, want)
	}
	if ids := v.lanes["lanes/short"]; len(ids) != 4 {
		t.Errorf("436bcf3 reads the short lane as %q, want its holder and 3 waiters", ids)
	}
}

// TestStoredConfig: a configuration reads back from its stored form
// (slot.Config.Stored) and from the form earlier versions stored (every
// setting with its default) as the same; one that gives no later setting
// is stored with every setting 436bcf3 knows filled in, which its reader
// takes as it runs a queue, and nothing else.
func TestStoredConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   slot.Config
		older bool // 436bcf3 reads it
	}{
		{"defaults", slot.Config{}, true},
		{"first settings", slot.Config{Interval: time.Minute, Skew: time.Second, MaxAttempts: 9, Backoff: time.Minute,
			MaxBackoff: time.Hour, Retention: time.Hour, TargetTimeout: time.Minute, MaxRunning: 4,
			Targets: []string{"lambda:f"}, AllowNetworks: []string{"10.0.0.0/8"}}, true},
		{"later settings at their defaults", slot.Config{MaxSlowDowns: slot.DefaultMaxSlowDowns, RetryAfterDefault: slot.DefaultRetryAfter}, true},
		{"max_slow_downs", slot.Config{MaxSlowDowns: 3}, false},
		{"retry_after_default", slot.Config{RetryAfterDefault: time.Minute}, false},
		{"fair share", slot.Config{BookAhead: 5, KeyBookAhead: 1, KeyMaxRunning: 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg.WithDefaults()
			stored, err := cfg.Stored()
			if err != nil {
				t.Fatal(err)
			}
			current, err := cfg.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			for form, b := range map[string][]byte{"stored": stored, "as stored before": current} {
				got, err := slot.ReadStored(b)
				if err != nil || !reflect.DeepEqual(got, cfg) {
					t.Errorf("%s %s reads as %+v, %v; want %+v", form, b, got, err, cfg)
				}
			}
			old, err := decodeOldConfig("436bcf3", string(stored))
			if err == nil {
				err = old.oldRuns()
			}
			if tc.older != (err == nil) {
				t.Errorf("436bcf3 reads %s: %v", stored, err)
			}
			if tc.older && (old.MaxAttempts != cfg.MaxAttempts || old.Retention != cfg.Retention || old.Skew != cfg.Skew ||
				old.Backoff != cfg.Backoff || old.MaxBackoff != cfg.MaxBackoff || old.TargetTimeout != cfg.TargetTimeout) {
				t.Errorf("436bcf3 reads %s as %+v", stored, old)
			}
		})
	}
}
