package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/metrics"
	"github.com/slotq/slotq/internal/slot"
)

// sent keeps the messages the engine sends, to deliver them by hand.
type sent struct {
	*memstore.Transport
	mu   sync.Mutex
	msgs []engine.Message
}

func (s *sent) Send(ctx context.Context, msgs []engine.Message) error {
	s.mu.Lock()
	s.msgs = append(s.msgs, msgs...)
	s.mu.Unlock()
	return s.Transport.Send(ctx, msgs)
}

type okRunner struct{}

func (okRunner) Run(context.Context, *job.Job, slot.Config) error { return nil }

// After a batch the handler writes the queue's EMF line through its log:
// the _aws metadata, the Queue dimension (per-queue metrics on), one start
// whose lateness is the job's start minus its slot (the target's start,
// within the skew after the start the gate reserved), one success.
func TestHandleWritesMetrics(t *testing.T) {
	ctx := context.Background()
	var logs strings.Builder
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	rec := metrics.New(metrics.Options{Namespace: "slotq/test", Dimension: metrics.DefaultDimension, Logger: log})
	tr := &sent{Transport: memstore.NewTransport(memstore.TransportOptions{})}
	// A lead and a skew that a loaded test host's scheduling keeps within
	// (real time here): a worker later than the skew gives its slot up.
	eng := testenv.NewEngine(t, engine.Options{Transport: tr, Runner: okRunner{}, Observer: rec, Lead: 100 * time.Millisecond})
	const skew = 200 * time.Millisecond
	if _, err := eng.CreateQueue(ctx, "emails", slot.Config{Interval: time.Second, Skew: skew}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "emails", Jobs: []job.Spec{{ID: "welcome-1", Kind: "k"}}}); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(tr.msgs[0].Envelope)
	h := &Handler{Engine: eng, Log: log, Metrics: rec}
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := h.Handle(hctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: string(body)}}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v, %v", resp, err)
	}
	j, err := eng.Job(ctx, job.Ref{Queue: "emails", ID: "welcome-1"})
	if err != nil || j.Status != job.Succeeded {
		t.Fatalf("job %s, %v", j.Status, err)
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == metrics.Message {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no EMF line in:\n%s", logs.String())
	}
	aws, _ := line["_aws"].(map[string]any)
	cwm, _ := aws["CloudWatchMetrics"].([]any)
	if aws["Timestamp"] == nil || len(cwm) != 1 || cwm[0].(map[string]any)["Namespace"] != "slotq/test" {
		t.Errorf("_aws %v", line["_aws"])
	}
	want := float64(j.StartedAt.Sub(j.SlotAt).Microseconds()) / 1000
	if line["Queue"] != "emails" || line[metrics.Starts] != 1.0 || line[metrics.Succeeded] != 1.0 {
		t.Errorf("line %v", line)
	}
	// The record's start is the one the gate reserved; the metric's is
	// when the target began, after the worker woke: within the queue's
	// skew (a worker that wakes later gives its slot up).
	ms := float64(skew.Microseconds()) / 1000
	if got, _ := line[metrics.StartLateness].(float64); got < want-0.001 || got > want+ms {
		t.Errorf("StartLateness %v, want start − slot: at least %v (the reserved start), within the skew %vms of it", line[metrics.StartLateness], want, ms)
	}
}
