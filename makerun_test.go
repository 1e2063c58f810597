package slotq_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/slotq/slotq/internal/dev/testenv"
)

// freeAddrs returns n loopback addresses nothing listens on now.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		defer ln.Close()
	}
	return addrs
}

// free reports whether addr can be listened on.
func free(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// TestMakeRunStopsOnKill: `make run &` stopped by its PID (kill sends
// SIGTERM to make alone, as a script does) stops slotq local, which frees
// its ports: the next make run can start.
func TestMakeRunStopsOnKill(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	addrs := freeAddrs(t, 2)
	api, con := addrs[0], addrs[1]
	cmd := exec.Command("make", "--no-print-directory", "run", "ARGS=--addr "+api+" --console "+con)
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_DYNAMODB=", "AWS_ENDPOINT_URL_SQS=")
	// A file, not a pipe: Wait returns when make ends, even if what it
	// started lives on holding the pipe.
	log, err := os.Create(filepath.Join(t.TempDir(), "make-run.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	out := func() string { b, _ := os.ReadFile(log.Name()); return string(b) }
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, so that cleanup reaches whatever it left
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the fix failed to stop
	})

	testenv.WaitFor(t, "make run to serve the Invoke API and the console", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("make run ended: %v\n%s", err, out())
		default:
		}
		return !free(api) && !free(con) && strings.Contains(out(), con)
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "make to end", func() bool {
		select {
		case err := <-exited:
			exited <- err
			return true
		default:
			return false
		}
	})
	// make waits for what it runs: once it has ended, the ports are free.
	if !free(api) || !free(con) {
		t.Errorf("make run ended, and %s or %s is still held: slotq local outlived it\n%s", api, con, out())
	}
}
