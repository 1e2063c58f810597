package lambdahost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/local/lambdahost"
)

var echoPath string

func TestMain(m *testing.M) { testenv.Main(m, testenv.Setup(buildEcho)) }

// buildEcho builds testdata/echo into echoPath, in a temporary folder it
// removes when the tests end.
func buildEcho() (undo func(), err error) {
	dir, err := os.MkdirTemp("", "lambdahost")
	if err != nil {
		return nil, err
	}
	undo = func() { os.RemoveAll(dir) }
	echoPath = filepath.Join(dir, "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", echoPath, "./testdata/echo")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return undo, fmt.Errorf("build echo bootstrap: %w\n%s", err, out)
	}
	return undo, nil
}

func start(t *testing.T, fns ...lambdahost.Function) (*lambdahost.Host, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	h, err := lambdahost.Start(fns, lambdahost.Options{Output: &out, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, &out
}

func echo(name string, env map[string]string, timeout time.Duration) lambdahost.Function {
	return lambdahost.Function{Name: name, Aliases: []string{"stack-" + name}, Path: echoPath, Env: env, Timeout: timeout}
}

func TestInvoke(t *testing.T) {
	h, _ := start(t, echo("Echo", map[string]string{"GREETING": "hello"}, 2*time.Second))
	ctx := context.Background()
	tests := []struct {
		name     string
		event    string
		fnErr    bool
		contains string
	}{
		{"answer", `{"say":"hi"}`, false, `"say":"hi"`},
		{"function env", `{"env":"GREETING"}`, false, `"env":"hello"`},
		{"runtime env", `{"env":"AWS_LAMBDA_FUNCTION_NAME"}`, false, `"env":"Echo"`},
		{"arn header", `{}`, false, `"arn":"arn:aws:lambda:`},
		{"handler error", `{"fail":"boom"}`, true, `"errorMessage":"boom"`},
		{"after an error the process serves again", `{"say":"again"}`, false, `"say":"again"`},
		{"bad event", `[1,2]`, true, `errorMessage`},
		{"process exit", `{"exit":true}`, true, `Runtime.ExitError`},
		{"restarted after exit", `{"say":"back"}`, false, `"say":"back"`},
		{"timeout", `{"sleep_ms":5000}`, true, `Task timed out after 2.00 seconds`},
		{"restarted after timeout", `{"say":"fresh"}`, false, `"say":"fresh"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := h.Invoke(ctx, "Echo", []byte(tt.event))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.FunctionError != ""; got != tt.fnErr {
				t.Errorf("function error %q, want error %v (payload %s)", res.FunctionError, tt.fnErr, res.Payload)
			}
			if !strings.Contains(string(res.Payload), tt.contains) {
				t.Errorf("payload %s does not contain %s", res.Payload, tt.contains)
			}
		})
	}
}

func TestDeadlineAndRequestID(t *testing.T) {
	h, _ := start(t, echo("Echo", nil, 5*time.Second))
	res, err := h.Invoke(context.Background(), "stack-Echo", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		RequestID  string `json:"request_id"`
		DeadlineIn int64  `json:"deadline_in_ms"`
	}
	if err := json.Unmarshal(res.Payload, &a); err != nil {
		t.Fatal(err)
	}
	if a.RequestID != res.RequestID || a.RequestID == "" {
		t.Errorf("request id %q seen by the function, %q by the caller", a.RequestID, res.RequestID)
	}
	if a.DeadlineIn < 4000 || a.DeadlineIn > 5000 {
		t.Errorf("deadline %dms away, want about 5s", a.DeadlineIn)
	}
}

func TestInitFailure(t *testing.T) {
	h, out := start(t, echo("Broken", map[string]string{"ECHO_INIT_FAIL": "1"}, time.Second))
	res, err := h.Invoke(context.Background(), "Broken", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.FunctionError != "Unhandled" || !strings.Contains(string(res.Payload), "exit status 3") {
		t.Errorf("got %q %s, want an exit error", res.FunctionError, res.Payload)
	}
	if !strings.Contains(out.String(), "ECHO_INIT_FAIL is set") {
		t.Errorf("the process's output was not passed on: %q", out.String())
	}
}

// The Invoke API answers the AWS SDK as Lambda does.
func TestInvokeAPIWithSDK(t *testing.T) {
	h, _ := start(t, echo("Echo", nil, 2*time.Second))
	client := lambda.New(lambda.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(h.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	ctx := context.Background()

	out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("Echo"), Payload: []byte(`{"say":"sdk"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if out.FunctionError != nil || !strings.Contains(string(out.Payload), `"say":"sdk"`) {
		t.Errorf("got %v %s", out.FunctionError, out.Payload)
	}

	out, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(h.ARN("stack-Echo")), Payload: []byte(`{"fail":"nope"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.FunctionError) != "Unhandled" || !strings.Contains(string(out.Payload), "nope") {
		t.Errorf("got %v %s, want an Unhandled function error", aws.ToString(out.FunctionError), out.Payload)
	}

	_, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("Missing")})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("unknown function: got %v, want ResourceNotFoundException", err)
	}

	_, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("Echo"), Payload: []byte(`{"say":`)})
	var bad *types.InvalidRequestContentException
	if !errors.As(err, &bad) {
		t.Errorf("payload not JSON: got %v, want InvalidRequestContentException", err)
	}

	ev, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("Echo"), InvocationType: types.InvocationTypeEvent, Payload: []byte(`{}`)})
	if err != nil || ev.StatusCode != 202 {
		t.Errorf("async invoke: status %v, %v", ev, err)
	}
}

// PeakRSS is the function's own memory, not the host's: a process the
// host starts shares the host's memory until it execs, and its exit's
// rusage counts that too. Here the host holds 256 MB and the function
// uses 40 MB.
func TestPeakRSS(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("PeakRSS is read from /proc")
	}
	ballast := make([]byte, 256<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	h, _ := start(t, echo("Echo", nil, 10*time.Second))
	res, err := h.Invoke(context.Background(), "Echo", []byte(`{"alloc_mb":40}`))
	if err != nil || res.FunctionError != "" {
		t.Fatalf("invoke: %v %s", err, res.Payload)
	}
	h.Close()
	goruntime.KeepAlive(ballast)
	peak := h.PeakRSS("Echo")
	if peak < 40<<20 || peak > 128<<20 {
		t.Errorf("peak RSS %.1f MB; want the function's 40 MB and its runtime, not the host's 256 MB", float64(peak)/(1<<20))
	}
	t.Logf("peak RSS %.1f MB", float64(peak)/(1<<20))
}
