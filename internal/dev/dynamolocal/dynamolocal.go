package dynamolocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/slotq/slotq/internal/dev/emulator"
)

// RequireEnv is the environment variable that turns a missing java or npm
// from a skip into a failure in Require. `make test` sets it to 1.
const RequireEnv = "SLOTQ_REQUIRE_LOCAL_AWS"

// ErrMissingTool reports that java or npm is not installed. Require skips
// on it unless RequireEnv is 1; every other error fails.
var ErrMissingTool = errors.New("missing tool")

// startTimeout bounds how long Start waits for the server to answer. It is
// ready in about 5 s on an idle machine; several test binaries starting
// JVMs at once on two cores take longer.
const startTimeout = 90 * time.Second

// Server is a running DynamoDB Local.
type Server struct {
	// Endpoint is its base URL, such as http://127.0.0.1:40123.
	Endpoint string

	cmd    *exec.Cmd
	out    *tail
	exited chan struct{} // closed when the process has exited
	once   sync.Once
}

// shared is the server of Require.
var shared emulator.Shared[*Server]

// Require returns the DynamoDB Local shared by the tests of one test
// binary, starting it on first use, and points the AWS SDK's environment at
// it: AWS_ENDPOINT_URL_DYNAMODB, region and dummy credentials. Stop it from
// TestMain with Stop.
//
// When java or npm is missing it fails t if SLOTQ_REQUIRE_LOCAL_AWS=1 and
// skips t otherwise; when the server fails to start for any other reason it
// fails t.
func Require(t testing.TB) *Server {
	t.Helper()
	s, err := shared.Get(func() (*Server, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		return Start(ctx)
	})
	if err != nil {
		if errors.Is(err, ErrMissingTool) && os.Getenv(RequireEnv) != "1" {
			t.Skipf("DynamoDB Local not available (set %s=1 to fail instead): %v", RequireEnv, err)
		}
		t.Fatalf("DynamoDB Local is required: %v", err)
	}
	emulator.SetEnv(t, s)
	return s
}

// Stop stops the shared server, if one was started. Call it from TestMain.
func Stop() { shared.Stop() }

// Env returns the environment that points the AWS SDK's DynamoDB client at
// the server. It sets only the DynamoDB endpoint, so that SQS can point
// elsewhere (internal/dev/motoserver sets AWS_ENDPOINT_URL_SQS).
func (s *Server) Env() map[string]string {
	return emulator.Env(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": s.Endpoint})
}

// Java finds the java command: $JAVA_HOME/bin/java, then PATH.
func Java() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		p := filepath.Join(h, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: java is not on PATH; DynamoDB Local needs Java 17 (Debian: apt-get install openjdk-17-jre-headless)", ErrMissingTool)
	}
	return p, nil
}

// Start fetches DynamoDB Local if it is not in the cache yet (see Install),
// starts it on a free loopback port and waits until it answers. ctx bounds
// the fetch and the wait, not the server's life: Close stops it.
func Start(ctx context.Context) (*Server, error) { return StartOn(ctx, 0) }

// StartOn is Start on the given port; 0 picks a free one.
func StartOn(ctx context.Context, port int) (*Server, error) {
	java, err := Java()
	if err != nil {
		return nil, err
	}
	dir, err := Install(ctx)
	if err != nil {
		return nil, err
	}
	if port != 0 {
		return start(ctx, java, dir, port)
	}
	// Another process may take the free port before java binds it; try
	// again on a new one.
	for attempt := 1; ; attempt++ {
		port, err := emulator.FreePort()
		if err != nil {
			return nil, err
		}
		s, err := start(ctx, java, dir, port)
		if err == nil || attempt == 3 || ctx.Err() != nil || !errors.Is(err, errExited) {
			return s, err
		}
	}
}

var errExited = errors.New("DynamoDB Local exited")

func start(ctx context.Context, java, dir string, port int) (*Server, error) {
	cmd := exec.Command(java,
		"-Djava.library.path=./DynamoDBLocal_lib",
		"-jar", "DynamoDBLocal.jar",
		"-inMemory", "-sharedDb", "-disableTelemetry",
		"-port", fmt.Sprint(port))
	cmd.Dir = dir
	out := &tail{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, out: out, exited: make(chan struct{})}

	// The parent-death signal (Linux) goes to the child when the thread
	// that started it ends, not the process: start it from a thread that
	// lives until the child has exited.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start DynamoDB Local: %w", err)
	}

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	client := dynamodb.New(dynamodb.Options{
		BaseEndpoint:     aws.String(s.Endpoint),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		RetryMaxAttempts: 1,
	})
	for {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := client.ListTables(actx, &dynamodb.ListTablesInput{})
		acancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%w before answering on %s: %s", errExited, s.Endpoint, out.String())
		case <-ctx.Done():
			s.Close()
			return nil, fmt.Errorf("DynamoDB Local did not answer on %s within %s: %v; output: %s", s.Endpoint, startTimeout, err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops the server and waits for its process to exit.
func (s *Server) Close() {
	s.once.Do(func() {
		if s.cmd.Process != nil {
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// tail keeps the last max bytes written to it: the server's output, shown
// when it fails to start.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := strings.TrimSpace(string(t.b)); s != "" {
		return s
	}
	return "(no output)"
}

// Quiet is a dynamodb.Options function for clients of DynamoDB Local: it
// turns off the check of responses against their CRC32 header, which
// DynamoDB Local gets wrong on some error responses (a failed condition,
// say): the SDK would log a warning for each. It changes nothing else.
func Quiet(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true }
