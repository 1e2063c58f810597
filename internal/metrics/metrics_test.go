package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/metrics"
	"github.com/slotq/slotq/internal/slot"
)

// emfLine is an EMF document as CloudWatch reads it.
type emfLine struct {
	AWS struct {
		Timestamp         *int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
	fields map[string]any
}

// decode reads the EMF lines among JSON log lines and checks each against
// the specification's structure: the _aws metadata with a Timestamp and
// one directive; every dimension key and metric name a field of the line,
// dimensions strings, metrics a number or an array of at most 100
// numbers; units CloudWatch knows; the metric names internal/metrics lists.
func decode(t *testing.T, out []byte) []emfLine {
	t.Helper()
	units := map[string]string{}
	for _, m := range metrics.Metrics {
		units[m.Name] = m.Unit
	}
	var lines []emfLine
	for _, raw := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var fields map[string]any
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatalf("not JSON: %s", raw)
		}
		if fields["msg"] != metrics.Message {
			continue
		}
		var l emfLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		l.fields = fields
		if l.AWS.Timestamp == nil || len(l.AWS.CloudWatchMetrics) != 1 {
			t.Fatalf("bad _aws metadata: %s", raw)
		}
		d := l.AWS.CloudWatchMetrics[0]
		if d.Namespace == "" || len(d.Metrics) == 0 || len(d.Dimensions) == 0 {
			t.Fatalf("bad directive: %s", raw)
		}
		for _, set := range d.Dimensions {
			if len(set) > 30 {
				t.Errorf("dimension set of %d keys: %s", len(set), raw)
			}
			for _, k := range set {
				if _, ok := fields[k].(string); !ok {
					t.Errorf("dimension %s is not a string field: %s", k, raw)
				}
			}
		}
		for _, m := range d.Metrics {
			if want, ok := units[m.Name]; !ok || m.Unit != want {
				t.Errorf("metric %s unit %q; want a listed metric, unit %q", m.Name, m.Unit, want)
			}
			switch v := fields[m.Name].(type) {
			case float64:
			case []any:
				if len(v) == 0 || len(v) > metrics.MaxValues {
					t.Errorf("metric %s has %d values: %s", m.Name, len(v), raw)
				}
				for _, x := range v {
					if _, ok := x.(float64); !ok {
						t.Errorf("metric %s value %v is not a number", m.Name, x)
					}
				}
			default:
				t.Errorf("metric %s is %T, want a number or an array: %s", m.Name, v, raw)
			}
		}
		lines = append(lines, l)
	}
	return lines
}

// values returns metric name's values on the lines whose dim is value.
func values(lines []emfLine, dim, value, name string) []float64 {
	var out []float64
	for _, l := range lines {
		if l.fields[dim] != value {
			continue
		}
		switch v := l.fields[name].(type) {
		case float64:
			out = append(out, v)
		case []any:
			for _, x := range v {
				out = append(out, x.(float64))
			}
		}
	}
	return out
}

func sum(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s
}

// startLog is what the test's runner saw: each attempt's start and slot.
type startLog struct {
	mu       sync.Mutex
	lateness []float64
}

func (s *startLog) Run(ctx context.Context, j *job.Job, cfg slot.Config) error {
	s.mu.Lock()
	s.lateness = append(s.lateness, float64(time.Since(j.SlotAt).Microseconds())/1000)
	s.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	switch {
	case j.ID == "flaky" && j.Attempt == 1:
		return errors.New("flaky: first attempt fails")
	case j.ID == "doomed":
		return fmt.Errorf("doomed: %w", attempt.ErrSkipRetry)
	}
	return nil
}

