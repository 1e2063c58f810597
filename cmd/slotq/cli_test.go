package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/local"
)

var update = flag.Bool("update", false, "rewrite the golden files of the CLI tests")

// runLocalRuntime runs the local runtime in this process on a free port.
func runLocalRuntime(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- local.Run(ctx, local.Options{Addr: "127.0.0.1:0", Out: io.Discard, Logger: slog.New(slog.DiscardHandler),
			Ready: func(e local.Endpoints) { ready <- e.InvokeURL }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case url := <-ready:
		return url
	case err := <-done:
		t.Fatalf("local.Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("local runtime not ready")
	}
	return ""
}

// cli runs slotq with args in this process.
type cli struct {
	t        *testing.T
	endpoint string
}

func (c cli) run(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	var o, e bytes.Buffer
	if c.endpoint != "" {
		args = append(args, "--endpoint", c.endpoint)
	}
	code = run(context.Background(), args, &o, &e)
	return o.String(), e.String(), code
}

// ok runs args and fails the test unless it exits 0.
func (c cli) ok(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("slotq %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// okJSON runs args with --json and decodes the output into v.
func (c cli) okJSON(v any, args ...string) {
	c.t.Helper()
	out := c.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("slotq %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// exitCase is a command line, the exit code it should end with and what
// its stderr should hold.
type exitCase struct {
	name   string
	args   []string
	code   int
	stderr string
}

// exits runs args and checks the exit code and that stderr holds stderr.
func (c cli) exits(args []string, code int, stderr string) {
	c.t.Helper()
	_, errOut, got := c.run(args...)
	if got != code || !strings.Contains(errOut, stderr) {
		c.t.Errorf("slotq %s: exit %d, stderr %q; want exit %d, stderr with %q", strings.Join(args, " "), got, errOut, code, stderr)
	}
}

var (
	timeRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)
	figRE  = regexp.MustCompile(`(?m)^(lag|backlog|last start|start lateness p50 / p99 / max)( +)\S.*$`)
)

// golden compares out, its times masked, with testdata/cli/NAME.golden.
func golden(t *testing.T, name, out string) {
	t.Helper()
	out = timeRE.ReplaceAllString(out, "YYYY-MM-DDThh:mm:ss.mmmZ")
	out = figRE.ReplaceAllString(out, "$1$2<varies>")
	path := filepath.Join("testdata", "cli", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if out != string(want) {
		t.Errorf("slotq output for %s:\n%s\nwant (%s):\n%s", name, out, path, want)
	}
}

// Each command against the local runtime: the table form against a golden
// file, the JSON form parsed.
func TestCommands(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}

	golden(t, "create", c.ok("create", "emails", "--interval", "2s", "--max-attempts", "5", "--backoff", "10s",
		"--targets", "https://hooks.example.com/*,lambda:send-email"))
	golden(t, "pause", c.ok("pause", "emails", "--until", "2099-01-01T00:00:00Z"))
	golden(t, "queues", c.ok("queues"))
	golden(t, "enqueue", c.ok("enqueue", "emails", "--kind", "echo", "--id", "welcome-42", "--payload", `{"to":"ada@example.com"}`))
	golden(t, "enqueue-again", c.ok("enqueue", "emails", "--kind", "echo", "--id", "welcome-42"))
	golden(t, "stats", c.ok("stats", "emails"))
	golden(t, "jobs-list", c.ok("jobs", "list", "emails"))
	golden(t, "jobs-list-failed", c.ok("jobs", "list", "emails", "--status", "failed"))
	golden(t, "jobs-get", c.ok("jobs", "get", "emails", "welcome-42"))
	golden(t, "jobs-cancel", c.ok("jobs", "cancel", "emails", "welcome-42"))
	golden(t, "resume", c.ok("resume", "emails"))
	golden(t, "configure", c.ok("configure", "emails", "--interval", "1s"))
	golden(t, "purge", c.ok("purge", "emails"))

	var qs []engine.Queue
	c.okJSON(&qs, "queues")
	if len(qs) != 1 || qs[0].Name != "emails" || qs[0].Config.Interval != time.Second || qs[0].Config.MaxAttempts != 5 || len(qs[0].Config.Targets) != 2 {
		t.Errorf("queues --json: %+v", qs)
	}
	var acc engine.EnqueueResult
	stdin = strings.NewReader(`{"n": 1}`)
	c.okJSON(&acc, "enqueue", "emails", "--target", "https://hooks.example.com/x", "--payload", "-", "--not-before", "1h")
	if len(acc.Jobs) != 1 || acc.Jobs[0].Ticket != 2 || acc.Jobs[0].JobID == "" {
		t.Errorf("enqueue --json: %+v", acc)
	}
	var j job.Job
	c.okJSON(&j, "jobs", "get", "emails", acc.Jobs[0].JobID)
	if j.Target != "https://hooks.example.com/x" || j.NotBefore.Before(time.Now().Add(50*time.Minute)) || j.Status != job.Parked {
		t.Errorf("jobs get --json: %+v", j)
	}
	var st engine.Stats
	c.okJSON(&st, "stats", "emails")
	if st.Queue != "emails" || st.Parked != 1 || st.Waiting < 1 {
		t.Errorf("stats --json: %+v", st)
	}
	var list struct {
		Jobs []job.Job `json:"jobs"`
	}
	c.okJSON(&list, "jobs", "list", "emails", "--limit", "10")
	if len(list.Jobs) != 1 || list.Jobs[0].ID != acc.Jobs[0].JobID {
		t.Errorf("jobs list --json: %+v", list)
	}
	var state slot.State
	c.okJSON(&state, "pause", "emails", "--for", "1h")
	if !state.Paused || state.PausedUntil.Before(time.Now().Add(59*time.Minute)) {
		t.Errorf("pause --json: %+v", state)
	}
	var rep engine.ResumeReport
	c.okJSON(&rep, "resume", "emails")
	var q engine.Queue
	c.okJSON(&q, "configure", "emails", "--targets", "", "--reset")
	if q.Config.Interval != time.Second || q.Config.Targets != nil || q.Config.MaxAttempts != slot.DefaultMaxAttempts {
		t.Errorf("configure --reset --json: %+v", q.Config)
	}
	golden(t, "delete", c.ok("delete", "emails"))
	c.okJSON(&qs, "queues")
	if len(qs) != 0 {
		t.Errorf("queues after delete: %+v", qs)
	}
}

// Keys and max_running (docs/guarantees.md §12): enqueue --key answers the jobs
// of the key ahead; a job whose key is held, and one that finds every
// running place taken, show why they wait in jobs get, jobs list and
// stats.
func TestLaneCommands(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	golden(t, "create-lanes", c.ok("create", "accounts", "--interval", "100ms", "--max-running", "1"))
	// a holds key acct-1 and the one running place for 5s; b waits for
	// the key, c (no key) for the place. Each is enqueued once the one
	// before it runs or waits: the worker works a batch's jobs of one
	// queue one after another, so b in a's batch would wait for a's end
	// to arrive at all.
	golden(t, "enqueue-key", c.ok("enqueue", "accounts", "--kind", "sleep", "--payload", `{"ms":5000}`, "--key", "acct-1", "--id", "a"))
	waitStatus := func(id string, want job.Status) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%s %s", id, want), 10*time.Second, func() bool {
			var j job.Job
			c.okJSON(&j, "jobs", "get", "accounts", id)
			return j.Status == want
		})
	}
	waitStatus("a", job.Running)
	var acc engine.EnqueueResult
	c.okJSON(&acc, "enqueue", "accounts", "--kind", "echo", "--key", "acct-1", "--id", "b")
	if a := acc.Jobs; len(a) != 1 || a[0].Key != "acct-1" || a[0].KeyAhead == nil || *a[0].KeyAhead != 1 {
		t.Errorf("enqueue --key --json: %+v", acc)
	}
	waitStatus("b", job.Parked)
	c.ok("enqueue", "accounts", "--kind", "echo", "--id", "c")
	waitStatus("c", job.Parked)
	golden(t, "jobs-get-key", c.ok("jobs", "get", "accounts", "b"))
	golden(t, "jobs-get-place", c.ok("jobs", "get", "accounts", "c"))
	golden(t, "jobs-list-lanes", c.ok("jobs", "list", "accounts"))
	golden(t, "stats-lanes", c.ok("stats", "accounts"))
	var st engine.Stats
	c.okJSON(&st, "stats", "accounts")
	if want := (engine.LaneFigures{Running: 1, KeysHeld: 1, KeysWaiting: 1, WaitingOnKeys: 1, WaitingForPlace: 1}); st.Lanes != want {
		t.Errorf("stats --json lanes %+v, want %+v", st.Lanes, want)
	}
	var q engine.Queue
	c.okJSON(&q, "configure", "accounts", "--max-running", "0")
	if q.Config.MaxRunning != 0 || q.Config.Interval != 100*time.Millisecond {
		t.Errorf("configure --max-running 0: %+v", q.Config)
	}
	c.okJSON(&st, "stats", "accounts")
	if st.Lanes.Running != -1 || st.Config.MaxRunning != 0 {
		t.Errorf("stats of an uncapped queue: lanes %+v, max_running %d", st.Lanes, st.Config.MaxRunning)
	}
	c.ok("delete", "accounts")
}

// A dead letter is run again by id, and a queue's failed jobs by pages:
// each runs once more and succeeds; a job that waits is refused
// (not_retryable), and a refused call runs none of the jobs it named.
func TestRetryCommand(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	// Enqueued while paused, then started 100ms apart, so each job's first
	// retry takes its ticket before the next job starts: the tickets below
	// are the same on every run.
	c.ok("create", "flaky", "--interval", "100ms", "--max-attempts", "2", "--backoff", "10ms")
	c.ok("pause", "flaky")
	for i := range 5 {
		c.ok("enqueue", "flaky", "--kind", "fail", "--id", fmt.Sprintf("f%d", i), "--payload", `{"times": 2, "error": "upstream 503"}`)
	}
	c.ok("resume", "flaky")
	status := func(id string) job.Job {
		var j job.Job
		c.okJSON(&j, "jobs", "get", "flaky", id)
		return j
	}
	waitAll := func(want job.Status, ids ...string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			n := 0
			for _, id := range ids {
				if status(id).Status == want {
					n++
				}
			}
			if n == len(ids) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %v %s after 20s", n, ids, want)
			}
		}
	}
	waitAll(job.Failed, "f0", "f1", "f2", "f3", "f4")
	c.ok("pause", "flaky")
	c.ok("enqueue", "flaky", "--kind", "echo", "--id", "waits")
	c.exits([]string{"jobs", "retry", "flaky", "f0", "waits"}, 1, "slotq retry: not_retryable (job_ids[1]): retry flaky/waits: job is parked")
	if j := status("f0"); j.Status != job.Failed || j.Reruns != 0 {
		t.Fatalf("f0 after a refused retry: %s, %d reruns; want failed, none", j.Status, j.Reruns)
	}
	golden(t, "jobs-retry", c.ok("jobs", "retry", "flaky", "f0", "--by", "ops@example.com"))
	first := c.ok("jobs", "retry", "flaky", "--failed", "--limit", "2", "--pages", "1", "--by", "ops@example.com")
	golden(t, "jobs-retry-failed", first)
	more := regexp.MustCompile(`more: --after (\d+) --up-to (\d+)`).FindStringSubmatch(first)
	if more == nil {
		t.Fatalf("retry --failed --pages 1 printed no cursor:\n%s", first)
	}
	var res struct {
		Jobs      []engine.Accepted `json:"jobs"`
		NextAfter int64             `json:"next_after"`
		Pages     int               `json:"pages"`
	}
	c.okJSON(&res, "jobs", "retry", "flaky", "--failed", "--limit", "2", "--after", more[1], "--up-to", more[2], "--by", "ops@example.com")
	if len(res.Jobs) != 2 || res.Pages != 2 || res.NextAfter != 0 || res.Jobs[0].JobID != "f3" || res.Jobs[1].JobID != "f4" {
		t.Errorf("retry --failed from the first page's cursor: %+v; want f3 and f4 in 2 pages (the second empty)", res)
	}
	c.ok("resume", "flaky")
	waitAll(job.Succeeded, "f0", "f1", "f2", "f3", "f4", "waits")
	late := regexp.MustCompile(`(?m)^(late +)\S+|-?\d+ms late`)
	// The rerun's last ticket depends on the tickets other jobs took
	// meanwhile (a worker late for its slot gives it up for a new one).
	last := regexp.MustCompile(`(?m)^(ticket +)\d+$|(→ )\d+$`)
	golden(t, "jobs-get-rerun", last.ReplaceAllString(late.ReplaceAllString(c.ok("jobs", "get", "flaky", "f0"), "$1<varies>"), "${1}${2}N"))
	// Nothing reached the dead-letter queue: the workers recorded every
	// outcome.
	golden(t, "redrive", c.ok("redrive"))
	c.exits([]string{"redrive", "--limit", "1001"}, 1, "slotq redrive: invalid_limit (limit)")
}

