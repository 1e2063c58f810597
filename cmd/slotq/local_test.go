package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dev/motoserver"
	"github.com/slotq/slotq/internal/dev/testenv"
)

// slotqBinary builds this command once per test run.
var slotqBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "slotq-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "slotq")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// localProc is `slotq local --json` running in a subprocess.
type localProc struct {
	cmd     *exec.Cmd
	url     string
	console string // the web console's URL
	mu      sync.Mutex
	events  []map[string]any
	ready   chan struct{}
	done    chan struct{}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startLocal(t *testing.T, env []string, args ...string) *localProc {
	t.Helper()
	bin, err := slotqBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Ports the system picks, read back from the ready event: a port
	// found free and then given to slotq local may be taken meanwhile by
	// another test binary.
	cmd := exec.Command(bin, append([]string{"local", "--json", "--addr", "127.0.0.1:0", "--console", "127.0.0.1:0", "--template", "../../template.yaml"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdout := startLogged(t, cmd)
	p := &localProc{cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			p.mu.Lock()
			p.events = append(p.events, m)
			p.mu.Unlock()
			if m["event"] == "ready" {
				p.url, _ = m["invoke_url"].(string)
				p.console, _ = m["console_url"].(string)
				close(p.ready)
			}
		}
	}()
	t.Cleanup(func() { p.stop(syscall.SIGINT) })
	select {
	case <-p.ready:
	case <-p.done:
		t.Fatal("slotq local exited before it was ready")
	case <-time.After(testenv.Patience):
		t.Fatalf("slotq local not ready after %v", testenv.Patience)
	}
	return p
}

func (p *localProc) stop(sig syscall.Signal) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	<-p.done
	_ = p.cmd.Wait()
}

// starts returns the start events of queue, in start order.
func (p *localProc) starts(queue string) []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, e := range p.events {
		if e["event"] == "start" && e["queue"] == queue {
			out = append(out, e)
		}
	}
	return out
}

// startLogged starts cmd with its standard error in the test's log, and
// returns its standard output.
func startLogged(t *testing.T, cmd *exec.Cmd) io.Reader {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdout
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("slotq local: %s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func invoke(t *testing.T, url, fn string, req any) map[string]any {
	t.Helper()
	c := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), Credentials: aws.AnonymousCredentials{}})
	b, _ := json.Marshal(req)
	out, err := c.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: b})
	if err != nil {
		t.Fatalf("invoke %s: %v", fn, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Payload, &m); err != nil || out.FunctionError != nil || m["error"] != nil {
		t.Fatalf("invoke %s %s: %s (%v)", fn, b, out.Payload, err)
	}
	return m
}

func jobStatus(t *testing.T, url, queue, id string) string {
	m := invoke(t, url, "AdminFunction", map[string]any{"op": "get", "queue": queue, "job_id": id})
	return fmt.Sprint(m["job"].(map[string]any)["status"])
}

// target is the HTTP target: /ok succeeds, /fail answers 500, /hang
// blocks until released.
type httpTarget struct {
	mu    sync.Mutex
	calls map[string]int
	hang  chan struct{}
	hit   chan string
}

func newTarget(t *testing.T) (*httpTarget, string) {
	tg := &httpTarget{calls: map[string]int{}, hang: make(chan struct{}), hit: make(chan string, 100)}
	srv := httptest.NewServer(tg)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(tg.hang) })
	return tg, srv.URL
}

