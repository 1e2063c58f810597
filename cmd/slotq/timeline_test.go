package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/pkg/api"

	"github.com/slotq/slotq/internal/dev/localtest"
	"github.com/slotq/slotq/pkg/local"
)

// The picture, from fixed starts: an on-time start, a late one, one that
// follows it closer than the interval (the window form of spacing
// allows it), an early one within the skew.
func TestDrawTimeline(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 14, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tl := startTimeline{Queue: "emails", Interval: time.Second, NotStarted: []string{"later-1"}, Starts: []start{
		{JobID: "c", Ticket: 3, Attempt: 1, SlotAt: at(2000), StartedAt: at(2400)},
		{JobID: "a", Ticket: 1, Attempt: 1, SlotAt: at(0), StartedAt: at(3)},
		{JobID: "b", Ticket: 2, Attempt: 2, SlotAt: at(1000), StartedAt: at(1002)},
		{JobID: "d", Ticket: 4, Attempt: 1, SlotAt: at(3000), StartedAt: at(2995)},
	}}
	tl.Starts = recent(tl.Starts, 30)
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	drawTimeline(tw, tl, 31)
	tw.Flush()
	golden(t, "timeline", b.String())

	tl.Starts = recent(tl.Starts, 2)
	if len(tl.Starts) != 2 || tl.Starts[0].JobID != "c" || tl.Starts[0].Gap != 0 || tl.Starts[1].Gap != 595*time.Millisecond {
		t.Errorf("recent 2: %+v", tl.Starts)
	}
}

// Starts read from the JSON lines `slotq local --json` prints and from
// the worker's log lines with a CloudWatch prefix; other lines and other
// queues are skipped. A line with gate_at starts there (c: the gate
// reserved 14:00:02.001, the handler woke 6ms later).
func TestStartsFromLog(t *testing.T) {
	log := `{"time":"2025-06-01T14:00:00.004Z","level":"INFO","msg":"ready","event":"ready"}
{"time":"2025-06-01T14:00:00.004Z","level":"INFO","msg":"start","event":"start","queue":"emails","ticket":1,"job_id":"a","slot_at":"2025-06-01T14:00:00Z","lateness_ms":4,"attempt":1}
{"time":"2025-06-01T14:00:00.500Z","level":"INFO","msg":"start","queue":"other","ticket":1,"job_id":"x","slot_at":"2025-06-01T14:00:00Z","lateness_ms":500,"attempt":1}
2025-06-01T14:00:01.010000+00:00 2025/06/01/[$LATEST]abc {"time":"2025-06-01T14:00:01.010Z","level":"INFO","msg":"start","queue":"emails","ticket":2,"job_id":"b","slot_at":"2025-06-01T14:00:01Z","lateness_ms":10,"attempt":1}
not json
{"time":"2025-06-01T14:00:02.007Z","level":"INFO","msg":"start","queue":"emails","ticket":3,"job_id":"c","slot_at":"2025-06-01T14:00:02Z","gate_at":"2025-06-01T14:00:02.001Z","lateness_ms":7,"attempt":1}
`
	tl, err := startsFromLog(strings.NewReader(log), "emails")
	if err != nil {
		t.Fatal(err)
	}
	tl.Starts = recent(tl.Starts, 30)
	if len(tl.Starts) != 3 || tl.Starts[0].JobID != "a" || tl.Starts[0].Late != 4*time.Millisecond ||
		tl.Starts[1].Late != 10*time.Millisecond || tl.Starts[1].Gap != 1006*time.Millisecond ||
		tl.Starts[2].Late != time.Millisecond || tl.Starts[2].Gap != 991*time.Millisecond {
		t.Errorf("starts %+v", tl.Starts)
	}
}

