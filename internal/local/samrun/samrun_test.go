package samrun

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/dynamolocal"
	"github.com/slotq/slotq/internal/dev/motoserver"
	"github.com/slotq/slotq/internal/dev/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Invoke builds the real bootstraps and runs them against the endpoints
// the environment names, starting no emulator of its own; a refusal is an
// answer with a function error, not an error.
func TestInvoke(t *testing.T) {
	dynamolocal.Require(t)
	motoserver.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log bytes.Buffer
	o := Options{Template: "../../../template.yaml", StackName: "samrun-test", Log: &log}

	event, err := os.ReadFile("../../../events/enqueue.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Invoke(ctx, o, "EnqueueFunction", event)
	if err != nil {
		t.Fatalf("Invoke: %v\n%s", err, log.String())
	}
	var acc struct {
		Queue string `json:"queue"`
		Jobs  []struct {
			JobID  string `json:"job_id"`
			Ticket int64  `json:"ticket"`
		} `json:"jobs"`
	}
	if res.FunctionError != "" || json.Unmarshal(res.Payload, &acc) != nil || acc.Queue != "emails" ||
		len(acc.Jobs) != 1 || acc.Jobs[0].JobID != "welcome-42" {
		t.Errorf("enqueue answer: %s (function error %q)", res.Payload, res.FunctionError)
	}
	if strings.Contains(log.String(), "starting DynamoDB Local") || strings.Contains(log.String(), "moto_server for SQS") {
		t.Errorf("started an emulator although the environment names endpoints:\n%s", log.String())
	}

	res, err = Invoke(ctx, o, "AdminFunction", []byte(`{"op":"stats","queue":"nope"}`))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if !strings.Contains(string(res.Payload), "queue_not_found") {
		t.Errorf("stats of a missing queue: %s (function error %q)", res.Payload, res.FunctionError)
	}
}

func TestInvokeMissingTemplate(t *testing.T) {
	_, err := Invoke(context.Background(), Options{Template: "nope.yaml", Log: &bytes.Buffer{}}, "EnqueueFunction", []byte("{}"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("got %v", err)
	}
}

// The emulators run in a program built from the template's checkout: it
// prints the environment that points at them, and stopping it stops them.
func TestEmulators(t *testing.T) {
	motoserver.Require(t) // moto_server is there
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log bytes.Buffer
	r := &run{tmpl: "../../../template.yaml", log: &log}
	env, stop, err := r.emulators(ctx, []string{"-sqs"})
	if err != nil {
		stop()
		t.Fatalf("emulators: %v\n%s", err, log.String())
	}
	endpoint := env["AWS_ENDPOINT_URL_SQS"]
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") || env["AWS_ENDPOINT_URL_DYNAMODB"] != "" {
		stop()
		t.Fatalf("env %v: want an SQS endpoint on loopback and no DynamoDB one", env)
	}
	if resp, err := http.Get(endpoint + "/moto-api/"); err != nil {
		stop()
		t.Fatalf("moto_server at %s: %v", endpoint, err)
	} else {
		resp.Body.Close()
	}
	stop()
	if resp, err := http.Get(endpoint + "/moto-api/"); err == nil {
		resp.Body.Close()
		t.Errorf("moto_server at %s still answers after stop", endpoint)
	}
}