// enqueue --wait and jobs get --wait through the local runtime: the
// job's record and result are printed, and the exit code says how the
// job ended: 0 succeeded, 3 failed or cancelled, 4 the wait timed out.
func TestWaitCommands(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.ok("create", "reports", "--interval", "50ms", "--max-attempts", "2", "--backoff", "10ms")
	late := regexp.MustCompile(`(?m)^(late +)\S+|-?\d+ms late`)
	out := c.ok("enqueue", "reports", "--kind", "echo", "--id", "r1", "--payload", `{"rows": 3}`, "--wait")
	golden(t, "enqueue-wait", late.ReplaceAllString(out, "$1<varies>"))
	var j job.Job
	c.okJSON(&j, "enqueue", "reports", "--kind", "echo", "--id", "r2", "--payload", `[1,2]`, "--wait")
	var r []int
	if j.Status != job.Succeeded || json.Unmarshal(j.Result, &r) != nil || !slices.Equal(r, []int{1, 2}) {
		t.Errorf("enqueue --wait --json: %s with result %s", j.Status, j.Result)
	}
	if out := c.ok("jobs", "get", "reports", "r1"); !strings.Contains(out, "result") || !strings.Contains(out, `{"rows":3}`) {
		t.Errorf("jobs get of a finished job shows no result:\n%s", out)
	}

	stdout, stderr, code := c.run("enqueue", "reports", "--kind", "fail", "--id", "f1", "--payload", `{"error":"upstream 503"}`, "--wait")
	if code != 3 || !strings.Contains(stderr, "slotq enqueue: job reports/f1 failed after attempt 2: fail: attempt 2: upstream 503") ||
		!strings.Contains(stdout, "status") || !strings.Contains(stdout, "failed") {
		t.Errorf("enqueue --wait of a failing job: exit %d\n%s%s", code, stdout, stderr)
	}

	c.ok("pause", "reports")
	stdout, stderr, code = c.run("enqueue", "reports", "--kind", "echo", "--id", "held", "--wait", "--timeout", "300ms")
	if code != 4 || !strings.Contains(stderr, "job held is still parked after 300ms; wait again with: slotq jobs get reports held --wait") ||
		!strings.Contains(stdout, "parked") {
		t.Errorf("enqueue --wait on a paused queue: exit %d\n%s%s", code, stdout, stderr)
	}
	_, _, code = c.run("jobs", "get", "reports", "held", "--wait", "--timeout", "200ms")
	if code != 4 {
		t.Errorf("jobs get --wait on a paused queue: exit %d, want 4", code)
	}
	c.ok("resume", "reports")
	c.ok("jobs", "get", "reports", "held", "--wait", "--timeout", "10s")

	c.ok("pause", "reports")
	c.ok("enqueue", "reports", "--kind", "echo", "--id", "dropped")
	c.ok("jobs", "cancel", "reports", "dropped")
	if _, stderr, code := c.run("jobs", "get", "reports", "dropped", "--wait"); code != 3 || !strings.Contains(stderr, "was cancelled") {
		t.Errorf("jobs get --wait of a cancelled job: exit %d, %s", code, stderr)
	}
	c.exits([]string{"jobs", "get", "reports", "held", "--timeout", "1s"}, 2, "--timeout goes with --wait")
	c.exits([]string{"enqueue", "reports", "--kind", "echo", "--wait", "--timeout", "0s"}, 2, "--timeout must be greater than 0")
	c.exits([]string{"jobs", "get", "reports", "nope", "--wait"}, 1, "job_not_found (job_id)")
}