func TestIDsOf(t *testing.T) {
	for in, want := range map[string]string{
		"a\nb\n  c\n": "a b c",
		`{"queue":"q","jobs":[{"job_id":"x","ticket":1},{"job_id":"y","ticket":2}]}` + "\n" + `{"jobs":[{"job_id":"z"}]}`: "x y z",
	} {
		if got := strings.Join(idsOf([]byte(in)), " "); got != want {
			t.Errorf("idsOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// slotq timeline on the local runtime: jobs enqueued, started, drawn from
// their records; the ids read from `slotq enqueue --json`.
func TestTimelineCommand(t *testing.T) {
	c := cli{t: t, endpoint: runLocalRuntime(t)}
	c.ok("create", "fast", "--interval", "100ms")
	var ids bytes.Buffer
	for _, id := range []string{"a", "b", "c"} {
		ids.WriteString(c.ok("enqueue", "fast", "--kind", "echo", "--id", id, "--json"))
	}
	for _, id := range []string{"a", "b", "c"} {
		testenv.WaitFor(t, id+" to succeed", func() bool {
			var j struct{ Status string }
			c.okJSON(&j, "jobs", "get", "fast", id)
			return j.Status == "succeeded"
		})
	}
	out := c.ok("timeline", "fast", "a", "b", "c")
	if !strings.Contains(out, "fast: 3 starts") || !strings.Contains(out, "interval 100ms") || strings.Count(out, "*") < 3 {
		t.Errorf("timeline:\n%s", out)
	}
	stdin = &ids
	var tl startTimeline
	c.okJSON(&tl, "timeline", "fast", "--ids", "-", "--failed")
	if len(tl.Starts) != 3 || tl.Interval != 100*time.Millisecond {
		t.Fatalf("timeline --json: %+v", tl)
	}
	for i, s := range tl.Starts {
		// In ticket order (a job that missed its slot on a loaded host
		// starts later, at a new ticket).
		if i > 0 && s.Ticket <= tl.Starts[i-1].Ticket || s.StartedAt.Before(s.SlotAt.Add(-10*time.Millisecond)) {
			t.Errorf("start %d: %+v", i, s)
		}
		if i > 0 && s.Gap < 90*time.Millisecond {
			t.Errorf("start %d follows the one before by %s", i, s.Gap)
		}
	}
	// Jobs just enqueued: --wait draws them once they ran, with no poll
	// loop of the caller's (before --wait they read "not started").
	var fresh bytes.Buffer
	for _, id := range []string{"d", "e"} {
		fresh.WriteString(c.ok("enqueue", "fast", "--kind", "echo", "--id", id, "--json"))
	}
	stdin = &fresh
	c.okJSON(&tl, "timeline", "fast", "--ids", "-", "--wait", "--timeout", "10s")
	if len(tl.Starts) != 2 || len(tl.NotStarted) != 0 {
		t.Errorf("timeline --wait of jobs just enqueued: %+v; want both started", tl)
	}
	c.exits([]string{"timeline", "fast", "--failed", "--wait"}, 2, "--wait waits for the jobs named")
	_, errOut, code := c.run("timeline", "fast", "nope")
	if code != 1 || !strings.Contains(errOut, "job_not_found") {
		t.Errorf("timeline of a missing job: exit %d, %q", code, errOut)
	}
}

// slotq timeline --log reads the text log `slotq local --log info` writes
// on stderr (make run ARGS='--log info' 2>run.log): slog's text handler,
// as the local runtime's functions log through it. The live view's lines
// are refused with what to give instead.
func TestTimelineTextLog(t *testing.T) {
	var log testenv.Buffer
	url := localtest.Start(t, local.Options{
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))}).InvokeURL
	c := cli{t: t, endpoint: url}
	c.ok("queues", "create", "texts", "--interval", "100ms")
	for _, id := range []string{"a", "b", "c"} {
		c.ok("enqueue", "texts", "--kind", "echo", "--id", id)
	}
	recs := map[string]api.Job{}
	for _, id := range []string{"a", "b", "c"} {
		var j api.Job
		c.okJSON(&j, "jobs", "get", "texts", id, "--wait", "--timeout", "10s")
		recs[id] = j
	}
	file := filepath.Join(t.TempDir(), "run.log")
	if err := os.WriteFile(file, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "level=INFO msg=start queue=texts") {
		t.Fatalf("the local runtime logged no text start line:\n%s", log.String())
	}
	var tl startTimeline
	c.okJSON(&tl, "timeline", "texts", "--log", file)
	// Each at its record's start (the gate's, gate_at in the line, which
	// slog's text writes to the millisecond), so at least interval − skew
	// (100ms − 10ms) apart.
	if len(tl.Starts) != 3 {
		t.Fatalf("timeline --log of a text log: %+v", tl)
	}
	for i, s := range tl.Starts {
		if r := recs[s.JobID]; !s.StartedAt.Equal(r.StartedAt.Truncate(time.Millisecond)) || s.Ticket != r.Ticket || i > 0 && s.Gap < 90*time.Millisecond {
			t.Errorf("start %d: %+v; its record started %v at ticket %d", i, s, r.StartedAt, r.Ticket)
		}
	}
	if out := c.ok("timeline", "texts", "--log", file); !strings.Contains(out, "texts: 3 starts") {
		t.Errorf("timeline --log:\n%s", out)
	}

	view := filepath.Join(t.TempDir(), "view.txt")
	if err := os.WriteFile(view, []byte("14:00:00.004  start     texts          #1     a                        late 4ms     attempt 1  worker 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.exits([]string{"timeline", "texts", "--log", view}, 2, "slotq timeline: --log: these are the live view's lines (make run's stdout), which carry no dates")
	c.exits([]string{"timeline", "texts", "--log", file + ".missing"}, 2, "slotq timeline: --log: open ")
	c.exits([]string{"timeline", "texts", "--log", os.DevNull}, 2, `--log: no "start" line in the log`)
}
