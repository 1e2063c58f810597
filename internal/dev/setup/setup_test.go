package setup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stopsWithin is how long a newcomer may wait for make test to say what
// is missing.
const stopsWithin = time.Minute

// tools are what the script looks for besides the browser; each test's
// PATH holds stand-ins for some of them.
var tools = []string{"make", "git", "java", "npm", "go", "moto_server", "cfn-lint", "python3"}

// machine is a PATH of stand-in commands in a folder of its own: each
// stand-in appends its name and arguments to calls and succeeds.
type machine struct {
	t     *testing.T
	bin   string
	calls string
}

func newMachine(t *testing.T, cmds ...string) *machine {
	t.Helper()
	dir := t.TempDir()
	m := &machine{t: t, bin: filepath.Join(dir, "bin"), calls: filepath.Join(dir, "calls")}
	if err := os.Mkdir(m.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		m.add(c, "")
	}
	return m
}

// add writes the stand-in c, which records its call, then runs then.
func (m *machine) add(c, then string) {
	m.t.Helper()
	script := "#!/bin/sh\necho \"" + c + " $*\" >> " + m.calls + "\n" + then
	if err := os.WriteFile(filepath.Join(m.bin, c), []byte(script), 0o755); err != nil {
		m.t.Fatal(err)
	}
}

// run runs setup.sh on the machine's PATH alone (HOME an empty folder, so
// no pyenv shims come in), with extra environment and arguments; it
// returns the exit code, stderr and the stand-ins' calls.
func (m *machine) run(env []string, args ...string) (int, string, string) {
	m.t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		m.t.Fatalf("setup.sh needs bash: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopsWithin)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, append([]string{"setup.sh"}, args...)...)
	cmd.Env = append([]string{"PATH=" + m.bin, "HOME=" + m.t.TempDir()}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	if ctx.Err() != nil {
		m.t.Fatalf("setup.sh ran for %v without stopping; stderr:\n%s", time.Since(start), stderr.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		m.t.Fatal(err)
	}
	calls, _ := os.ReadFile(m.calls)
	return code, stderr.String(), string(calls)
}

// A machine without Chromium, where nothing may be installed (a user's, or
// SLOTQ_SETUP_NO_INSTALL=1 as root): the script stops at once, naming the
// command, and neither installs nor fetches anything.
func TestMissingBrowserStopsNamingTheCommand(t *testing.T) {
	m := newMachine(t, append(tools, "apt-get", "mkdir")...)
	code, stderr, calls := m.run([]string{"SLOTQ_SETUP_NO_INSTALL=1"})
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "apt-get update && ") || !strings.Contains(stderr, "apt-get install -y chromium") {
		t.Errorf("stderr names no command that installs chromium:\n%s", stderr)
	}
	if calls != "" {
		t.Errorf("the script ran commands on a machine it may not change:\n%s", calls)
	}
	if os.Geteuid() != 0 && !strings.Contains(stderr, "sudo apt-get install") {
		t.Errorf("a user's command lacks sudo:\n%s", stderr)
	}
}

// Every package apt-get can give is named in one command.
func TestMissingPackagesInOneCommand(t *testing.T) {
	m := newMachine(t, "make", "go", "moto_server", "cfn-lint")
	code, stderr, _ := m.run([]string{"SLOTQ_SETUP_NO_INSTALL=1"})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr, "apt-get install -y git openjdk-17-jre-headless nodejs npm chromium") {
		t.Errorf("stderr does not name every package in one command:\n%s", stderr)
	}
}

// What apt-get cannot give (the image's Python tools) is named too.
func TestMissingPythonTools(t *testing.T) {
	m := newMachine(t, "make", "git", "java", "npm", "go", "chromium")
	code, stderr, calls := m.run(nil, "--check")
	if code != 1 || !strings.Contains(stderr, "moto_server") || !strings.Contains(stderr, "cfn-lint") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if calls != "" {
		t.Errorf("a check ran commands:\n%s", calls)
	}
}

// A machine with everything passes the check, and the full run checks
// boto3, installs the TypeScript producer's packages and fetches DynamoDB
// Local, once, through go.
func TestCompleteMachineFetchesDynamoDBLocal(t *testing.T) {
	m := newMachine(t, append(tools, "chromium", "apt-get")...)
	if code, stderr, calls := m.run(nil, "--check"); code != 0 || calls != "" {
		t.Fatalf("--check: exit %d, calls %q, stderr:\n%s", code, calls, stderr)
	}
	code, stderr, calls := m.run(nil)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	want := "python3 -c import boto3\n" +
		"npm ci --prefix examples/producers/typescript --no-audit --no-fund --loglevel=error\n" +
		"go run ./internal/dev/dynamolocal/cmd/dynamodb-local -fetch\n"
	if calls != want {
		t.Errorf("calls %q, want %q", calls, want)
	}
}

// As root, what is missing is installed with apt-get, after apt-get
// update and the man folder the JRE's package writes to; then the fetch.
// apt-get and mkdir are stand-ins: nothing is installed.
func TestRootInstallsWithAptGet(t *testing.T) {
	m := newMachine(t, "make", "git", "go", "moto_server", "cfn-lint", "python3", "mkdir")
	// apt-get install puts the stand-ins of the packages' commands on PATH.
	chmod, err := exec.LookPath("chmod")
	if err != nil {
		t.Fatalf("the stand-ins need chmod: %v", err)
	}
	var install strings.Builder
	install.WriteString("[ \"$1\" = install ] || exit 0\n")
	for _, c := range []string{"java", "npm", "chromium"} {
		fmt.Fprintf(&install, "printf '#!/bin/sh\\n' > %[1]s/%[2]s; %[3]s +x %[1]s/%[2]s\n", m.bin, c, chmod)
	}
	m.add("apt-get", install.String())
	code, stderr, calls := m.run([]string{"SLOTQ_SETUP_EUID=0"}) // as root, whoever runs the test
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	want := "mkdir -p /usr/share/man/man1\n" +
		"apt-get update -qq\n" +
		"apt-get install -y -qq openjdk-17-jre-headless nodejs npm chromium\n" +
		"python3 -c import boto3\n" +
		"go run ./internal/dev/dynamolocal/cmd/dynamodb-local -fetch\n"
	if calls != want {
		t.Errorf("calls:\n%s\nwant:\n%s", calls, want)
	}
}

// As root, a package apt-get installed whose command is still not on PATH
// (chromium installed, PATH without /usr/bin) stops the run at once: the
// tests would fail on it minutes later.
func TestRootInstalledButNotOnPath(t *testing.T) {
	m := newMachine(t, append(tools, "apt-get", "mkdir")...)
	code, stderr, calls := m.run([]string{"SLOTQ_SETUP_EUID=0"}) // as root, whoever runs the test
	if code != 1 || !strings.Contains(stderr, "still missing from PATH") || !strings.Contains(stderr, "chromium") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(calls, "dynamodb-local") {
		t.Errorf("went on to fetch DynamoDB Local:\n%s", calls)
	}
}
