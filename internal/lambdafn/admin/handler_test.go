package admin

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/smithy-go"

	"github.com/slotq/slotq/internal/dev/sample"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/metrics"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/internal/startlog"
	"github.com/slotq/slotq/pkg/api"
)

func event(t *testing.T, name string) json.RawMessage { return sample.Event(t, name) }

func newHandler() (*Handler, *engine.Engine) {
	return newHandlerAt(nil)
}

// newHandlerAt is newHandler with an engine whose clock is now (nil: the
// real one).
func newHandlerAt(now func() time.Time) (*Handler, *engine.Engine) {
	st := memstore.New(memstore.Options{})
	eng := engine.New(engine.Options{State: st, Transport: memstore.NewTransport(memstore.TransportOptions{}), Now: now})
	return &Handler{Engine: eng, Defaults: slot.Config{Interval: 3 * time.Second}}, eng
}

// newEmbedded is a handler without defaults on the embedded backend, with
// its store and transport for a test to read back.
func newEmbedded() (*Handler, *engine.Engine, *memstore.Store, *memstore.Transport) {
	st := memstore.New(memstore.Options{})
	tr := memstore.NewTransport(memstore.TransportOptions{})
	eng := engine.New(engine.Options{State: st, Transport: tr})
	return &Handler{Engine: eng}, eng, st, tr
}

// wantRefused handles body and fails unless h answers the error code on
// field (an error of the function itself is fatal).
func wantRefused(t *testing.T, h *Handler, body, code, field string) Response {
	t.Helper()
	r, err := h.Handle(context.Background(), json.RawMessage(body))
	if err != nil {
		t.Fatalf("function error %v; want an error answer", err)
	}
	if r.Error == nil || r.Error.Code != code || r.Error.Field != field {
		t.Fatalf("got %+v, want %s on %s", r.Error, code, field)
	}
	return r
}

// wantRefusedWritingNothing is wantRefused for a call that must also
// write nothing (contents reads what the stores hold, the same before
// and after) and answer in words, not Go.
func wantRefusedWritingNothing(t *testing.T, h *Handler, body, code, field string, contents func() any) {
	t.Helper()
	before := contents()
	r := wantRefused(t, h, body, code, field)
	if strings.Contains(r.Error.Message, "slot.") || strings.Contains(r.Error.Message, "json:") {
		t.Errorf("message %q speaks Go", r.Error.Message)
	}
	if after := contents(); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused call wrote:\nbefore %+v\nafter  %+v", before, after)
	}
}

