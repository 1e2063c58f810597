package resume

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/sample"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/metrics"
)

func TestHandleSampleEvent(t *testing.T) {
	b := sample.Event(t, "resume-schedule.json")
	st := memstore.New(memstore.Options{})
	eng := testenv.NewEngine(t, engine.Options{State: st})
	ctx := context.Background()
	if _, err := eng.CreateQueue(ctx, "emails", engine.Queue{}.Config); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Pause(ctx, "emails", time.Now().Add(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)

	var logs strings.Builder
	h := &Handler{Engine: eng, Log: slog.New(slog.NewJSONHandler(&logs, nil))}
	rep, err := h.Handle(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Queues != 1 || rep.Lifted != 1 {
		t.Errorf("report %+v, want 1 queue with its pause lifted", rep)
	}
	if !strings.Contains(logs.String(), `"lifted":1`) {
		t.Errorf("the report was not logged: %s", logs.String())
	}
	out, _ := json.Marshal(rep)
	if !strings.Contains(string(out), `"released"`) {
		t.Errorf("report JSON %s", out)
	}
}

type failing struct{}

func (failing) Resume(context.Context) (engine.ResumeReport, error) {
	return engine.ResumeReport{Queues: 2, Released: 1}, errors.New("queue b: throttled")
}

func TestHandleFailure(t *testing.T) {
	var logs strings.Builder
	h := &Handler{Engine: failing{}, Log: slog.New(slog.NewJSONHandler(&logs, nil))}
	rep, err := h.Handle(context.Background(), json.RawMessage(`{}`))
	if err == nil || rep.Released != 1 {
		t.Errorf("got %+v, %v; want the partial report and the error", rep, err)
	}
	if !strings.Contains(logs.String(), "throttled") {
		t.Errorf("the error was not logged: %s", logs.String())
	}
}

// A run writes each queue's figures as an EMF line through the handler's
// log: the lifted pause, the waiting jobs, the parked ones, the lag — with
// per-queue metrics on (a queue dimension, and the figures of every
// queue), as lambdafn sets them up when SLOTQ_METRICS_DIMENSION is set.
func TestHandleWritesMetrics(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	var logs strings.Builder
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	rec := metrics.New(metrics.Options{Logger: log, Dimension: metrics.DefaultDimension})
	eng := testenv.NewEngine(t, engine.Options{State: st, Observer: rec, Figures: true})
	far := time.Now().Add(time.Hour)
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "emails", Jobs: []job.Spec{{ID: "later", Kind: "k", NotBefore: &far}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Pause(ctx, "emails", time.Now().Add(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	h := &Handler{Engine: eng, Log: log, Metrics: rec}
	if _, err := h.Handle(ctx, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == metrics.Message && m["Queue"] != nil {
			line = m
		}
	}
	if line == nil || line["_aws"] == nil {
		t.Fatalf("no EMF line in:\n%s", logs.String())
	}
	// The job scheduled an hour ahead is out of line: parked, not waiting
	// in line.
	for k, want := range map[string]any{"Queue": "emails", metrics.PausesLifted: 1.0, metrics.Waiting: 0.0, metrics.ParkedJobs: 1.0, metrics.Lag: 0.0} {
		if line[k] != want {
			t.Errorf("%s = %v, want %v (%v)", k, line[k], want, line)
		}
	}
}

// backlogged is a resume run that left due entries and steps a rebuild.
type backlogged struct{}

func (backlogged) Resume(context.Context) (engine.ResumeReport, error) {
	return engine.ResumeReport{Due: 10, Released: 3, Backlog: 7,
		Reindex: &engine.ReindexProgress{QueuesDone: 2, QueuesLeft: 3, Queue: "big", Ticket: 4200, Jobs: 4200}}, nil
}

// A run's backlog and the progress of a rebuild under way are logged and
// published as metrics of the stack (no queue, no dimension), so that an
// alarm sees them.
func TestHandlePublishesBacklogAndReindex(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	rec := metrics.New(metrics.Options{Logger: log, Dimension: metrics.DefaultDimension})
	h := &Handler{Engine: backlogged{}, Log: log, Metrics: rec}
	if _, err := h.Handle(context.Background(), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	var emf, done map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		switch m["msg"] {
		case metrics.Message:
			emf = m
		case "resume done":
			done = m
		}
	}
	if emf == nil || emf[metrics.ResumeBacklog] != 7.0 || emf[metrics.ReindexQueuesLeft] != 3.0 || emf["Queue"] != nil {
		t.Fatalf("stack EMF line %v; want ResumeBacklog 7, ReindexQueuesLeft 3, no queue", emf)
	}
	dims := emf["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"]
	if b, _ := json.Marshal(dims); string(b) != "[[]]" {
		t.Errorf("stack metrics published under dimensions %s, want none", b)
	}
	re, _ := done["reindex"].(map[string]any)
	if done == nil || done["backlog"] != 7.0 || re == nil || re["queues_left"] != 3.0 || re["queue"] != "big" {
		t.Errorf("resume done logged %v; want its backlog and the reindex progress", done)
	}
}

// A run that left no backlog and rebuilt nothing publishes no stack
// metric: an idle stack pays for none.
func TestHandleIdlePublishesNothing(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	rec := metrics.New(metrics.Options{Logger: log})
	eng := testenv.NewEngine(t, engine.Options{State: memstore.New(memstore.Options{}), Observer: rec})
	h := &Handler{Engine: eng, Log: log, Metrics: rec}
	if _, err := h.Handle(context.Background(), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), `"_aws"`) {
		t.Errorf("an idle run published metrics:\n%s", logs.String())
	}
}