// Refusals print their code and field on stderr and exit 1; bad command
// lines exit 2; --help exits 0 and lists flags with defaults.
func TestExitCodes(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	var before engine.Queue
	c.okJSON(&before, "create", "emails")
	tests := []exitCase{
		{"queue not found", []string{"stats", "nope"}, 1, "slotq stats: queue_not_found (queue): queue nope not found\n"},
		{"job not found", []string{"jobs", "get", "emails", "nope"}, 1, "slotq get: job_not_found (job_id): job nope not found in queue emails\n"},
		{"bad input", []string{"create", "bad", "--interval", "-1s"}, 1, "slotq create: invalid_interval (config.interval): interval must be at least 1ms\n"},
		// A setting given as zero is refused with the admin function's
		// own error, not read as "the default"; a flag left out is.
		{"create interval 0s", []string{"create", "zero", "--interval", "0s"}, 1, "slotq create: invalid_interval (config.interval): interval must be at least 1ms; leave it out for the default\n"},
		{"configure interval 0s", []string{"configure", "emails", "--interval", "0s"}, 1, "slotq configure: invalid_interval (config.interval)"},
		{"configure max-attempts 0", []string{"configure", "emails", "--max-attempts", "0"}, 1, "slotq configure: invalid_max_attempts (config.max_attempts)"},
		{"configure backoff 0s", []string{"configure", "emails", "--backoff", "0s"}, 1, "slotq configure: invalid_backoff (config.backoff)"},
		{"configure max-backoff 0s", []string{"configure", "emails", "--max-backoff", "0ms"}, 1, "slotq configure: invalid_backoff (config.max_backoff)"},
		{"configure skew 0s", []string{"configure", "emails", "--skew", "0s"}, 1, "slotq configure: invalid_skew (config.skew)"},
		{"configure retention 0s", []string{"configure", "emails", "--retention", "0s"}, 1, "slotq configure: invalid_retention (config.retention)"},
		{"create target-timeout 0s", []string{"create", "zero", "--target-timeout", "0s"}, 1, "slotq create: invalid_target_timeout (config.target_timeout)"},
		{"zero as json", []string{"configure", "emails", "--interval", "0s", "--json"}, 1, `{"error":{"code":"invalid_interval","field":"config.interval","message":`},
		{"enqueue interval 0s", []string{"enqueue", "zero", "--kind", "echo", "--interval", "0s"}, 1, "slotq enqueue: invalid_interval (interval)"},
		{"interval below the floor", []string{"create", "zero", "--interval", "999us"}, 1, "slotq create: invalid_interval (config.interval): interval must be at least 1ms: each start writes"},
		{"interval repeats a unit", []string{"configure", "emails", "--interval", "1h1h"}, 2, `"1h1h" gives the unit h twice`},
		{"interval without unit", []string{"create", "zero", "--interval", "5"}, 2, `"5" is not a duration`},
		{"enqueue interval repeats a unit", []string{"enqueue", "zero", "--kind", "echo", "--interval", "1s1s"}, 2, "gives the unit s twice"},
		{"not-before repeats a unit", []string{"enqueue", "emails", "--kind", "echo", "--not-before", "1m1m"}, 2, "--not-before"},
		{"pause for 0s", []string{"pause", "emails", "--for", "0s"}, 2, "--for must be greater than 0"},
		{"not allowed", []string{"enqueue", "emails", "--target", "https://example.org/"}, 1, "target_not_allowed (job.target)"},
		{"status not listed", []string{"jobs", "list", "emails", "--status", "running"}, 1, "status_not_listed (status)"},
		{"json error", []string{"stats", "nope", "--json"}, 1, `{"error":{"code":"queue_not_found","field":"queue","message":"queue nope not found"}}` + "\n"},
		{"no queue", []string{"stats"}, 2, "want arguments QUEUE, got 0"},
		{"extra argument", []string{"resume", "a", "b"}, 2, "want arguments QUEUE, got 2"},
		{"bad flag", []string{"queues", "--nope"}, 2, "flag provided but not defined: -nope"},
		{"bad duration", []string{"pause", "emails", "--for", "soon"}, 2, "invalid value"},
		{"until and for", []string{"pause", "emails", "--for", "1m", "--until", "2099-01-01T00:00:00Z"}, 2, "give --until or --for, not both"},
		{"bad until", []string{"pause", "emails", "--until", "tomorrow"}, 2, "want an RFC 3339 time"},
		{"bad payload", []string{"enqueue", "emails", "--kind", "echo", "--payload", "{"}, 2, "--payload is not JSON"},
		{"bad not-before", []string{"enqueue", "emails", "--kind", "echo", "--not-before", "later"}, 2, "--not-before"},
		{"bad key", []string{"enqueue", "emails", "--kind", "echo", "--key", "a b"}, 1, "invalid_key (job.key)"},
		{"bad max-running", []string{"create", "capped", "--max-running", "-1"}, 1, "invalid_max_running (config.max_running)"},
		{"max-running not a number", []string{"configure", "emails", "--max-running", "some"}, 2, "invalid value"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"unknown jobs command", []string{"jobs", "frob"}, 2, `unknown command "frob"`},
		{"retry nothing", []string{"jobs", "retry", "emails"}, 2, "name the jobs to run again, or give --failed"},
		{"retry ids and failed", []string{"jobs", "retry", "emails", "a", "--failed"}, 2, "give job ids or --failed, not both"},
		{"retry a missing job", []string{"jobs", "retry", "emails", "nope"}, 1, "slotq retry: job_not_found (job_ids[0]): job nope not found in queue emails\n"},
		{"retry a bad page", []string{"jobs", "retry", "emails", "--failed", "--limit", "501"}, 1, "invalid_limit (limit)"},
		{"timeline without source", []string{"timeline", "emails"}, 2, "the stack keeps no list of recent starts"},
		{"endpoint and stack", []string{"queues", "--stack", "x"}, 2, "give --endpoint or --stack, not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { c.exits(tt.args, tt.code, tt.stderr) })
	}
	// The refusals wrote nothing: emails keeps its settings and is not
	// paused, and no queue "zero" was created.
	var qs []engine.Queue
	c.okJSON(&qs, "queues")
	if len(qs) != 1 || qs[0].Name != "emails" || !reflect.DeepEqual(qs[0].Config, before.Config) || qs[0].State.Paused {
		t.Errorf("queues after the refusals: %+v; want emails alone, as before: %+v", qs, before)
	}
	t.Run("function error", func(t *testing.T) {
		_, errOut, code := cli{t: t, endpoint: c.endpoint}.run("queues", "--admin-function", "NoSuchFunction")
		if code != 1 || !strings.Contains(errOut, "ResourceNotFoundException") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		_, errOut, code := cli{t: t, endpoint: "http://127.0.0.1:1"}.run("queues")
		if code != 1 || errOut == "" {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

func TestHelp(t *testing.T) {
	c := cli{t: t}
	out, _, code := c.run("--help")
	if code != 0 || !strings.Contains(out, "Exit status: 0 done, 1 the operation failed, 2 bad command line.") {
		t.Errorf("slotq --help: exit %d\n%s", code, out)
	}
	golden(t, "help", out)
	for _, cmd := range commands {
		if cmd.name == "help" {
			continue
		}
		args := strings.Fields(cmd.name)
		if subs := map[string][]string{"jobs": {"list", "get", "cancel", "retry"}, "sam": {"invoke", "start-lambda"}}[cmd.name]; subs != nil {
			for _, sub := range subs {
				checkHelp(t, append(args, sub, "--help"), cmd.name == "jobs")
			}
			out, _, code := c.run(cmd.name, "--help")
			if code != 0 || !strings.Contains(out, subs[0]) {
				t.Errorf("slotq %s --help: exit %d\n%s", cmd.name, code, out)
			}
			continue
		}
		checkHelp(t, append(args, "--help"), !slices.Contains([]string{"local", "invoke", "demo", "bench", "costs", "template"}, cmd.name))
	}
	for cmd, wants := range map[string][]string{
		"sam invoke":       {"-event string", "-template string", `(default "template.yaml")`, "-stack string", "-param value"},
		"sam start-lambda": {"-addr string", `(default "127.0.0.1:3001")`, "-concurrency int", "(default 5)", "-resume-every duration", "-param value"},
		"costs":            {"-runs int", "(default 3)", "-template string", "-v\t"},
		"bench lanes":      {"-keys int", "(default 20)", "-jobs int", "-max-run float", "(default 5)", "-workers int", "(default 64)", "-interval duration", "(default 10ms)", "-max-running int", "-runs int"},
	} {
		out, _, code := c.run(append(strings.Fields(cmd), "--help")...)
		for _, want := range append(wants, "Exit status: 0 done, 1 the operation failed, 2 bad command line.") {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("slotq %s --help: exit %d, lacks %q:\n%s", cmd, code, want, out)
			}
		}
	}
	out, _, _ = c.run("pause", "--help")
	for _, want := range []string{"-until string", "-for duration", "-json", "-endpoint string", "default http://127.0.0.1:3001"} {
		if !strings.Contains(out, want) {
			t.Errorf("slotq pause --help lacks %q:\n%s", want, out)
		}
	}
}

// The commands that run slotq's own tools, not a stack: bad command lines
// exit 2 before anything starts; a run that fails exits 1.
func TestToolCommands(t *testing.T) {
	c := cli{t: t}
	tests := []exitCase{
		{"sam alone", []string{"sam"}, 2, "Usage: slotq sam COMMAND"},
		{"sam unknown command", []string{"sam", "frob"}, 2, `slotq sam: unknown command "frob"`},
		{"sam invoke without function", []string{"sam", "invoke"}, 2, "want arguments FUNCTION, got 0"},
		{"sam invoke two functions", []string{"sam", "invoke", "EnqueueFunction", "AdminFunction"}, 2, "want arguments FUNCTION, got 2"},
		{"sam invoke bad param", []string{"sam", "invoke", "EnqueueFunction", "--param", "DefaultSkew"}, 2, "want Name=value"},
		{"sam invoke missing event", []string{"sam", "invoke", "EnqueueFunction", "--event", "testdata/nope.json"}, 2, "slotq sam invoke: --event: "},
		{"sam invoke bad flag", []string{"sam", "invoke", "--fn", "EnqueueFunction"}, 2, "flag provided but not defined: -fn"},
		{"sam invoke missing template", []string{"sam", "invoke", "EnqueueFunction", "--template", "testdata/nope.yaml"}, 1, "slotq sam invoke: "},
		{"sam start-lambda argument", []string{"sam", "start-lambda", "EnqueueFunction"}, 2, `slotq sam start-lambda: unexpected argument "EnqueueFunction"`},
		{"sam start-lambda no concurrency", []string{"sam", "start-lambda", "--concurrency", "0"}, 2, "--concurrency must be at least 1"},
		{"sam start-lambda bad duration", []string{"sam", "start-lambda", "--resume-every", "often"}, 2, "invalid value"},
		{"costs argument", []string{"costs", "now"}, 2, `slotq costs: unexpected argument "now"`},
		{"costs no runs", []string{"costs", "--runs", "0"}, 2, "--runs must be at least 1"},
		{"bench lanes argument", []string{"bench", "lanes", "now"}, 2, `slotq bench lanes: unexpected argument "now"`},
		{"bench lanes no runs", []string{"bench", "lanes", "--runs", "0"}, 2, "--runs must be at least 1"},
		{"bench lanes bad runs", []string{"bench", "lanes", "--min-run", "3", "--max-run", "2"}, 2, "--min-run must be at least 0 and at most --max-run"},
		{"bench lanes max-running", []string{"bench", "lanes", "--max-running", "101"}, 2, "--max-running must be between 0 (no cap) and 100"},
		{"bench lanes bad flag", []string{"bench", "lanes", "--producers", "3"}, 2, "flag provided but not defined: -producers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { c.exits(tt.args, tt.code, tt.stderr) })
	}
}

func checkHelp(t *testing.T, args []string, stackCmd bool) {
	t.Helper()
	var o, e bytes.Buffer
	code := run(context.Background(), args, &o, &e)
	help := o.String() + e.String()
	if code != 0 || !strings.Contains(help, "Usage: slotq "+args[0]) {
		t.Errorf("slotq %s: exit %d\n%s", strings.Join(args, " "), code, help)
	}
	if stackCmd && (!strings.Contains(o.String(), "-json") || !strings.Contains(o.String(), "-stack string")) {
		t.Errorf("slotq %s lists no shared flags:\n%s", strings.Join(args, " "), o.String())
	}
}

// stubStacks answers DescribeStacks with one stack's outputs.
type stubStacks struct {
	name    string
	outputs map[string]string
}

func (s stubStacks) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	if aws.ToString(in.StackName) != s.name {
		return nil, &cftypes.InvalidOperationException{Message: aws.String("Stack with id " + aws.ToString(in.StackName) + " does not exist")}
	}
	var outs []cftypes.Output
	for k, v := range s.outputs {
		outs = append(outs, cftypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cftypes.Stack{{StackName: in.StackName, Outputs: outs}}}, nil
}

// --stack reads the function names from the stack's outputs. AWS's Lambda
// endpoint is the local runtime here (AWS_ENDPOINT_URL_LAMBDA), which
// takes function ARNs as Lambda does.
func TestStack(t *testing.T) {
	url := runLocalRuntime(t)
	arn := "arn:aws:lambda:us-east-1:123456789012:function:"
	old := newCloudFormation
	t.Cleanup(func() { newCloudFormation = old })
	newCloudFormation = func(aws.Config) describeStacksAPI {
		return stubStacks{"slotq-prod", map[string]string{
			"EnqueueFunctionName": arn + "EnqueueFunction", "AdminFunctionName": arn + "AdminFunction", "TableName": "slotq-prod-Table"}}
	}
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", url)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	c := cli{t: t}
	c.ok("enqueue", "emails", "--kind", "echo", "--stack", "slotq-prod")
	var qs []engine.Queue
	c.okJSON(&qs, "queues", "--stack", "slotq-prod")
	if len(qs) != 1 || qs[0].Name != "emails" {
		t.Errorf("queues: %+v", qs)
	}
	_, errOut, code := c.run("queues", "--stack", "other")
	if code != 1 || !strings.Contains(errOut, "stack other") {
		t.Errorf("unknown stack: exit %d, %q", code, errOut)
	}
	// SLOTQ_STACK does what --stack does.
	t.Setenv("SLOTQ_STACK", "slotq-prod")
	c.okJSON(&qs, "queues")
	if len(qs) != 1 {
		t.Errorf("queues with SLOTQ_STACK: %+v", qs)
	}
}

func TestStackOutputsRefusesOtherStacks(t *testing.T) {
	_, err := stackOutputs(context.Background(), stubStacks{"web", map[string]string{"Url": "https://example.com"}}, "web")
	if err == nil || !strings.Contains(err.Error(), "is it a slotq stack?") {
		t.Errorf("got %v", err)
	}
}