// A worker's run and a resume run, decoded from the EMF lines the
// functions' JSON log output carries: the structure holds, and the values
// are the run's (lateness is start − slot for every start, counts add
// up, the gap between on-time starts is the interval).
func TestWorkerAndResumeLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var out testenv.Buffer // the workers log while the test reads
		log := slog.New(slog.NewJSONHandler(&out, nil))
		rec := metrics.New(metrics.Options{Namespace: "test-ns", Dimension: "Line", Logger: log})
		tr := memstore.NewTransport(memstore.TransportOptions{})
		runs := &startLog{}
		eng := testenv.NewEngine(t, engine.Options{Transport: tr, Runner: runs, Observer: rec, Figures: true})
		iv := slot.Duration(time.Second)
		ids := []string{"a", "b", "flaky", "doomed", "c"}
		var specs []job.Spec
		for _, id := range ids {
			specs = append(specs, job.Spec{ID: id, Kind: "k"})
		}
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Interval: &iv, Jobs: specs}); err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- tr.Run(wctx, 2, eng.Work) }()
		time.Sleep(30 * time.Second)
		stop()
		<-done
		rec.Flush(ctx)
		// A far job: parked, counted by resume.
		far := time.Now().Add(time.Hour)
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Jobs: []job.Spec{{ID: "far", Kind: "k", NotBefore: &far}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		rec.Flush(ctx)

		lines := decode(t, out.Bytes())
		if len(lines) == 0 {
			t.Fatalf("no EMF lines in:\n%s", out.String())
		}
		for _, l := range lines {
			d := l.AWS.CloudWatchMetrics[0]
			if d.Namespace != "test-ns" || !slices.EqualFunc(d.Dimensions, [][]string{{"Line"}, {}}, slices.Equal) {
				t.Errorf("namespace %q, dimensions %v; want test-ns, [[Line] []]", d.Namespace, d.Dimensions)
			}
		}
		get := func(name string) []float64 { return values(lines, "Line", "q", name) }
		// Six starts: five jobs and the flaky one's retry.
		if got := sum(get(metrics.Starts)); got != 6 {
			t.Errorf("Starts %v, want 6", got)
		}
		late := get(metrics.StartLateness)
		runs.mu.Lock()
		want := slices.Clone(runs.lateness)
		runs.mu.Unlock()
		slices.Sort(late)
		slices.Sort(want)
		if !slices.Equal(late, want) {
			t.Errorf("StartLateness %v, want start − slot of each start %v", late, want)
		}
		for _, g := range get(metrics.StartGap) {
			if g < 1000-float64(slot.DefaultSkew.Milliseconds()) {
				t.Errorf("StartGap %vms, below interval − skew", g)
			}
		}
		if n := len(get(metrics.StartGap)); n != 5 {
			t.Errorf("%d StartGap values, want 5 (every start but the queue's first)", n)
		}
		for name, want := range map[string]float64{
			metrics.Succeeded: 4, metrics.AttemptFailures: 2, metrics.Retries: 1, metrics.DeadLetters: 1,
			// The far job is scheduled an hour ahead: out of line,
			// parked, not waiting in line.
			metrics.Waiting: 0, metrics.ParkedJobs: 1, metrics.Queued: 0, metrics.Lag: 0,
		} {
			if got := get(name); len(got) == 0 || sum(got) != want {
				t.Errorf("%s %v, want %v", name, got, want)
			}
		}
	})
}

// A pause parks a job at the gate; a timed pause is lifted by resume,
// which re-tickets and releases the parked job.
func TestParkAndRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var out bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&out, nil))
		rec := metrics.New(metrics.Options{Logger: log})
		tr := memstore.NewTransport(memstore.TransportOptions{})
		eng := testenv.NewEngine(t, engine.Options{Transport: tr, Runner: &startLog{}, Observer: rec})
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "q", Jobs: []job.Spec{{ID: "a", Kind: "k"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Pause(ctx, "q", time.Now().Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- tr.Run(wctx, 1, eng.Work) }()
		time.Sleep(time.Minute)
		if _, err := eng.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		stop()
		<-done
		rec.Flush(ctx)
		lines := decode(t, out.Bytes())
		for name, want := range map[string]float64{
			metrics.Parks: 1, metrics.PausesLifted: 1, metrics.Reticketed: 1, metrics.Released: 1, metrics.Starts: 1,
		} {
			if got := sum(values(lines, metrics.QueueProperty, "q", name)); got != want {
				t.Errorf("%s %v, want %v", name, got, want)
			}
		}
	})
}

