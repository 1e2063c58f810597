package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/internal/buildinfo"
	"github.com/slotq/slotq/internal/dev/sample"
	"github.com/slotq/slotq/internal/dispatch"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

func sampleEvent(t *testing.T, name string) events.SQSEvent {
	t.Helper()
	b := sample.Event(t, name)
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// fakeWorker records the envelopes it is given and fails those named in fail.
type fakeWorker struct {
	mu   sync.Mutex
	seen []string
	fail map[string]bool
}

func (f *fakeWorker) Work(ctx context.Context, env job.Envelope) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, env.JobID)
	if _, ok := ctx.Deadline(); !ok {
		return errors.New("no deadline on the context")
	}
	if f.fail[env.JobID] {
		return errors.New("state store unavailable")
	}
	return nil
}

func TestHandleSampleEvent(t *testing.T) {
	ev := sampleEvent(t, "worker-sqs.json")
	tests := []struct {
		name     string
		fail     map[string]bool
		failures []string
	}{
		{"all done", nil, nil},
		{"one fails", map[string]bool{"sample-2": true}, []string{"059f36b4-87a3-44ab-83d2-661975830a7d"}},
		{"all fail", map[string]bool{"sample-1": true, "sample-2": true},
			[]string{"2e1424d4-f796-459a-8184-9c92662be6da", "059f36b4-87a3-44ab-83d2-661975830a7d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &fakeWorker{fail: tt.fail}
			h := &Handler{Engine: w, Log: slog.New(slog.DiscardHandler)}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp, err := h.Handle(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			// Slot order, though the event lists sample-2 first; the
			// undecodable record is dropped, not failed.
			if want := []string{"sample-1", "sample-2"}; !slices.Equal(w.seen, want) {
				t.Errorf("worked %v, want %v", w.seen, want)
			}
			var got []string
			for _, f := range resp.BatchItemFailures {
				got = append(got, f.ItemIdentifier)
			}
			if !slices.Equal(got, tt.failures) {
				t.Errorf("failures %v, want %v", got, tt.failures)
			}
			b, _ := json.Marshal(resp)
			var wire map[string][]map[string]string
			if err := json.Unmarshal(b, &wire); err != nil || wire["batchItemFailures"] == nil {
				t.Errorf("response %s lacks batchItemFailures", b)
			}
		})
	}
}

// The first invocation logs what the worker was built from, as slotq
// --version says it; later ones do not.
func TestFirstInvocationLogsVersion(t *testing.T) {
	ev := sampleEvent(t, "worker-sqs.json")
	var out strings.Builder
	h := &Handler{Engine: &fakeWorker{}, Log: slog.New(slog.NewJSONHandler(&out, nil))}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 {
		if _, err := h.Handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	var lines []map[string]any
	for line := range strings.Lines(out.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if v, ok := m["version"]; ok {
			lines = append(lines, m)
			if v != buildinfo.String() {
				t.Errorf("version %q, want %q", v, buildinfo.String())
			}
		}
	}
	if len(lines) != 1 {
		t.Errorf("%d lines with the version in two invocations, want 1:\n%s", len(lines), out.String())
	}
}

// The built-in echo kind logs the job's payload and succeeds: the sample
// events use it, so every sample that should succeed does.
func TestEchoKind(t *testing.T) {
	var logs strings.Builder
	m := Kinds(slog.New(slog.NewJSONHandler(&logs, nil)))
	if !m.Has(Echo) {
		t.Fatal("echo is not registered")
	}
	d := &dispatch.Dispatcher{Mux: m}
	j := &job.Job{Queue: "emails", ID: "welcome-42", Ticket: 1, Attempt: 1, Kind: Echo, Payload: json.RawMessage(`{"to":"ada@example.com"}`)}
	if err := d.Run(context.Background(), j, slot.Config{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"payload":{"to":"ada@example.com"}`) || !strings.Contains(logs.String(), `"job_id":"welcome-42"`) {
		t.Errorf("log %s does not show the payload", logs.String())
	}
}
