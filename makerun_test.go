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
	stopsOnKill(t, ".", 2, func(a []string) []string { return []string{"run", "ARGS=--addr " + a[0] + " --console " + a[1]} },
		func(out string, a []string) bool { return strings.Contains(out, a[1]) })
}

// TestMakeDynamoDBLocalStopsOnKill: `make dynamodb-local &` stopped by its
// PID stops DynamoDB Local's Java with it (a `go run` left it serving).
func TestMakeDynamoDBLocalStopsOnKill(t *testing.T) {
	dynamolocal.Require(t) // Java 17 and the jar; fetched once
	stopsOnKill(t, ".", 1, func(a []string) []string {
		_, port, _ := net.SplitHostPort(a[0])
		return []string{"dynamodb-local", "DYNAMODB_PORT=" + port}
	}, func(out string, _ []string) bool { return strings.Contains(out, "AWS_ENDPOINT_URL_DYNAMODB") })
}

// TestMakeRunAcmeStopsOnKill: the example project's `make run &` stopped
// by its PID stops acme's local runtime (a `go run` left it serving).
func TestMakeRunAcmeStopsOnKill(t *testing.T) {
	stopsOnKill(t, "examples/acme", 2, func(a []string) []string { return []string{"run", "ARGS=--addr " + a[0] + " --console " + a[1]} },
		func(out string, a []string) bool { return strings.Contains(out, a[1]) })
}

// stopsOnKill runs make's target (argsFor: the target and its variables
// for n free loopback addresses) in dir, waits until something listens on
// every address and ready says so of its output, stops make by its PID
// alone, and fails unless every address is free once make has ended: what
// make started ended with it. Addresses found free may be taken by another
// test before make's program binds them: then it tries again on others.
func stopsOnKill(t *testing.T, dir string, n int, argsFor func(addrs []string) []string, ready func(out string, addrs []string) bool) {
	t.Helper()
	for try := 1; ; try++ {
		addrs := freeAddrs(t, n)
		if runStopsOnKill(t, dir, argsFor(addrs), addrs, func(out string) bool { return ready(out, addrs) }, try < 5) {
			return
		}
	}
}

// runStopsOnKill is one try of stopsOnKill; it reports false, when retry
// is set, if make's program could not bind an address (taken meanwhile).
func runStopsOnKill(t *testing.T, dir string, args []string, addrs []string, ready func(out string) bool, retry bool) bool {
	t.Helper()
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
	taken := false
	testenv.WaitFor(t, name+" to serve", func() bool {
		select {
		case err := <-exited:
			exited <- err
			if retry && strings.Contains(out(), "address already in use") {
				taken = true
				return true
			}
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
	if taken {
		return false
	}
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
	return true
}
