//go:build unix

// Package producers_test runs the producers of examples/producers, in
// Python and in TypeScript, against the local runtime and checks what
// they print: `make test` runs it, after internal/dev/setup/setup.sh
// installed the TypeScript example's packages.
package producers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/localtest"
	"github.com/slotq/slotq/pkg/local"
)

// want is what each producer prints, with its job's id as ID and the
// job's slot as SLOT.
const want = `{"step":"enqueued","job_id":"ID","ticket":1,"slot_at":"SLOT","position":0}
{"step":"ended","job_id":"ID","status":"succeeded","attempt":1}
{"step":"refused","code":"invalid_queue","field":"queue"}
`

// missing skips the test where the producer's language is missing,
// unless SLOTQ_REQUIRE_PRODUCERS=1 (make test), which fails it.
func missing(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("SLOTQ_REQUIRE_PRODUCERS") == "1" {
		t.Fatalf("%s (SLOTQ_REQUIRE_PRODUCERS=1): run make setup", what)
	}
	t.Skipf("%s: run make setup, or set SLOTQ_REQUIRE_PRODUCERS=1 to fail instead", what)
}

func TestPythonProducer(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		missing(t, "no python3")
	}
	if err := exec.Command("python3", "-c", "import boto3").Run(); err != nil {
		missing(t, "python3 has no boto3 (pip install boto3)")
	}
	check(t, "python", "py-orders", "python3", "produce.py", "py-orders")
}

func TestTypeScriptProducer(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		missing(t, "no npm")
	}
	if _, err := os.Stat("typescript/node_modules/@aws-sdk/client-lambda"); err != nil {
		missing(t, "the TypeScript example's packages are not installed (npm ci in examples/producers/typescript)")
	}
	check(t, "typescript", "ts-orders", "npm", "start", "--silent", "--", "ts-orders")
}

var (
	jobIDRE  = regexp.MustCompile(`"job_id":"(produce-[0-9a-f]{8})"`)
	slotAtRE = regexp.MustCompile(`"slot_at":"([^"]*)"`)
)

// check runs a producer in dir on queue against a local runtime of its
// own, and holds its output to want and the job it made to what it asked.
func check(t *testing.T, dir, queue, name string, args ...string) {
	e := localtest.Start(t, local.Options{})
	start := time.Now()
	out := run(t, dir, e.InvokeURL, name, args...)

	m := jobIDRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no job id in the output:\n%s", out)
	}
	id := m[1]
	got := strings.ReplaceAll(out, `"job_id":"`+id+`"`, `"job_id":"ID"`)
	s := slotAtRE.FindStringSubmatch(got)
	if s == nil {
		t.Fatalf("no slot_at in the output:\n%s", out)
	}
	got = strings.Replace(got, s[0], `"slot_at":"SLOT"`, 1)
	if got != want {
		t.Errorf("the producer printed:\n%s\nwant (ID its job's id, SLOT its slot):\n%s", out, want)
	}
	// not_before held the job a second: its slot is no earlier.
	slot, err := time.Parse(time.RFC3339Nano, s[1])
	if err != nil || slot.Before(start.Add(time.Second-time.Millisecond)) {
		t.Errorf("slot_at %q (%v): want a time at least a second after the producer started (%s)", s[1], err, start.Format(time.RFC3339Nano))
	}

	// The job's record has what the producer asked for.
	var rec struct {
		Job struct {
			Key       string `json:"key"`
			Kind      string `json:"kind"`
			NotBefore string `json:"not_before"`
			Status    string `json:"status"`
		} `json:"job"`
	}
	body, _ := json.Marshal(map[string]string{"op": "get", "queue": queue, "job_id": id})
	res, err := http.Post(e.InvokeURL+"/2015-03-31/functions/AdminFunction/invocations", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("get %s: %v: %s", id, err, b)
	}
	if j := rec.Job; j.Key != "customer-42" || j.Kind != "echo" || j.NotBefore == "" || j.Status != "succeeded" {
		t.Errorf("the job's record: %s; want kind echo, key customer-42, a not_before, succeeded", b)
	}
}

// run runs the command in dir (under examples/producers) with the
// producer's variables pointing at invokeURL, and answers its output. The
// command runs in a process group of its own, killed whole when it ends
// or the test's time is up, so nothing it started outlives the test.
func run(t *testing.T, dir, invokeURL, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = filepath.Join(".", dir)
	cmd.Env = append(os.Environ(),
		"SLOTQ_ENDPOINT_URL="+invokeURL,
		"SLOTQ_ENQUEUE_FUNCTION=EnqueueFunction",
		"SLOTQ_ADMIN_FUNCTION=AdminFunction",
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever it left
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not end in time; stdout:\n%s\nstderr:\n%s", name, args, stdout.String(), stderr.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("%s %v: %v; stdout:\n%s\nstderr:\n%s", name, args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