func (tg *httpTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Slotq-Job-Id")
	tg.mu.Lock()
	tg.calls[id]++
	n := tg.calls[id]
	tg.mu.Unlock()
	tg.hit <- id
	switch {
	case r.URL.Path == "/fail":
		w.WriteHeader(http.StatusInternalServerError)
	case r.URL.Path == "/hang" && n == 1:
		select {
		case <-tg.hang:
		case <-r.Context().Done():
		}
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (tg *httpTarget) count(id string) int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.calls[id]
}

// `slotq local` end to end, in a subprocess, on the embedded backend:
// four producer processes enqueue 40 jobs through the Invoke API with the
// AWS SDK (slotq invoke); all succeed, their starts keep the spacing
// guarantee; a timed pause lifts by itself on the schedule; a failing
// target ends failed after max_attempts, with its dead-letter record.
func TestLocalEndToEnd(t *testing.T) {
	tg, tURL := newTarget(t)
	p := startLocal(t, nil, "--resume-every", "1s")
	const interval = 200 * time.Millisecond
	const skew = 10 * time.Millisecond
	cfg := map[string]any{"interval": "200ms", "skew": "10ms", "max_attempts": 2, "backoff": "100ms",
		"targets": []string{"http://127.0.0.1:*"}, "allow_networks": []string{"127.0.0.0/8"}}
	for _, q := range []string{"spaced", "failing"} {
		invoke(t, p.url, "AdminFunction", map[string]any{"op": "create", "queue": q, "config": cfg})
	}

	// Four producer processes, ten jobs each.
	bin, _ := slotqBinary()
	var wg sync.WaitGroup
	for n := range 4 {
		var jobs []map[string]any
		for i := range 10 {
			jobs = append(jobs, map[string]any{"id": fmt.Sprintf("p%d-%d", n, i), "target": tURL + "/ok", "payload": map[string]int{"i": i}})
		}
		body, _ := json.Marshal(map[string]any{"queue": "spaced", "jobs": jobs})
		wg.Go(func() {
			out, err := exec.Command(bin, "invoke", "--endpoint-url", p.url, "EnqueueFunction", string(body)).CombinedOutput()
			if err != nil || !strings.Contains(string(out), `"ticket"`) {
				t.Errorf("producer %d: %v: %s", n, err, out)
			}
		})
	}
	wg.Wait()
	invoke(t, p.url, "EnqueueFunction", map[string]any{"queue": "failing", "job": map[string]any{"id": "doomed", "target": tURL + "/fail"}})

	// A queue paused until two seconds ahead: its jobs park, and the
	// schedule (every second here) lifts the pause.
	until := time.Now().Add(2 * time.Second)
	invoke(t, p.url, "AdminFunction", map[string]any{"op": "create", "queue": "paused", "config": map[string]any{"interval": "100ms"}})
	invoke(t, p.url, "AdminFunction", map[string]any{"op": "pause", "queue": "paused", "until": until.UTC().Format(time.RFC3339Nano)})
	a := invoke(t, p.url, "EnqueueFunction", map[string]any{"queue": "paused", "jobs": []map[string]any{{"id": "a", "kind": "echo"}, {"id": "b", "kind": "echo"}}})
	if st := a["jobs"].([]any)[0].(map[string]any)["status"]; st != "parked" {
		t.Errorf("a job of a paused queue is %v, want parked", st)
	}

	testenv.WaitFor(t, "40 starts on spaced", func() bool { return len(p.starts("spaced")) >= 40 })
	testenv.WaitFor(t, "the paused queue's jobs succeed", func() bool {
		return jobStatus(t, p.url, "paused", "a") == "succeeded" && jobStatus(t, p.url, "paused", "b") == "succeeded"
	})
	for _, s := range p.starts("paused") {
		if at, _ := time.Parse(time.RFC3339Nano, s["time"].(string)); at.Before(until) {
			t.Errorf("paused job %v started at %v, before the pause ended at %v", s["job_id"], at, until)
		}
	}
	testenv.WaitFor(t, "the failing job fails", func() bool { return jobStatus(t, p.url, "failing", "doomed") == "failed" })

	// Every job succeeded, each started once, in the window form of the
	// spacing guarantee, counted by the start each gate reserved
	// (gate_at): the log line's own time comes after it by the worker's
	// wake-up, which a loaded host stretches.
	starts := p.starts("spaced")
	var at []time.Time
	ids := map[string]bool{}
	for _, s := range starts {
		ts, err := time.Parse(time.RFC3339Nano, s["gate_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		at = append(at, ts)
		ids[s["job_id"].(string)] = true
	}
	if len(starts) != 40 || len(ids) != 40 {
		t.Errorf("%d starts of %d jobs, want 40 of 40", len(starts), len(ids))
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := range at {
		for j := i + 1; j < len(at); j++ {
			if gap, want := at[j].Sub(at[i]), time.Duration(j-i)*interval-skew; gap < want {
				t.Errorf("starts %d and %d %v apart, want at least %v", i, j, gap, want)
			}
		}
	}
	for id := range ids {
		if st := jobStatus(t, p.url, "spaced", id); st != "succeeded" {
			t.Errorf("%s: %s", id, st)
		}
		if n := tg.count(id); n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
	if n := tg.count("doomed"); n != 2 {
		t.Errorf("doomed ran %d times, want max_attempts 2", n)
	}
	dead := invoke(t, p.url, "AdminFunction", map[string]any{"op": "list", "queue": "failing", "status": "failed"})
	if js, _ := dead["jobs"].([]any); len(js) != 1 || js[0].(map[string]any)["job_id"] != "doomed" {
		t.Errorf("dead letters %v, want doomed", dead["jobs"])
	}

	// Ctrl-C: a summary per queue.
	p.stop(syscall.SIGINT)
	var summary []string
	for _, e := range p.events {
		if e["event"] == "summary" {
			summary = append(summary, fmt.Sprintf("%v:%v/%v", e["queue"], e["succeeded"], e["failed"]))
		}
	}
	slices.Sort(summary)
	if want := []string{"failing:0/1", "paused:2/0", "spaced:40/0"}; !slices.Equal(summary, want) {
		t.Errorf("summary %v, want %v", summary, want)
	}
}

// On DynamoDB Local and moto (a persistent backend), a worker killed in
// the middle of an attempt loses nothing: its message comes back after
// the visibility timeout, in a new slotq local, and the job ends once.
func TestLocalWorkerKilled(t *testing.T) {
	dynamolocal.Require(t)
	motoserver.Require(t)
	tg, tURL := newTarget(t)
	stack := fmt.Sprintf("killed%d", time.Now().UnixNano()%1e9)
	args := []string{"--stack", stack, "--visibility-timeout", "2s", "--lease", "3s", "--resume-every", "1s"}
	p := startLocal(t, nil, args...)
	invoke(t, p.url, "AdminFunction", map[string]any{"op": "create", "queue": "crash", "config": map[string]any{
		"interval": "200ms", "backoff": "100ms", "targets": []string{"http://127.0.0.1:*"}, "allow_networks": []string{"127.0.0.0/8"}}})
	invoke(t, p.url, "EnqueueFunction", map[string]any{"queue": "crash", "job": map[string]any{"id": "j", "target": tURL + "/hang"}})
	select {
	case <-tg.hit:
	case <-time.After(testenv.Patience):
		t.Fatalf("the job did not start in %v", testenv.Patience)
	}
	p.stop(syscall.SIGKILL) // Lambda killed the worker mid-attempt
	q := startLocal(t, nil, args...)
	testenv.WaitFor(t, "the job ends", func() bool { return jobStatus(t, q.url, "crash", "j") == "succeeded" })
	stats := invoke(t, q.url, "AdminFunction", map[string]any{"op": "stats", "queue": "crash"})
	t.Logf("stats %v; target ran %d times", stats["stats"], tg.count("j"))
	if n := tg.count("j"); n != 2 {
		t.Errorf("the target ran %d times, want 2 (the killed attempt, then its retry)", n)
	}
}
