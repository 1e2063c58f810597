package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/internal/dev/localtest"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/pkg/local"
)

// invoker calls the local runtime's functions through the Invoke API.
type invoker struct {
	t  *testing.T
	fn *lambda.Client
}

func (c invoker) call(name string, req, res any) {
	c.t.Helper()
	b, _ := json.Marshal(req)
	out, err := c.fn.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(name), Payload: b})
	if err != nil {
		c.t.Fatalf("invoke %s: %v", name, err)
	}
	var e struct {
		Error any `json:"error"`
	}
	if out.FunctionError != nil || json.Unmarshal(out.Payload, &e) != nil || e.Error != nil {
		c.t.Fatalf("invoke %s %s: %s", name, b, out.Payload)
	}
	if err := json.Unmarshal(out.Payload, res); err != nil {
		c.t.Fatalf("invoke %s: %v: %s", name, err, out.Payload)
	}
}

// run is one attempt of a keyed job, from its job record's history.
type run struct {
	id, key    string
	ticket     int64
	begin, end time.Time
}

// §5.12 through the local runtime: 3 keys × 10 jobs, each running three
// intervals (kind sleep), enqueued in one interleaved batch through the
// Invoke API. Every job succeeds; per key no two runs overlap and they
// begin in ticket order; runs of different keys do overlap: a key waits
// for its own jobs, not for the others'.
func TestLanes(t *testing.T) {
	const (
		interval   = 100 * time.Millisecond
		work       = 3 * interval
		keys, jobs = 3, 10
	)
	var view testenv.Buffer
	ends := localtest.Start(t, local.Options{
		Out: &view, JSON: true,
		// The schedule often, so that the view shows the lanes' figures.
		Stack: local.Stack{ResumeEvery: 500 * time.Millisecond},
	})
	c := invoker{t, lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(ends.InvokeURL), Credentials: aws.AnonymousCredentials{}})}

	var created any
	c.call(local.AdminFunction, map[string]any{"op": "create", "queue": "lanes", "config": map[string]any{"interval": interval.String()}}, &created)
	var specs []map[string]any
	for n := range jobs {
		for k := range keys {
			specs = append(specs, map[string]any{"id": fmt.Sprintf("k%d-%d", k, n), "kind": "sleep", "key": fmt.Sprintf("k%d", k),
				"payload": map[string]int64{"ms": work.Milliseconds()}})
		}
	}
	var acc struct {
		Jobs []struct {
			JobID    string `json:"job_id"`
			Key      string `json:"key"`
			KeyAhead *int64 `json:"key_ahead"`
		} `json:"jobs"`
	}
	c.call(local.EnqueueFunction, map[string]any{"queue": "lanes", "jobs": specs}, &acc)
	for i, a := range acc.Jobs {
		if a.Key != fmt.Sprintf("k%d", i%keys) || a.KeyAhead == nil || *a.KeyAhead != int64(i/keys) {
			t.Errorf("job %s answered key %q, key_ahead %v; want k%d, %d", a.JobID, a.Key, a.KeyAhead, i%keys, i/keys)
		}
	}

	// Each key's jobs one after another: about jobs·work with the
	// hand-offs, ideally; more where a late job is passed and re-ticketed
	// to the end of the line. Wait for all, at most five times as long.
	get := func(id string) job.Job {
		var res struct {
			Job job.Job `json:"job"`
		}
		c.call(local.AdminFunction, map[string]any{"op": "get", "queue": "lanes", "job_id": id}, &res)
		return res.Job
	}
	var recs []job.Job
	deadline := time.Now().Add(5 * jobs * work)
	for {
		recs = recs[:0]
		final := 0
		for _, s := range specs {
			j := get(s["id"].(string))
			recs = append(recs, j)
			if j.Status.Final() {
				final++
			}
		}
		if final == len(specs) {
			break
		}
		if time.Now().After(deadline) {
			for _, j := range recs {
				if !j.Status.Final() {
					t.Logf("%s ticket %d %s %s: %+v", j.ID, j.Ticket, j.Status, j.ParkReason, j.History)
				}
			}
			t.Fatalf("%d of %d jobs final after %v", final, len(specs), 5*jobs*work)
		}
		time.Sleep(200 * time.Millisecond)
	}

	var runs []run
	for _, j := range recs {
		if j.Status != job.Succeeded {
			t.Errorf("%s: %s (%s)", j.ID, j.Status, j.LastError)
			continue
		}
		r := run{id: j.ID, key: j.Key, ticket: j.Ticket}
		for _, ev := range j.History {
			switch ev.Kind {
			case job.Started:
				r.begin = ev.At
			case job.SucceededEvent:
				r.end = ev.At
			}
		}
		if r.begin.IsZero() || r.end.Before(r.begin.Add(work)) {
			t.Errorf("%s: history %+v has no run of %v", j.ID, j.History, work)
		}
		runs = append(runs, r)
	}
	slices.SortFunc(runs, func(a, b run) int { return a.begin.Compare(b.begin) })
	byKey := map[string][]run{}
	for _, r := range runs {
		byKey[r.key] = append(byKey[r.key], r)
	}
	for key, rs := range byKey {
		for i := 1; i < len(rs); i++ {
			prev, r := rs[i-1], rs[i]
			if r.begin.Before(prev.end) {
				t.Errorf("key %s: %s began %v before %s ended", key, r.id, prev.end.Sub(r.begin), prev.id)
			}
			if r.ticket <= prev.ticket {
				t.Errorf("key %s: %s (ticket %d) began after %s (ticket %d)", key, r.id, r.ticket, prev.id, prev.ticket)
			}
		}
	}
	// Keys interleave: runs of different keys overlap. (The worker works
	// the jobs of one queue in an SQS batch one after another, so within
	// a batch they cannot; across the event source's concurrent batches
	// they do.)
	overlaps, inversions, retickets := 0, 0, 0
	for i, r := range runs {
		for _, o := range runs[i+1:] {
			if o.key != r.key && o.begin.Before(r.end) {
				overlaps++
			}
		}
	}
	if overlaps == 0 {
		t.Errorf("no two runs of different keys overlapped: the keys ran one after another")
	}
	// Accepted later, ran earlier: a passed job takes a new ticket, and
	// its key's later jobs may run before it (reported, not a failure:
	// the order is the tickets', §5.8).
	accepted := map[string]int{}
	for i, s := range specs {
		accepted[s["id"].(string)] = i
	}
	for _, rs := range byKey {
		for i := 1; i < len(rs); i++ {
			if accepted[rs[i].id] < accepted[rs[i-1].id] {
				inversions++
			}
		}
	}
	for _, j := range recs {
		retickets += j.Retickets
	}
	// The live view showed the lanes, from the resume function's figures.
	shown := false
	for _, l := range strings.Split(view.String(), "\n") {
		var ev struct {
			Event    string  `json:"event"`
			Queue    string  `json:"queue"`
			KeysHeld float64 `json:"keys_held"`
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Event == "figures" && ev.Queue == "lanes" && ev.KeysHeld > 0 {
			shown = true
		}
	}
	if !shown {
		t.Errorf("the live view showed no figures line with keys held")
	}
	first, last := runs[0].begin, runs[len(runs)-1].end
	t.Logf("%d runs in %v (a key's work: %v); %d overlaps of runs of different keys; %d re-tickets; %d runs before a job of their key accepted earlier",
		len(runs), last.Sub(first).Round(time.Millisecond), jobs*work, overlaps, retickets, inversions)
	if t.Failed() {
		for _, j := range recs {
			t.Logf("%s ticket %d slot %v: %+v", j.ID, j.Ticket, j.SlotAt.Sub(first).Round(time.Millisecond), j.History)
		}
		t.Logf("view:\n%s", view.String())
	}
}
