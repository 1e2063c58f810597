package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/dev/testenv"
)

// get fetches url and returns its body, failing on anything but 200.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %.300s", url, resp.Status, b)
	}
	return string(b)
}

// slotq local serves the console and says where (make run prints it);
// slotq console serves one against a stack given by the connection
// flags, and refuses an address other than loopback.
func TestConsoleCommands(t *testing.T) {
	p := startLocal(t, nil)
	if !strings.HasPrefix(p.console, "http://127.0.0.1:") {
		t.Fatalf("slotq local's ready event has console_url %q", p.console)
	}
	invoke(t, p.url, "AdminFunction", map[string]any{"op": "create", "queue": "watched", "config": map[string]any{"interval": "2s"}})
	if page := get(t, p.console); !strings.Contains(page, "watched") {
		t.Errorf("slotq local's console lists no queue watched:\n%.500s", page)
	}

	bin, err := slotqBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "console", "--addr", freeAddr(t), "--endpoint-url", p.url)
	out := startLogged(t, cmd)
	defer func() { _ = cmd.Process.Signal(syscall.SIGINT); _ = cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
	}()
	var url string
	select {
	case l := <-line:
		_, url, _ = strings.Cut(l, "slotq console: ")
		url, _, _ = strings.Cut(url, " ")
	case <-time.After(testenv.Patience):
		t.Fatalf("slotq console printed no address in %v", testenv.Patience)
	}
	if page := get(t, url+"queues/watched"); !strings.Contains(page, "watched") || !strings.Contains(page, "2s") {
		t.Errorf("slotq console's queue page:\n%.500s", page)
	}

	c := cli{t: t, endpoint: p.url}
	c.exits([]string{"console", "--addr", "0.0.0.0:0"}, clikit.ExitUsage, "give --allow-remote")
	c.exits([]string{"console", "--refresh", "10ms"}, clikit.ExitUsage, "--refresh must be at least 1s")
}

// slotq queues starts lists a queue's starts, one per job, in ticket
// order, each within the queue's skew after its slot.
func TestStartsCommand(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.ok("queues", "create", "quick", "--interval", "50ms")
	for i := range 3 {
		c.ok("enqueue", "quick", "--kind", "echo", "--id", fmt.Sprintf("s%d", i), "--wait")
	}
	var out struct {
		Starts []startJSON `json:"starts"`
	}
	c.okJSON(&out, "queues", "starts", "quick", "--since", "5m")
	if len(out.Starts) != 3 {
		t.Fatalf("%d starts, want 3: %+v", len(out.Starts), out.Starts)
	}
	for i, s := range out.Starts {
		// In ticket order; a job that missed its slot on a loaded host
		// starts at a new ticket, after its first.
		if s.JobID != fmt.Sprintf("s%d", i) || i > 0 && s.Ticket <= out.Starts[i-1].Ticket || s.StartedAt.Before(s.SlotAt.Add(-10*time.Millisecond)) {
			t.Errorf("start %d: %+v", i, s)
		}
	}
	if text := c.ok("queues", "starts", "quick"); !strings.HasPrefix(text, "TICKET  JOB ID") || strings.Count(text, "\n") != 4 {
		t.Errorf("slotq queues starts quick:\n%s", text)
	}
	c.exits([]string{"queues", "starts", "quick", "--since", "yesterday"}, clikit.ExitUsage, "--since")
	c.exits([]string{"queues", "starts", "quick", "--since", "2h"}, clikit.ExitFail, "invalid_since (since)")
}

// slotq console on an address another program holds (make run's own
// console) says so and names --addr, not a bare "address already in use".
func TestConsoleAddressTaken(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, errOut, code := c.run("console", "--addr", ln.Addr().String())
	if code == 0 || !strings.Contains(errOut, "--addr") || !strings.Contains(errOut, "make run") {
		t.Errorf("slotq console on a taken address: exit %d, stderr %q; want a failure that names --addr and make run", code, errOut)
	}
}