// Lines carry at most MaxValues values per metric: 250 starts make three
// lines, with every value once.
func TestSplit(t *testing.T) {
	var out bytes.Buffer
	rec := metrics.New(metrics.Options{Logger: slog.New(slog.NewJSONHandler(&out, nil))})
	for i := range 250 {
		rec.Observe(context.Background(), engine.Event{Kind: engine.EventStarted, Queue: "q", Lateness: time.Duration(i) * time.Millisecond})
	}
	rec.Refused("invalid_interval")
	rec.Accepted("q", 3)
	rec.Flush(context.Background())
	lines := decode(t, out.Bytes())
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 3 for the queue and 1 for the refusal", len(lines))
	}
	for _, l := range lines {
		// No queue dimension by default: stack-wide metrics, and the
		// queue's name as a property of its lines.
		if l.fields[metrics.QueueProperty] == nil {
			continue // the refusal's line, by Code
		}
		if d := l.AWS.CloudWatchMetrics[0].Dimensions; len(d) != 1 || len(d[0]) != 0 || l.fields[metrics.DefaultDimension] != nil {
			t.Errorf("a queue's line with dimensions %v, fields %v; want none, and the queue as a property", d, l.fields)
		}
	}
	late := values(lines, metrics.QueueProperty, "q", metrics.StartLateness)
	if len(late) != 250 || sum(late) != 249*250/2 {
		t.Errorf("StartLateness: %d values summing to %v", len(late), sum(late))
	}
	if got := sum(values(lines, metrics.QueueProperty, "q", metrics.Starts)); got != 250 {
		t.Errorf("Starts %v, want 250", got)
	}
	if got := values(lines, "Code", "invalid_interval", metrics.JobsRefused); !slices.Equal(got, []float64{1}) {
		t.Errorf("JobsRefused %v", got)
	}
	// Flushed: nothing left.
	out.Reset()
	rec.Flush(context.Background())
	if out.Len() != 0 {
		t.Errorf("second flush wrote %s", out.String())
	}
}

// blockingRunner runs every job until release is closed.
type blockingRunner struct{ release chan struct{} }

func (b blockingRunner) Run(ctx context.Context, j *job.Job, cfg slot.Config) error {
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The resume function's lane figures: a queue with max_running 1 runs a
// job of key a; a second job of key a waits for its key, a job of key b
// (which takes its key first) for a running place. The lines say so, and
// a queue without lanes writes none of these metrics.
func TestResumeLaneLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var out testenv.Buffer // the workers log while the test reads
		log := slog.New(slog.NewJSONHandler(&out, nil))
		rec := metrics.New(metrics.Options{Logger: log})
		tr := memstore.NewTransport(memstore.TransportOptions{})
		runner := blockingRunner{release: make(chan struct{})}
		eng := testenv.NewEngine(t, engine.Options{Transport: tr, Runner: runner, Observer: rec, Figures: true})
		if _, err := eng.CreateQueue(ctx, "capped", slot.Config{Interval: time.Second, MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "capped", Jobs: []job.Spec{
			{ID: "a1", Kind: "k", Key: "a"}, {ID: "a2", Kind: "k", Key: "a"}, {ID: "b1", Kind: "k", Key: "b"},
		}}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "plain", Jobs: []job.Spec{{ID: "p", Kind: "k"}}}); err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- tr.Run(wctx, 4, eng.Work) }()
		time.Sleep(10 * time.Second)
		if _, err := eng.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		rec.Flush(ctx)
		close(runner.release)
		time.Sleep(10 * time.Second)
		stop()
		<-done

		lines := decode(t, out.Bytes())
		for name, want := range map[string]float64{
			metrics.Running: 1, metrics.KeysHeld: 2, metrics.KeysWaiting: 1, metrics.WaitingOnKeys: 1, metrics.WaitingForPlace: 1,
		} {
			if got := values(lines, metrics.QueueProperty, "capped", name); len(got) != 1 || got[0] != want {
				t.Errorf("%s of the capped queue %v, want [%v]", name, got, want)
			}
		}
		for _, name := range []string{metrics.Running, metrics.KeysHeld, metrics.KeysWaiting} {
			if got := values(lines, metrics.QueueProperty, "plain", name); len(got) != 0 {
				t.Errorf("%s of a queue without lanes %v, want none written", name, got)
			}
		}
	})
}
