package slotq_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/slotq/slotq/internal/dev/dynamolocal"
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
	addrs := freeAddrs(t, 2)
	api, con := addrs[0], addrs[1]
	stopsOnKill(t, ".", []string{"run", "ARGS=--addr " + api + " --console " + con}, addrs, func(out string) bool {
		return strings.Contains(out, con)
	})
}

// TestMakeDynamoDBLocalStopsOnKill: `make dynamodb-local &` stopped by its
// PID stops DynamoDB Local's Java with it (a `go run` left it serving).
func TestMakeDynamoDBLocalStopsOnKill(t *testing.T) {
	dynamolocal.Require(t) // Java 17 and the jar; fetched once
	addr := freeAddrs(t, 1)[0]
	_, port, _ := net.SplitHostPort(addr)
	stopsOnKill(t, ".", []string{"dynamodb-local", "DYNAMODB_PORT=" + port}, []string{addr}, func(out string) bool {
		return strings.Contains(out, "AWS_ENDPOINT_URL_DYNAMODB")
	})
}

// TestMakeRunAcmeStopsOnKill: the example project's `make run &` stopped
// by its PID stops acme's local runtime (a `go run` left it serving).
func TestMakeRunAcmeStopsOnKill(t *testing.T) {
	addrs := freeAddrs(t, 2)
	stopsOnKill(t, "examples/acme", []string{"run", "ARGS=--addr " + addrs[0] + " --console " + addrs[1]}, addrs,
		func(out string) bool { return strings.Contains(out, addrs[1]) })
}

// stopsOnKill runs make's target (args: the target and its variables) in
// dir, waits until something listens on every one of addrs and ready says
// so of its output, stops make by its PID alone, and fails unless every
// address is free once make has ended: what make started ended with it.
func stopsOnKill(t *testing.T, dir string, args []string, addrs []string, ready func(out string) bool) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_DYNAMODB=", "AWS_ENDPOINT_URL_SQS=")
	// A file, not a pipe: Wait returns when make ends, even if what it
	// started lives on holding the pipe.
	log, err := os.Create(filepath.Join(t.TempDir(), "make.log"))
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

	name := "make " + strings.Join(args, " ")
	testenv.WaitFor(t, name+" to serve", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s ended: %v\n%s", name, err, out())
		default:
		}
		for _, a := range addrs {
			if free(a) {
				return false
			}
		}
		return ready(out())
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
	for _, a := range addrs {
		if !free(a) {
			t.Errorf("%s ended, and %s is still held: what it started outlived it\n%s", name, a, out())
		}
	}
}