// handleSample handles sample event name and fails unless h answers it
// without an error.
func handleSample(t *testing.T, h *Handler, name string) Response {
	t.Helper()
	r, err := h.Handle(context.Background(), event(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if r.Error != nil {
		t.Fatalf("error %+v", r.Error)
	}
	return r
}

// The sample events, in the order an operator would use them.
func TestHandleSampleEvents(t *testing.T) {
	// The clock stands still: no worker runs here, and a queue that
	// books its starts counts a line job whose slot has come as started
	// (engine.Queue.Settled); the samples' figures are those of a line
	// not yet due.
	t0 := time.Now()
	h, eng := newHandlerAt(func() time.Time { return t0 })
	ctx := context.Background()
	steps := []struct {
		event string
		check func(t *testing.T, r Response)
	}{
		{"admin-create.json", func(t *testing.T, r Response) {
			if r.Queue == nil || r.Queue.Config.Interval != 2*time.Second || r.Queue.Config.MaxAttempts != 5 {
				t.Errorf("queue %+v", r.Queue)
			}
		}},
		{"admin-configure.json", func(t *testing.T, r Response) {
			if r.Queue == nil || r.Queue.Config.Interval != time.Second {
				t.Errorf("queue %+v", r.Queue)
			}
		}},
		{"admin-pause.json", func(t *testing.T, r Response) {
			if r.State == nil || !r.State.Paused || r.State.PausedUntil.Year() != 2099 {
				t.Errorf("state %+v", r.State)
			}
		}},
		{"admin-resume.json", func(t *testing.T, r Response) {
			if r.Report == nil {
				t.Errorf("no report")
			}
		}},
		{"admin-stats.json", func(t *testing.T, r Response) {
			// One job in line; the other, scheduled an hour ahead, is
			// out of line: parked, not waiting in line.
			if r.Stats == nil || r.Stats.Waiting != 1 || r.Stats.Parked != 1 || r.Stats.State.Paused {
				t.Errorf("stats %+v", r.Stats)
			}
		}},
		{"admin-starts.json", func(t *testing.T, r Response) {
			// No source of starts in this handler: an empty list, and
			// why.
			if r.Starts == nil || len(r.Starts) != 0 || !strings.Contains(r.StartsError, "SLOTQ_WORKER_LOG_GROUP") {
				t.Errorf("starts %+v, starts_error %q", r.Starts, r.StartsError)
			}
		}},
		{"admin-list.json", func(t *testing.T, r Response) {
			if len(r.Jobs) != 1 || r.Jobs[0].ID != "digest-7" {
				t.Errorf("jobs %+v", r.Jobs)
			}
		}},
		{"admin-get.json", func(t *testing.T, r Response) {
			if r.Job == nil || r.Job.Status != job.Queued {
				t.Errorf("job %+v", r.Job)
			}
		}},
		{"admin-cancel.json", func(t *testing.T, r Response) {
			if r.Job == nil || r.Job.Status != job.Cancelled {
				t.Errorf("job %+v", r.Job)
			}
		}},
		{"admin-retry.json", func(t *testing.T, r Response) {
			// The cancelled job, run again: a new ticket, queued.
			if r.Retried == nil || len(r.Retried.Jobs) != 1 || r.Retried.Jobs[0].JobID != "welcome-42" ||
				r.Retried.Jobs[0].Status != job.Queued || r.Retried.Jobs[0].Ticket != 3 {
				t.Errorf("retried %+v", r.Retried)
			}
			j, err := eng.Job(ctx, job.Ref{Queue: "emails", ID: "welcome-42"})
			if err != nil || j.Reruns != 1 || j.History[len(j.History)-1].Reason != "ops@example.com" {
				t.Errorf("job %+v, %v; want a rerun by ops@example.com", j, err)
			}
		}},
		{"admin-retry-failed.json", func(t *testing.T, r Response) {
			// No job failed: none to run again, and no next page.
			if r.Retried == nil || len(r.Retried.Jobs) != 0 || r.Retried.NextAfter != 0 || r.Retried.UpTo != 3 {
				t.Errorf("retried %+v", r.Retried)
			}
		}},
		{"admin-purge.json", func(t *testing.T, r Response) {
			if r.Cancelled == nil || *r.Cancelled != 3 { // tickets covered: the cancelled job's, the parked one and the retried one
				t.Errorf("cancelled %v", r.Cancelled)
			}
		}},
		{"admin-delete.json", func(t *testing.T, r Response) {
			if r.Cancelled == nil {
				t.Errorf("cancelled %v", r.Cancelled)
			}
		}},
	}
	for _, s := range steps {
		if s.event == "admin-stats.json" {
			// A job for stats, get and cancel to find, and one parked
			// for tomorrow for list.
			_, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "emails", Job: &job.Spec{ID: "welcome-42", Kind: "send-email"}})
			if err != nil {
				t.Fatal(err)
			}
			tomorrow := time.Now().Add(24 * time.Hour)
			_, err = eng.Enqueue(ctx, job.EnqueueRequest{Queue: "emails", Job: &job.Spec{ID: "digest-7", Kind: "send-email", NotBefore: &tomorrow}})
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Run(s.event, func(t *testing.T) { s.check(t, handleSample(t, h, s.event)) })
	}
	if _, err := eng.Queue(ctx, "emails"); err == nil {
		t.Error("the queue survived delete")
	}
}

func TestErrors(t *testing.T) {
	h, eng := newHandler()
	ctx := context.Background()
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &job.Spec{ID: "done", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CancelJob(ctx, job.Ref{Queue: "q", ID: "done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Job: &job.Spec{ID: "waits", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body, code, field string
	}{
		{"unknown op", `{"op":"explode","queue":"q"}`, "invalid_op", "op"},
		{"unknown field", `{"op":"stats","queue":"q","verbose":true}`, "unknown_field", "verbose"},
		{"unknown config field", `{"op":"create","queue":"r","config":{"intervall":"1s"}}`, "unknown_field", "config.intervall"},
		{"bad interval", `{"op":"create","queue":"r","config":{"interval":"-1s"}}`, "invalid_interval", "config.interval"},
		{"configure without config", `{"op":"configure","queue":"q"}`, "missing_config", "config"},
		{"exists", `{"op":"create","queue":"q"}`, "queue_exists", "queue"},
		{"queue not found", `{"op":"stats","queue":"nope"}`, "queue_not_found", "queue"},
		{"job not found", `{"op":"get","queue":"q","job_id":"nope"}`, "job_not_found", "job_id"},
		{"not waiting", `{"op":"cancel","queue":"q","job_id":"done"}`, "not_waiting", "job_id"},
		{"retry a waiting job", `{"op":"retry","queue":"q","job_ids":["done","waits"]}`, "not_retryable", "job_ids[1]"},
		{"retry a missing job", `{"op":"retry","queue":"q","job_ids":["done","nope"]}`, "job_not_found", "job_ids[1]"},
		{"retry by job_id", `{"op":"retry","queue":"q","job_id":"done"}`, "invalid_retry", "job_id"},
		{"retry nothing", `{"op":"retry","queue":"q"}`, "invalid_retry", "job_ids"},
		{"retry ids as a string", `{"op":"retry","queue":"q","job_ids":"done"}`, "invalid_type", "job_ids"},
		{"retry a bad by", `{"op":"retry","queue":"q","job_ids":["done"],"by":"x\ny"}`, "invalid_by", "by"},
		{"redrive a queue", `{"op":"redrive","queue":"q"}`, "invalid_redrive", "queue"},
		{"redrive without a dead-letter queue", `{"op":"redrive"}`, "no_dead_letter_queue", "op"},
		{"redrive too many", `{"op":"redrive","limit":1001}`, "invalid_limit", "limit"},
		{"retry a page too large", `{"op":"retry","queue":"q","failed":true,"limit":501}`, "invalid_limit", "limit"},
		{"bad status", `{"op":"list","queue":"q","status":"sleeping"}`, "invalid_status", "status"},
		{"pause in the past", `{"op":"pause","queue":"q","until":"2001-01-01T00:00:00Z"}`, "invalid_until", "until"},
		{"bad queue name", `{"op":"pause","queue":"a b"}`, "invalid_queue", "queue"},
		{"starts too far back", `{"op":"starts","queue":"q","since":"2001-01-01T00:00:00Z"}`, "invalid_since", "since"},
		{"starts since not a time", `{"op":"starts","queue":"q","since":"yesterday"}`, "invalid_time", "since"},
		{"starts too many", `{"op":"starts","queue":"q","limit":1001}`, "invalid_limit", "limit"},
		{"starts a negative limit", `{"op":"starts","queue":"q","limit":-1}`, "invalid_limit", "limit"},
		{"starts of no queue", `{"op":"starts","queue":"nope"}`, "queue_not_found", "queue"},
		{"starts of a bad queue name", `{"op":"starts","queue":"a b"}`, "invalid_queue", "queue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRefused(t, h, tt.body, tt.code, tt.field)
		})
	}
}

// redrive (events/admin-redrive.json) on the embedded transport: a job's
// message that the queue moved to the dead-letter list (received too
// often) goes back to the slot queue, and the job runs from it; a
// finished job's is dropped.
func TestRedriveSample(t *testing.T) {
	tr := memstore.NewTransport(memstore.TransportOptions{MaxReceiveCount: 2, VisibilityTimeout: time.Millisecond})
	store := memstore.New(memstore.Options{})
	eng := engine.New(engine.Options{State: store, Transport: tr})
	h := &Handler{Engine: eng, DeadLetters: tr.DeadLetterQueue()}
	ctx := context.Background()
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Jobs: []job.Spec{{ID: "a", Kind: "k"}, {ID: "b", Kind: "k"}}}); err != nil {
		t.Fatal(err)
	}
	for len(tr.DeadLetters()) < 2 {
		if _, err := tr.Receive(ctx, 10, 10*time.Millisecond, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	b, _ := eng.Job(ctx, job.Ref{Queue: "q", ID: "b"})
	from := b.Version()
	b.Status = job.Cancelled
	if err := store.UpdateJob(ctx, b, from); err != nil {
		t.Fatal(err)
	}
	r, err := h.Handle(ctx, event(t, "admin-redrive.json"))
	if err != nil || r.Error != nil || r.Redrive == nil {
		t.Fatalf("redrive: %+v, %v", r, err)
	}
	if want := (engine.RedriveReport{Received: 2, Redriven: 1, Dropped: 1}); *r.Redrive != want {
		t.Errorf("report %+v, want %+v", *r.Redrive, want)
	}
	ds, err := tr.Receive(ctx, 10, time.Second, time.Minute)
	if err != nil || len(ds) != 1 || ds[0].Envelope.JobID != "a" {
		t.Fatalf("slot queue after the redrive: %+v, %v; want a's message", ds, err)
	}
	if n := len(tr.DeadLetters()); n != 0 {
		t.Errorf("%d dead letters left", n)
	}
}

// create without an interval takes the stack's default, not slot's.
func TestCreateTakesStackDefaults(t *testing.T) {
	h, _ := newHandler()
	r, err := h.Handle(context.Background(), json.RawMessage(`{"op":"create","queue":"q"}`))
	if err != nil || r.Queue == nil || r.Queue.Config.Interval != 3*time.Second {
		t.Errorf("got %+v, %v", r, err)
	}
	r, err = h.Handle(context.Background(), json.RawMessage(`{"op":"list"}`))
	if err != nil || len(r.Queues) != 1 {
		t.Errorf("list queues: got %+v, %v", r, err)
	}
}

// readerFunc is a metrics.ActivityReader.
type readerFunc func(queue string, window time.Duration) (metrics.Activity, error)

func (f readerFunc) Activity(_ context.Context, queue string, window time.Duration) (metrics.Activity, error) {
	return f(queue, window)
}

// stats adds the queue's recent activity from the metrics; when they
// cannot be read it says why and still answers the counters.
func TestStatsActivity(t *testing.T) {
	h, eng := newHandler()
	ctx := context.Background()
	if _, err := eng.CreateQueue(ctx, "q", slot.Config{Interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	p50 := 4.0
	h.Activity = readerFunc(func(queue string, window time.Duration) (metrics.Activity, error) {
		if queue != "q" || window != metrics.DefaultWindow {
			t.Errorf("read activity of %q over %v", queue, window)
		}
		return metrics.Activity{Window: api.Duration(window), Starts: 7, DeadLetters: 1, LatenessP50: &p50}, nil
	})
	r, err := h.Handle(ctx, json.RawMessage(`{"op":"stats","queue":"q"}`))
	if err != nil || r.Stats == nil || r.Activity == nil || r.Activity.Starts != 7 || *r.Activity.LatenessP50 != 4 {
		t.Fatalf("stats: %+v, activity %+v, %v", r.Stats, r.Activity, err)
	}
	h.Activity = readerFunc(func(string, time.Duration) (metrics.Activity, error) {
		return metrics.Activity{}, errors.New("AccessDenied: not authorized to perform cloudwatch:GetMetricData")
	})
	r, err = h.Handle(ctx, json.RawMessage(`{"op":"stats","queue":"q"}`))
	if err != nil || r.Stats == nil || r.Activity != nil || !strings.Contains(r.ActivityError, "AccessDenied") {
		t.Fatalf("stats with unreadable metrics: %+v, activity %+v, error %q, %v", r.Stats, r.Activity, r.ActivityError, err)
	}
	// no_activity reads no metrics: the counters alone.
	h.Activity = readerFunc(func(string, time.Duration) (metrics.Activity, error) {
		t.Error("stats with no_activity read the metrics")
		return metrics.Activity{}, nil
	})
	r, err = h.Handle(ctx, json.RawMessage(`{"op":"stats","queue":"q","no_activity":true}`))
	if err != nil || r.Stats == nil || r.Activity != nil || r.ActivityError != "" {
		t.Fatalf("stats with no_activity: %+v, activity %+v, error %q, %v", r.Stats, r.Activity, r.ActivityError, err)
	}
}

// configure changes the settings it gives and keeps the others; a zero
// that is a setting of its own (max_running 0, targets []) is applied, and
// a list cleared stays cleared, not the stack's default; with "reset":
// true, the settings left out take their defaults.
func TestConfigureKeepsWhatItLeavesOut(t *testing.T) {
	// The stack's defaults, as functions/admin gives them to both.
	d := slot.Config{Interval: 3 * time.Second, Targets: []string{"lambda:default"}}
	h := &Handler{Engine: testenv.NewEngine(t, engine.Options{Defaults: d}), Defaults: d}
	ctx := context.Background()
	do := func(body string) slot.Config {
		t.Helper()
		r, err := h.Handle(ctx, json.RawMessage(body))
		if err != nil || r.Error != nil || r.Queue == nil {
			t.Fatalf("%s: %v %+v", body, err, r.Error)
		}
		return slot.Config(r.Queue.Config)
	}
	do(`{"op":"create","queue":"q","config":{"interval":"750ms","skew":"5ms","max_attempts":7,"backoff":"2s","max_running":3,"targets":["lambda:a"]}}`)
	c := do(`{"op":"configure","queue":"q","config":{"max_attempts":4}}`)
	want := slot.Config{Interval: 750 * time.Millisecond, Skew: 5 * time.Millisecond, MaxAttempts: 4, Backoff: 2 * time.Second,
		MaxBackoff: slot.DefaultMaxBackoff, Retention: slot.DefaultRetention, TargetTimeout: slot.DefaultTargetTimeout,
		MaxRunning: 3, Targets: []string{"lambda:a"}, AllowNetworks: []string{},
		MaxSlowDowns: slot.DefaultMaxSlowDowns, RetryAfterDefault: slot.DefaultRetryAfter}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("configure max_attempts:\n got %+v\nwant %+v", c, want)
	}
	c = do(`{"op":"configure","queue":"q","config":{}}`)
	if !reflect.DeepEqual(c, want) {
		t.Errorf("configure {}:\n got %+v\nwant %+v", c, want)
	}
	c = do(`{"op":"configure","queue":"q","config":{"max_running":0,"targets":[]}}`)
	if c.MaxRunning != 0 || len(c.Targets) != 0 || c.Interval != want.Interval {
		t.Errorf("configure max_running 0, targets []: %+v", c)
	}
	c = do(`{"op":"configure","queue":"q","config":{"backoff":"3s"}}`)
	if len(c.Targets) != 0 || c.Backoff != 3*time.Second {
		t.Errorf("a configure after clearing the targets: %+v; want them still none", c)
	}
	r, err := h.Handle(ctx, json.RawMessage(`{"op":"configure","queue":"q","config":{"interval":"4ms"}}`))
	if err != nil || r.Error == nil || r.Error.Code != "invalid_skew" || r.Error.Field != "config.skew" || !strings.Contains(r.Error.Message, "give a skew too") {
		t.Errorf("configure an interval under the queue's skew: %v %+v; want invalid_skew on config.skew", err, r.Error)
	}
	if c = do(`{"op":"configure","queue":"q","config":{"interval":"4ms","skew":"1ms"}}`); c.Interval != 4*time.Millisecond || c.Skew != time.Millisecond {
		t.Errorf("configure interval and skew: %+v", c)
	}
	c = do(`{"op":"configure","queue":"q","reset":true,"config":{"max_attempts":2}}`)
	if c.Interval != 3*time.Second || c.MaxAttempts != 2 || c.Backoff != slot.DefaultBackoff || !reflect.DeepEqual(c.Targets, []string{"lambda:default"}) {
		t.Errorf("configure with reset: %+v; want the defaults but max_attempts", c)
	}
}

// fakeStarts records what starts asked for and answers with its starts
// or its error.
type fakeStarts struct {
	queue  string
	since  time.Time
	limit  int
	starts []startlog.Start
	err    error
}

func (f *fakeStarts) Starts(_ context.Context, queue string, since time.Time, limit int) ([]startlog.Start, bool, error) {
	f.queue, f.since, f.limit = queue, since, limit
	return f.starts, len(f.starts) >= limit, f.err
}

// starts asks its reader for the window and page the request gives, with
// their defaults, and reports a failed read in starts_error, not as a
// failure.
func TestStarts(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	// The queue was created before every window the test asks about.
	h, eng := newHandlerAt(func() time.Time { return now.Add(-2 * time.Hour) })
	ctx := context.Background()
	if _, err := eng.CreateQueue(ctx, "q", slot.Config{Interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	h.Now = func() time.Time { return now }
	one := startlog.Start{JobID: "j1", Ticket: 1, Attempt: 1, SlotAt: now.Add(-time.Minute), StartedAt: now.Add(-time.Minute), LatenessMS: 0}
	tests := []struct {
		name      string
		body      string
		starts    []startlog.Start
		err       error
		wantSince time.Time
		wantLimit int
		wantMore  bool
		wantError string
	}{
		{"defaults", `{"op":"starts","queue":"q"}`, []startlog.Start{one}, nil, now.Add(-DefaultStartsWindow), DefaultStartsLimit, false, ""},
		{"since and limit", `{"op":"starts","queue":"q","since":"2026-11-22T09:30:00Z","limit":1}`, []startlog.Start{one}, nil,
			now.Add(-30 * time.Minute), 1, true, ""},
		{"an hour back, a little late", `{"op":"starts","queue":"q","since":"2026-11-22T08:59:30Z","limit":1000}`, nil, nil,
			now.Add(-time.Hour - 30*time.Second), MaxStartsLimit, false, ""},
		{"the log cannot be read", `{"op":"starts","queue":"q"}`, nil, errors.New("AccessDeniedException"), now.Add(-DefaultStartsWindow), DefaultStartsLimit, false, "AccessDeniedException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeStarts{starts: tt.starts, err: tt.err}
			h.Starts = f
			r, err := h.Handle(ctx, json.RawMessage(tt.body))
			if err != nil || r.Error != nil {
				t.Fatalf("%v, %+v", err, r.Error)
			}
			if f.queue != "q" || !f.since.Equal(tt.wantSince) || f.limit != tt.wantLimit {
				t.Errorf("asked for %s since %v limit %d, want since %v limit %d", f.queue, f.since, f.limit, tt.wantSince, tt.wantLimit)
			}
			if r.Op != "starts" || r.Starts == nil || len(r.Starts) != len(tt.starts) || r.More != tt.wantMore || r.StartsError != tt.wantError {
				t.Errorf("answered %+v", r)
			}
		})
	}
	// The stack's reader, whose FilterLogEvents is throttled: the
	// answer says so, and is no function error.
	h.Starts = &startlog.Logs{API: throttledLogs{}, LogGroup: "slotq-WorkerLogGroup"}
	r, err := h.Handle(ctx, json.RawMessage(`{"op":"starts","queue":"q"}`))
	if err != nil || r.Error != nil || r.Starts == nil || len(r.Starts) != 0 ||
		!strings.Contains(r.StartsError, "ThrottlingException") || !strings.Contains(r.StartsError, "slotq-WorkerLogGroup") {
		t.Errorf("throttled: %+v, %v", r, err)
	}
	// On the wire: an empty list, not null; starts_error only when set.
	h.Starts = &fakeStarts{}
	r, _ = h.Handle(ctx, json.RawMessage(`{"op":"starts","queue":"q"}`))
	if b, _ := json.Marshal(r); string(b) != `{"op":"starts","starts":[]}` {
		t.Errorf("answer %s", b)
	}
}

// The starts of a queue deleted and created again under its name are
// read from its creation on: the log's earlier starts, with the same
// tickets, are the old queue's.
func TestStartsOfQueueCreatedAgain(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := now.Add(-10 * time.Minute)
	h, eng := newHandlerAt(func() time.Time { return clock })
	h.Now = func() time.Time { return now }
	ctx := context.Background()
	if _, err := eng.CreateQueue(ctx, "q", slot.Config{Interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.DeleteQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	clock = now.Add(-2 * time.Minute)
	if _, err := eng.CreateQueue(ctx, "q", slot.Config{Interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	f := &fakeStarts{}
	h.Starts = f
	if r, err := h.Handle(ctx, json.RawMessage(`{"op":"starts","queue":"q"}`)); err != nil || r.Error != nil {
		t.Fatalf("%v, %+v", err, r.Error)
	}
	if !f.since.Equal(clock) {
		t.Errorf("asked for starts since %v, want the queue's creation again, %v", f.since, clock)
	}
}

type throttledLogs struct{}

func (throttledLogs) FilterLogEvents(context.Context, *cloudwatchlogs.FilterLogEventsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}
}

// create takes a queue's limit in each form (the sample events with a
// rate and a window, and a list of limits) and keeps it alone, without
// the stack's default interval beside it; a bad limit is refused with its
// field's path, and nothing is written.
func TestCreateLimitForms(t *testing.T) {
	h, eng := newHandler()
	ctx := context.Background()
	create := func(t *testing.T, body []byte) slot.Config {
		t.Helper()
		r, err := h.Handle(ctx, body)
		if err != nil || r.Error != nil || r.Queue == nil {
			t.Fatalf("%s: %v %+v", body, err, r.Error)
		}
		return slot.Config(r.Queue.Config)
	}
	perMin := api.Rate{N: 100, Per: time.Minute}
	if c := create(t, event(t, "admin-create-rate.json")); c.Rate != perMin || c.Burst != 10 || c.Interval != 0 || c.LimitList().String() != "rate 100/1m burst 10" {
		t.Errorf("create with a rate: %+v", c)
	}
	if c := create(t, event(t, "admin-create-window.json")); c.Window != (api.Rate{N: 5000, Per: time.Hour}) || c.Interval != 0 || c.LimitList().String() != "window 5000/1h" {
		t.Errorf("create with a window: %+v", c)
	}
	c := create(t, []byte(`{"op":"create","queue":"api","config":{"limits":[{"rate":"10/1s","burst":2},{"window":"1000/1h"}]}}`))
	if got := c.LimitList().String(); got != "rate 10/1s burst 2; window 1000/1h" || c.Interval != 0 {
		t.Errorf("create with limits: %s, %+v", got, c)
	}
	if c := create(t, []byte(`{"op":"create","queue":"plain"}`)); c.LimitList().String() != "interval 3s" {
		t.Errorf("create without a limit: %+v; want the stack's default interval", c)
	}
	before, err := eng.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, config, code, field string
	}{
		{"rate not a rate", `{"rate":"100"}`, "invalid_rate", "config.rate"},
		{"rate too fast", `{"rate":"2000/1s"}`, "invalid_rate", "config.rate"},
		{"burst too large", `{"rate":"100/1m","burst":101}`, "invalid_burst", "config.burst"},
		{"burst alone", `{"burst":5}`, "invalid_burst", "config.burst"},
		{"burst with an interval", `{"interval":"1s","burst":5}`, "invalid_burst", "config.burst"},
		{"rate and window", `{"rate":"100/1m","window":"5000/1h"}`, "invalid_limit", "config.window"},
		{"window too many", `{"window":"100001/24h"}`, "invalid_window", "config.window"},
		{"a limit's burst", `{"limits":[{"rate":"10/1s"},{"rate":"100/1m","burst":101}]}`, "invalid_burst", "config.limits[1].burst"},
		{"a limit of two forms", `{"limits":[{"rate":"10/1s","window":"5/1s"}]}`, "invalid_limit", "config.limits[0]"},
		{"a limit's unknown field", `{"limits":[{"every":"1s"}]}`, "unknown_field", "config.limits[0].every"},
		{"four limits", `{"limits":[{"interval":"1s"},{"rate":"10/1m"},{"window":"5/1h"},{"window":"50/24h"}]}`, "too_many_limits", "config.limits"},
		{"limits beside a rate", `{"rate":"100/1m","limits":[{"window":"5/1h"}]}`, "invalid_limit", "config.limits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRefused(t, h, `{"op":"create","queue":"bad","config":`+tt.config+`}`, tt.code, tt.field)
		})
	}
	after, err := eng.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) {
		t.Errorf("the refusals wrote: queues %+v, before %+v", after, before)
	}
}

// configure with a burst alone changes the burst of the queue's rate; a
// limit in another form replaces the rate whole; a bad one is refused on
// its field and the queue keeps its limit.
func TestConfigureLimitForms(t *testing.T) {
	h, eng := newHandler()
	ctx := context.Background()
	do := func(body string) (slot.Config, *Response) {
		t.Helper()
		r, err := h.Handle(ctx, json.RawMessage(body))
		if err != nil {
			t.Fatal(err)
		}
		if r.Error != nil {
			return slot.Config{}, &r
		}
		return slot.Config(r.Queue.Config), nil
	}
	do(`{"op":"create","queue":"q","config":{"rate":"100/1m","burst":10}}`)
	if c, bad := do(`{"op":"configure","queue":"q","config":{"burst":20}}`); bad != nil || c.LimitList().String() != "rate 100/1m burst 20" {
		t.Errorf("configure burst: %+v %+v", c, bad)
	}
	if c, bad := do(`{"op":"configure","queue":"q","config":{"window":"5000/1h"}}`); bad != nil || c.LimitList().String() != "window 5000/1h" || c.Burst != 0 {
		t.Errorf("configure window: %+v %+v", c, bad)
	}
	for body, field := range map[string]string{
		`{"op":"configure","queue":"q","config":{"burst":5}}`:                                    "config.burst",
		`{"op":"configure","queue":"q","config":{"rate":"1/1s","burst":-1}}`:                     "config.burst",
		`{"op":"configure","queue":"q","config":{"limits":[{"window":"5/1s"},{"rate":"0/1s"}]}}`: "config.limits[1].rate",
		// A repeated unit is refused, not added up to 100/2h.
		`{"op":"configure","queue":"q","config":{"rate":"100/1h1h"}}`: "config.rate",
		// An empty list is not the default: refused, the limit kept.
		`{"op":"configure","queue":"q","config":{"limits":[]}}`: "config.limits",
	} {
		if _, bad := do(body); bad == nil || bad.Error.Field != field {
			t.Errorf("%s: %+v, want an error on %s", body, bad, field)
		}
	}
	q, err := eng.Queue(ctx, "q")
	if err != nil || q.Config.LimitList().String() != "window 5000/1h" {
		t.Errorf("after the refusals: %+v, %v; want the window kept", q.Config, err)
	}
}
