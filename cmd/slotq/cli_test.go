package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/buildinfo"
	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/dev/localtest"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/local"
)

var update = flag.Bool("update", false, "rewrite the golden files of the CLI tests")

// runLocalRuntime runs the local runtime in this process on a free port.
func runLocalRuntime(t *testing.T) string {
	t.Helper()
	return localtest.Start(t, local.Options{}).InvokeURL
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
		args = append(args, "--endpoint-url", c.endpoint)
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

	golden(t, "create", c.ok("queues", "create", "emails", "--interval", "2s", "--max-attempts", "5", "--backoff", "10s",
		"--targets", "https://hooks.example.com/*,lambda:send-email"))
	golden(t, "pause", c.ok("queues", "pause", "emails", "--until", "2099-01-01T00:00:00Z"))
	golden(t, "queues", c.ok("queues", "list"))
	golden(t, "enqueue", c.ok("enqueue", "emails", "--kind", "echo", "--id", "welcome-42", "--payload", `{"to":"ada@example.com"}`))
	golden(t, "enqueue-again", c.ok("enqueue", "emails", "--kind", "echo", "--id", "welcome-42"))
	golden(t, "stats", c.ok("queues", "stats", "emails"))
	golden(t, "jobs-list", c.ok("jobs", "list", "emails"))
	golden(t, "jobs-list-failed", c.ok("jobs", "list", "emails", "--status", "failed"))
	golden(t, "jobs-get", c.ok("jobs", "get", "emails", "welcome-42"))
	golden(t, "jobs-cancel", c.ok("jobs", "cancel", "emails", "welcome-42"))
	golden(t, "resume", c.ok("queues", "resume", "emails"))
	golden(t, "configure", c.ok("queues", "configure", "emails", "--interval", "1s"))
	golden(t, "purge", c.ok("queues", "purge", "emails", "--yes"))

	var qs []engine.Queue
	c.okJSON(&qs, "queues", "list")
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
	c.okJSON(&st, "queues", "stats", "emails")
	// The job, an hour ahead, is scheduled: out of line, parked.
	if st.Queue != "emails" || st.Parked != 1 || st.Waiting != 0 {
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
	c.okJSON(&state, "queues", "pause", "emails", "--for", "1h")
	if !state.Paused || state.PausedUntil.Before(time.Now().Add(59*time.Minute)) {
		t.Errorf("pause --json: %+v", state)
	}
	var rep engine.ResumeReport
	c.okJSON(&rep, "queues", "resume", "emails")
	var q engine.Queue
	c.okJSON(&q, "queues", "configure", "emails", "--targets", "", "--reset")
	if q.Config.Interval != time.Second || q.Config.Targets != nil || q.Config.MaxAttempts != slot.DefaultMaxAttempts {
		t.Errorf("configure --reset --json: %+v", q.Config)
	}
	golden(t, "delete", c.ok("queues", "delete", "emails", "--yes"))
	c.okJSON(&qs, "queues", "list")
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
	// A skew a loaded host's worker keeps within (the stack's 10ms is
	// not): a worker that begins a later than the skew gives its slot up
	// for a new ticket, and b and c take other tickets than the goldens'.
	golden(t, "create-lanes", c.ok("queues", "create", "accounts", "--interval", "100ms", "--skew", "75ms", "--max-running", "1"))
	// a holds key acct-1 and the one running place for 5s; b waits for
	// the key, c (no key) for the place. Each is enqueued once the one
	// before it runs or waits: the worker works a batch's jobs of one
	// queue one after another, so b in a's batch would wait for a's end
	// to arrive at all.
	golden(t, "enqueue-key", c.ok("enqueue", "accounts", "--kind", "sleep", "--payload", `{"ms":5000}`, "--key", "acct-1", "--id", "a"))
	waitStatus := func(id string, want job.Status) {
		t.Helper()
		testenv.WaitFor(t, fmt.Sprintf("%s %s", id, want), func() bool {
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
	golden(t, "stats-lanes", c.ok("queues", "stats", "accounts"))
	var st engine.Stats
	c.okJSON(&st, "queues", "stats", "accounts")
	if want := (engine.LaneFigures{Running: 1, KeysHeld: 1, KeysWaiting: 1, WaitingOnKeys: 1, WaitingForPlace: 1, KeysAtLimit: -1}); st.Lanes != want {
		t.Errorf("stats --json lanes %+v, want %+v", st.Lanes, want)
	}
	var q engine.Queue
	c.okJSON(&q, "queues", "configure", "accounts", "--max-running", "0")
	if q.Config.MaxRunning != 0 || q.Config.Interval != 100*time.Millisecond {
		t.Errorf("configure --max-running 0: %+v", q.Config)
	}
	c.okJSON(&st, "queues", "stats", "accounts")
	if st.Lanes.Running != -1 || st.Config.MaxRunning != 0 {
		t.Errorf("stats of an uncapped queue: lanes %+v, max_running %d", st.Lanes, st.Config.MaxRunning)
	}
	c.ok("queues", "delete", "accounts", "-y")
}

// A dead letter is run again by id, and a queue's failed jobs by pages:
// each runs once more and succeeds; a job that waits is refused
// (not_retryable), and a refused call runs none of the jobs it named.
func TestRetryCommand(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	// Enqueued while paused, then started 300ms apart. The failed jobs'
	// order (their last tickets) is the order their retries and missed
	// slots took tickets in, which a loaded host changes: it is read from
	// the stack below, not assumed.
	c.ok("queues", "create", "flaky", "--interval", "300ms", "--skew", "250ms", "--max-attempts", "2", "--backoff", "10ms")
	c.ok("queues", "pause", "flaky")
	for i := range 5 {
		c.ok("enqueue", "flaky", "--kind", "fail", "--id", fmt.Sprintf("f%d", i), "--payload", `{"times": 2, "error": "upstream 503"}`)
	}
	c.ok("queues", "resume", "flaky")
	status := func(id string) job.Job {
		var j job.Job
		c.okJSON(&j, "jobs", "get", "flaky", id)
		return j
	}
	waitAll := func(want job.Status, ids ...string) {
		t.Helper()
		testenv.WaitFor(t, fmt.Sprintf("%v %s", ids, want), func() bool {
			for _, id := range ids {
				if status(id).Status != want {
					return false
				}
			}
			return true
		})
	}
	waitAll(job.Failed, "f0", "f1", "f2", "f3", "f4")
	c.ok("queues", "pause", "flaky")
	c.ok("enqueue", "flaky", "--kind", "echo", "--id", "waits")
	c.exits([]string{"jobs", "retry", "flaky", "f0", "waits"}, 1, "slotq jobs retry: not_retryable (job_ids[1]): retry flaky/waits: job is parked")
	if j := status("f0"); j.Status != job.Failed || j.Reruns != 0 {
		t.Fatalf("f0 after a refused retry: %s, %d reruns; want failed, none", j.Status, j.Reruns)
	}
	// The failed jobs, in the order retry --failed pages through them:
	// f0 is retried by id first, the others by pages of two.
	var failed struct {
		Jobs []job.Job `json:"jobs"`
	}
	c.okJSON(&failed, "jobs", "list", "flaky", "--status", "failed", "--limit", "10")
	var order []string
	for _, j := range failed.Jobs {
		if j.ID != "f0" {
			order = append(order, j.ID)
		}
	}
	if len(order) != 4 {
		t.Fatalf("failed jobs besides f0: %v; want f1 to f4", order)
	}
	// A rerun's ticket is the queue's next one: what the others took
	// before depends on slots a loaded worker missed (each a new
	// ticket), and which failed jobs a page holds on the order above, so
	// the goldens mask the numbers and the pages' ids, and both are
	// checked here.
	ticketRE := regexp.MustCompile(`(?m)^(f\d)( +)(\d+)`)
	masked := func(out string) string {
		return regexp.MustCompile(`--(after|up-to) \d+`).ReplaceAllString(ticketRE.ReplaceAllString(out, "${1}${2}N"), "--$1 N")
	}
	idRE := regexp.MustCompile(`(?m)^f\d `)
	var tickets []int
	retried := c.ok("jobs", "retry", "flaky", "f0", "--by", "ops@example.com")
	golden(t, "jobs-retry", masked(retried))
	first := c.ok("jobs", "retry", "flaky", "--failed", "--limit", "2", "--pages", "1", "--by", "ops@example.com")
	golden(t, "jobs-retry-failed", idRE.ReplaceAllString(masked(first), "fN "))
	var ids []string
	for _, m := range ticketRE.FindAllStringSubmatch(retried+first, -1) {
		n, _ := strconv.Atoi(m[3])
		tickets = append(tickets, n)
		ids = append(ids, m[1])
	}
	if want := append([]string{"f0"}, order[:2]...); !slices.Equal(ids, want) {
		t.Errorf("the reruns were %v; want %v (f0, then the first page of the failed jobs in their order)", ids, want)
	}
	if len(tickets) != 3 || !slices.IsSorted(tickets) || tickets[0] == tickets[1] || tickets[1] == tickets[2] {
		t.Errorf("the reruns %v took tickets %v; want three new ones in that order", ids, tickets)
	}
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
	if len(res.Jobs) != 2 || res.Pages != 2 || res.NextAfter != 0 || res.Jobs[0].JobID != order[2] || res.Jobs[1].JobID != order[3] {
		t.Errorf("retry --failed from the first page's cursor: %+v; want %v in 2 pages (the second empty)", res, order[2:])
	}
	c.ok("queues", "resume", "flaky")
	waitAll(job.Succeeded, "f0", "f1", "f2", "f3", "f4", "waits")
	// The record's figures are a golden; its history is checked for the
	// rerun's events in order: a loaded worker that misses a slot adds
	// re-tickets, and so other tickets and older events, to it.
	rec := c.ok("jobs", "get", "flaky", "f0")
	head, hist, _ := strings.Cut(rec, "history")
	head = regexp.MustCompile(`(?m)^(late +)\S+$`).ReplaceAllString(head, "$1<varies>")
	head = regexp.MustCompile(`(?m)^((?:ticket|retickets) +)\d+$`).ReplaceAllString(head, "${1}N")
	golden(t, "jobs-get-rerun", head)
	at := 0
	for _, want := range []string{"rerun by ops@example.com: ticket", "attempt 3", "started attempt 3", "succeeded"} {
		i := strings.Index(hist[at:], want)
		if i < 0 {
			t.Fatalf("f0's history lacks %q after the rerun, in order:\n%s", want, hist)
		}
		at += i + len(want)
	}
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
	// A skew a loaded host's worker keeps within (the default, 2ms of a
	// 50ms interval, is not): a worker that wakes later than the skew
	// gives its slot up and the job takes a new ticket, which the golden
	// record of a first-ticket start does not show.
	c.ok("queues", "create", "reports", "--interval", "200ms", "--skew", "150ms", "--max-attempts", "2", "--backoff", "10ms")
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

	c.ok("queues", "pause", "reports")
	stdout, stderr, code = c.run("enqueue", "reports", "--kind", "echo", "--id", "held", "--wait", "--timeout", "300ms")
	if code != 4 || !strings.Contains(stderr, "job held is still parked after 300ms; wait again with: slotq jobs get reports held --wait") ||
		!strings.Contains(stdout, "parked") {
		t.Errorf("enqueue --wait on a paused queue: exit %d\n%s%s", code, stdout, stderr)
	}
	_, _, code = c.run("jobs", "get", "reports", "held", "--wait", "--timeout", "200ms")
	if code != 4 {
		t.Errorf("jobs get --wait on a paused queue: exit %d, want 4", code)
	}
	c.ok("queues", "resume", "reports")
	c.ok("jobs", "get", "reports", "held", "--wait", "--timeout", "10s")

	c.ok("queues", "pause", "reports")
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
	c.okJSON(&before, "queues", "create", "emails")
	tests := []exitCase{
		{"queue not found", []string{"queues", "stats", "nope"}, 1, "slotq queues stats: queue_not_found (queue): queue nope not found\n"},
		{"job not found", []string{"jobs", "get", "emails", "nope"}, 1, "slotq jobs get: job_not_found (job_id): job nope not found in queue emails\n"},
		{"bad input", []string{"queues", "create", "bad", "--interval", "-1s"}, 1, "slotq queues create: invalid_interval (config.interval): interval must be at least 1ms\n"},
		// A setting given as zero is refused with the admin function's
		// own error, not read as "the default"; a flag left out is.
		{"create interval 0s", []string{"queues", "create", "zero", "--interval", "0s"}, 1, "slotq queues create: invalid_interval (config.interval): interval must be at least 1ms; leave it out for the default\n"},
		{"configure interval 0s", []string{"queues", "configure", "emails", "--interval", "0s"}, 1, "slotq queues configure: invalid_interval (config.interval)"},
		{"configure max-attempts 0", []string{"queues", "configure", "emails", "--max-attempts", "0"}, 1, "slotq queues configure: invalid_max_attempts (config.max_attempts)"},
		{"configure backoff 0s", []string{"queues", "configure", "emails", "--backoff", "0s"}, 1, "slotq queues configure: invalid_backoff (config.backoff)"},
		{"configure max-backoff 0s", []string{"queues", "configure", "emails", "--max-backoff", "0ms"}, 1, "slotq queues configure: invalid_backoff (config.max_backoff)"},
		{"configure skew 0s", []string{"queues", "configure", "emails", "--skew", "0s"}, 1, "slotq queues configure: invalid_skew (config.skew)"},
		{"configure retention 0s", []string{"queues", "configure", "emails", "--retention", "0s"}, 1, "slotq queues configure: invalid_retention (config.retention)"},
		{"create target-timeout 0s", []string{"queues", "create", "zero", "--target-timeout", "0s"}, 1, "slotq queues create: invalid_target_timeout (config.target_timeout)"},
		{"create max-slow-downs 0", []string{"queues", "create", "zero", "--max-slow-downs", "0"}, 1, "slotq queues create: invalid_max_slow_downs (config.max_slow_downs)"},
		{"configure retry-after-default 0s", []string{"queues", "configure", "zero", "--retry-after-default", "0s"}, 1, "slotq queues configure: invalid_retry_after_default (config.retry_after_default)"},
		{"zero as json", []string{"queues", "configure", "emails", "--interval", "0s", "--json"}, 1, `{"error":{"code":"invalid_interval","field":"config.interval","message":`},
		{"enqueue interval 0s", []string{"enqueue", "zero", "--kind", "echo", "--interval", "0s"}, 1, "slotq enqueue: invalid_interval (interval)"},
		{"interval below the floor", []string{"queues", "create", "zero", "--interval", "999us"}, 1, "slotq queues create: invalid_interval (config.interval): interval must be at least 1ms: each start writes"},
		{"interval repeats a unit", []string{"queues", "configure", "emails", "--interval", "1h1h"}, 2, `"1h1h" gives the unit h twice`},
		{"interval without unit", []string{"queues", "create", "zero", "--interval", "5"}, 2, `"5" is not a duration`},
		{"enqueue interval repeats a unit", []string{"enqueue", "zero", "--kind", "echo", "--interval", "1s1s"}, 2, "gives the unit s twice"},
		{"not-before repeats a unit", []string{"enqueue", "emails", "--kind", "echo", "--not-before", "1m1m"}, 2, "--not-before"},
		{"pause for 0s", []string{"queues", "pause", "emails", "--for", "0s"}, 2, "--for must be greater than 0"},
		{"not allowed", []string{"enqueue", "emails", "--target", "https://example.org/"}, 1, "target_not_allowed (job.target)"},
		{"status not listed", []string{"jobs", "list", "emails", "--status", "running"}, 1, "status_not_listed (status)"},
		{"json error", []string{"queues", "stats", "nope", "--json"}, 1, `{"error":{"code":"queue_not_found","field":"queue","message":"queue nope not found"}}` + "\n"},
		{"no queue", []string{"queues", "stats"}, 2, "want arguments QUEUE, got 0"},
		{"extra argument", []string{"queues", "resume", "a", "b"}, 2, "want arguments QUEUE, got 2"},
		{"bad flag", []string{"queues", "list", "--nope"}, 2, "slotq queues list: unknown flag: --nope\nRun 'slotq queues list --help' for usage.\n"},
		{"bad duration", []string{"queues", "pause", "emails", "--for", "soon"}, 2, `invalid argument "soon" for "--for" flag`},
		{"until and for", []string{"queues", "pause", "emails", "--for", "1m", "--until", "2099-01-01T00:00:00Z"}, 2, "give --until or --for, not both"},
		{"bad until", []string{"queues", "pause", "emails", "--until", "tomorrow"}, 2, "want an RFC 3339 time"},
		{"bad payload", []string{"enqueue", "emails", "--kind", "echo", "--payload", "{"}, 2, "--payload is not JSON"},
		{"bad not-before", []string{"enqueue", "emails", "--kind", "echo", "--not-before", "later"}, 2, "--not-before"},
		{"bad key", []string{"enqueue", "emails", "--kind", "echo", "--key", "a b"}, 1, "invalid_key (job.key)"},
		{"bad max-running", []string{"queues", "create", "capped", "--max-running", "-1"}, 1, "invalid_max_running (config.max_running)"},
		{"max-running not a number", []string{"queues", "configure", "emails", "--max-running", "some"}, 2, `invalid argument "some" for "--max-running" flag`},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"unknown jobs command", []string{"jobs", "frob"}, 2, `unknown command "frob"`},
		{"retry nothing", []string{"jobs", "retry", "emails"}, 2, "name the jobs to run again, or give --failed"},
		{"retry ids and failed", []string{"jobs", "retry", "emails", "a", "--failed"}, 2, "give job ids or --failed, not both"},
		{"retry a missing job", []string{"jobs", "retry", "emails", "nope"}, 1, "slotq jobs retry: job_not_found (job_ids[0]): job nope not found in queue emails\n"},
		{"retry a bad page", []string{"jobs", "retry", "emails", "--failed", "--limit", "501"}, 1, "invalid_limit (limit)"},
		{"missing kind", []string{"enqueue", "emails"}, 2, "slotq enqueue: no_target (job.kind): give --kind (a Go handler) or --target"},
		{"missing kind as json", []string{"enqueue", "emails", "--json"}, 2, `{"error":{"code":"no_target","field":"job.kind","message":`},
		{"unknown queues command", []string{"queues", "frob"}, 2, `slotq queues: unknown command "frob" for "slotq queues"`},
		{"old bare verb", []string{"stats", "emails"}, 0, "slotq stats: deprecated: use 'slotq queues stats'"},
		{"old bare verb's error", []string{"stats", "nope"}, 1, "slotq stats: queue_not_found (queue)"},
		{"endpoint spelled as before", []string{"queues", "list", "--endpoint", "http://127.0.0.1:1"}, 2, "unknown flag: --endpoint"},
		{"timeline without source", []string{"timeline", "emails"}, 2, "the stack keeps no list of recent starts"},
		{"endpoint and stack", []string{"queues", "list", "--stack", "x"}, 2, "give --endpoint-url or --stack, not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { c.exits(tt.args, tt.code, tt.stderr) })
	}
	// The refusals wrote nothing: emails keeps its settings and is not
	// paused, and no queue "zero" was created.
	var qs []engine.Queue
	c.okJSON(&qs, "queues", "list")
	if len(qs) != 1 || qs[0].Name != "emails" || !reflect.DeepEqual(qs[0].Config, before.Config) || qs[0].State.Paused {
		t.Errorf("queues after the refusals: %+v; want emails alone, as before: %+v", qs, before)
	}
	t.Run("function error", func(t *testing.T) {
		_, errOut, code := cli{t: t, endpoint: c.endpoint}.run("queues", "list", "--admin-function", "NoSuchFunction")
		if code != 1 || !strings.Contains(errOut, "ResourceNotFoundException") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
	// Nothing listens on a closed port: one line and what to do, not the
	// SDK's chain of retries.
	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String()
		ln.Close()
		for cmd, args := range map[string][]string{
			"queues list": {"queues", "list"},
			"enqueue":     {"enqueue", "emails", "--kind", "echo", "--wait"},
		} {
			_, errOut, code := cli{t: t, endpoint: url}.run(args...)
			want := "slotq " + cmd + ": nothing answers at " + url + " (connection refused)\n" +
				"Is the local runtime running? Start it with 'make run' or 'slotq local'; for a deployed stack give --stack NAME.\n"
			if code != 1 || errOut != want {
				t.Errorf("slotq %s: exit %d, stderr %q; want exit 1, %q", strings.Join(args, " "), code, errOut, want)
			}
		}
	})
}

// purge and delete ask on a terminal, and refuse off one without --yes.
func TestConfirm(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	oldIn, oldTerm := stdin, stdinIsTerminal
	t.Cleanup(func() { stdin, stdinIsTerminal = oldIn, oldTerm })
	c.ok("queues", "create", "emails")
	c.ok("queues", "pause", "emails")
	c.ok("enqueue", "emails", "--kind", "echo")

	stdinIsTerminal = func() bool { return false }
	c.exits([]string{"queues", "delete", "emails"}, 2,
		"slotq queues delete: delete queue emails and cancel its waiting jobs: give --yes to confirm (stdin is not a terminal, so slotq cannot ask)\n")
	c.exits([]string{"queues", "purge", "emails"}, 2, "slotq queues purge: cancel every job of queue emails that has not started: give --yes")

	stdinIsTerminal = func() bool { return true }
	stdin = strings.NewReader("n\n")
	c.exits([]string{"queues", "purge", "emails"}, 2, "? Cancel every job of queue emails that has not started? [y/N] slotq queues purge: not confirmed: nothing done\n")
	var st engine.Stats
	c.okJSON(&st, "queues", "stats", "emails")
	if st.Waiting != 1 {
		t.Errorf("waiting after a purge not confirmed: %d, want 1", st.Waiting)
	}
	stdin = strings.NewReader("y\n")
	if out := c.ok("queues", "purge", "emails"); !strings.Contains(out, "cancelled  1") {
		t.Errorf("purge confirmed:\n%s", out)
	}
	stdin = strings.NewReader("yes\n")
	c.ok("queues", "delete", "emails")
	var qs []engine.Queue
	c.okJSON(&qs, "queues", "list")
	if len(qs) != 0 {
		t.Errorf("queues after a confirmed delete: %+v", qs)
	}
}

// Help reads like gh's: what the command does, USAGE, its commands by
// group, FLAGS and CONNECTION FLAGS, EXAMPLES, EXIT STATUS, LEARN MORE.
func TestHelp(t *testing.T) {
	c := cli{t: t}
	for name, args := range map[string][]string{
		"help":                {"--help"},
		"help-jobs":           {"help", "jobs"},
		"help-queues-create":  {"help", "queues", "create"},
		"help-enqueue":        {"enqueue", "--help"},
		"help-exit-codes":     {"help", "exit-codes"},
		"help-bare":           {},
		"help-queues-pause-h": {"queues", "pause", "-h"},
	} {
		out, errOut, code := c.run(args...)
		if code != 0 || errOut != "" {
			t.Errorf("slotq %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
		golden(t, name, out)
	}
	// Every command: 'slotq help CMD' prints what 'slotq CMD --help' does;
	// those that talk to a stack list the connection flags.
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		for _, sub := range cmd.Commands() {
			if !sub.IsAvailableCommand() || sub.Name() == "help" {
				continue
			}
			p := append(append([]string{}, path...), sub.Name())
			walk(sub, p)
			out, _, code := c.run(append(p, "--help")...)
			viaHelp, _, code2 := c.run(append([]string{"help"}, p...)...)
			if code != 0 || code2 != 0 || out != viaHelp || !strings.Contains(out, "USAGE\n  slotq "+strings.Join(p, " ")) {
				t.Errorf("slotq %s --help: exit %d, help: exit %d, same: %v\n%s", strings.Join(p, " "), code, code2, out == viaHelp, out)
			}
			if sub.Flags().Lookup("endpoint-url") != nil || sub.InheritedFlags().Lookup("endpoint-url") != nil {
				for _, want := range []string{"CONNECTION FLAGS", "--endpoint-url string", "--profile profile", "--region region", "--stack stack"} {
					if !strings.Contains(out, want) {
						t.Errorf("slotq %s --help lacks %q:\n%s", strings.Join(p, " "), want, out)
					}
				}
			}
		}
	}
	walk(newRootCmd(io.Discard, io.Discard), nil)
	for cmd, wants := range map[string][]string{
		"sam invoke":       {"--event file", "--template string", `(default "template.yaml")`, "--stack string", "--param Name=value"},
		"sam start-lambda": {"--addr string", `(default "127.0.0.1:3001")`, "--concurrency int", "(default 5)", "--resume-every duration", "--param Name=value"},
		"costs":            {"--runs int", "(default 3)", "--template string", "-v, --verbose"},
		"bench lanes":      {"--keys int", "(default 20)", "--jobs int", "--max-run float", "(default 5)", "--workers int", "(default 64)", "--interval duration", "(default 10ms)", "--max-running int", "--runs int"},
		"queues pause":     {"--until time", "--for duration", "--json", "--endpoint-url string", "default http://127.0.0.1:3001"},
		"queues create":    {"--skew duration", skewRule},
		"local":            {"--log level", `(default "warn")`, "--log info"},
		"timeline":         {"--log FILE", "slog text"},
	} {
		out, _, code := c.run(append(strings.Fields(cmd), "--help")...)
		for _, want := range append(wants, "EXIT STATUS\n  0 done, 1 the operation failed, 2 bad command line.") {
			if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
				t.Errorf("slotq %s --help: exit %d, lacks %q:\n%s", cmd, code, want, out)
			}
		}
	}
}

// --version: the module's version, and its commit (internal/buildinfo
// tests the reading).
func TestVersion(t *testing.T) {
	out, _, code := cli{t: t}.run("--version")
	if code != 0 || !strings.HasPrefix(out, "slotq version ") {
		t.Errorf("slotq --version: exit %d, %q", code, out)
	}
	if want := "slotq version " + buildinfo.String() + "\n"; out != want {
		t.Errorf("slotq --version: %q, want %q", out, want)
	}
}

// cobra's completion scripts, one per shell.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, errOut, code := cli{t: t}.run("completion", shell)
		if code != 0 || !strings.Contains(out, "slotq") || len(out) < 1000 {
			t.Errorf("slotq completion %s: exit %d, %d bytes, stderr %q", shell, code, len(out), errOut)
		}
	}
	cli{t: t}.exits([]string{"completion", "tcsh"}, 2, `unknown command "tcsh"`)
}

// The commands that run slotq's own tools, not a stack: bad command lines
// exit 2 before anything starts; a run that fails exits 1.
func TestToolCommands(t *testing.T) {
	c := cli{t: t}
	tests := []exitCase{
		{"sam unknown command", []string{"sam", "frob"}, 2, `slotq sam: unknown command "frob"`},
		{"sam invoke without function", []string{"sam", "invoke"}, 2, "want arguments FUNCTION, got 0"},
		{"sam invoke two functions", []string{"sam", "invoke", "EnqueueFunction", "AdminFunction"}, 2, "want arguments FUNCTION, got 2"},
		{"sam invoke bad param", []string{"sam", "invoke", "EnqueueFunction", "--param", "DefaultSkew"}, 2, "want Name=value"},
		{"sam invoke missing event", []string{"sam", "invoke", "EnqueueFunction", "--event", "testdata/nope.json"}, 2, "slotq sam invoke: --event: "},
		{"sam invoke bad flag", []string{"sam", "invoke", "--fn", "EnqueueFunction"}, 2, "slotq sam invoke: unknown flag: --fn"},
		{"sam invoke missing template", []string{"sam", "invoke", "EnqueueFunction", "--template", "testdata/nope.yaml"}, 1, "slotq sam invoke: "},
		{"sam start-lambda argument", []string{"sam", "start-lambda", "EnqueueFunction"}, 2, `slotq sam start-lambda: unexpected argument "EnqueueFunction"`},
		{"sam start-lambda no concurrency", []string{"sam", "start-lambda", "--concurrency", "0"}, 2, "--concurrency must be at least 1"},
		{"sam start-lambda bad duration", []string{"sam", "start-lambda", "--resume-every", "often"}, 2, `invalid argument "often" for "--resume-every" flag`},
		{"costs argument", []string{"costs", "now"}, 2, `slotq costs: unexpected argument "now"`},
		{"costs no runs", []string{"costs", "--runs", "0"}, 2, "--runs must be at least 1"},
		{"bench lanes argument", []string{"bench", "lanes", "now"}, 2, `slotq bench lanes: unexpected argument "now"`},
		{"bench lanes no runs", []string{"bench", "lanes", "--runs", "0"}, 2, "--runs must be at least 1"},
		{"bench lanes bad runs", []string{"bench", "lanes", "--min-run", "3", "--max-run", "2"}, 2, "--min-run must be at least 0 and at most --max-run"},
		{"bench lanes max-running", []string{"bench", "lanes", "--max-running", "101"}, 2, "--max-running must be between 0 (no cap) and 100"},
		{"bench lanes bad flag", []string{"bench", "lanes", "--producers", "3"}, 2, "slotq bench lanes: unknown flag: --producers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { c.exits(tt.args, tt.code, tt.stderr) })
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
	newCloudFormation = func(aws.Config) clikit.DescribeStacksAPI {
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
	c.okJSON(&qs, "queues", "list", "--stack", "slotq-prod")
	if len(qs) != 1 || qs[0].Name != "emails" {
		t.Errorf("queues: %+v", qs)
	}
	_, errOut, code := c.run("queues", "list", "--stack", "other")
	if code != 1 || !strings.Contains(errOut, "stack other") {
		t.Errorf("unknown stack: exit %d, %q", code, errOut)
	}
	// SLOTQ_STACK does what --stack does.
	t.Setenv("SLOTQ_STACK", "slotq-prod")
	c.okJSON(&qs, "queues", "list")
	if len(qs) != 1 {
		t.Errorf("queues with SLOTQ_STACK: %+v", qs)
	}
}

// `slotq queues` shows a queue without targets as `-` under TARGETS, as
// `queues stats` shows the setting, not 0.
func TestQueuesNoTargets(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.ok("queues", "create", "plain", "--interval", "1s")
	lines := strings.Split(strings.TrimSpace(c.ok("queues")), "\n")
	if len(lines) != 2 {
		t.Fatalf("slotq queues:\n%s", strings.Join(lines, "\n"))
	}
	head, plain := strings.Fields(lines[0]), strings.Fields(lines[1])
	for i, h := range head {
		if h == "TARGETS" {
			// Headers of two words ("KEY LIMITS", …) before it shift
			// the fields: count from the row's end instead.
			if got := plain[len(plain)-(len(head)-i)]; got != "-" {
				t.Errorf("TARGETS of a queue without targets: %q, want -\n%s", got, strings.Join(lines, "\n"))
			}
		}
	}
}
