package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/pkg/api"
)

// recordKeys are the keys of a start record, exactly.
var recordKeys = []string{"gate_ms", "job_id", "producer", "queue", "retickets", "slot_at_ms", "start_ms", "ticket", "worker"}

// checkRecord checks one JSON start record: exactly recordKeys, each of
// the right type and form.
func checkRecord(t *testing.T, line []byte, queue string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("record %s: %v", line, err)
	}
	if keys := slices.Sorted(maps.Keys(m)); !slices.Equal(keys, recordKeys) {
		t.Fatalf("record %s: keys %v, want %v", line, keys, recordKeys)
	}
	str := func(k string, re string) {
		s, ok := m[k].(string)
		if !ok || !regexp.MustCompile(re).MatchString(s) {
			t.Errorf("record %s: %s = %v, want a string matching %s", line, k, m[k], re)
		}
	}
	str("queue", "^"+regexp.QuoteMeta(queue)+"$")
	str("job_id", `^\S+$`)
	str("producer", `^p[0-9]+$`)
	str("worker", `^w[0-9]+$`)
	num := func(k string, integer bool) float64 {
		n, ok := m[k].(json.Number)
		if !ok {
			t.Errorf("record %s: %s = %v, want a number", line, k, m[k])
			return 0
		}
		if integer {
			if _, err := n.Int64(); err != nil {
				t.Errorf("record %s: %s = %v, want an integer", line, k, n)
			}
		}
		f, _ := n.Float64()
		return f
	}
	if tk := num("ticket", true); tk < 1 {
		t.Errorf("record %s: ticket %v < 1", line, tk)
	}
	slotMS, gateMS, startMS := num("slot_at_ms", false), num("gate_ms", false), num("start_ms", false)
	now := float64(time.Now().UnixMicro()) / 1000 // start_ms keeps microseconds
	if startMS < gateMS || gateMS < slotMS || startMS > now || startMS < now-60_000 {
		t.Errorf("record %s: start_ms %v must lie after gate_ms %v, after slot_at_ms %v, and within the last minute", line, startMS, gateMS, slotMS)
	}
	// Sub-millisecond: three decimals.
	for _, k := range []string{"slot_at_ms", "gate_ms", "start_ms"} {
		if n := string(m[k].(json.Number)); !regexp.MustCompile(`^[0-9]+\.[0-9]{3}$`).MatchString(n) {
			t.Errorf("record %s: %s = %s, want milliseconds with three decimals", line, k, n)
		}
	}
	return m
}

// TestRunDemo runs the demo workload small and checks what the demo
// promises: every job starts exactly once and finishes, the gate keeps the
// spacing (docs/guarantees.md §3), and every start record carries its fields.
func TestRunDemo(t *testing.T) {
	cfg := Config{
		Queue: "demo-test", Producers: 3, Jobs: 5, Batch: 3, Workers: 3,
		Interval: 20 * time.Millisecond, Seed: 7,
	}
	var live []timeline.Start
	res, err := runDemo(t.Context(), cfg, func(s timeline.Start, _ *api.Job) { live = append(live, s) })
	if err != nil {
		t.Fatal(err)
	}
	const n = 15
	if res.Enqueued != n || res.Succeeded != n || res.Unfinished != 0 {
		t.Errorf("enqueued %d, succeeded %d, unfinished %d; want %d, %d, 0", res.Enqueued, res.Succeeded, res.Unfinished, n, n)
	}
	if len(res.Starts) != n || res.StartedTwice != 0 || res.Unstarted != 0 {
		t.Errorf("%d starts, %d jobs started twice, %d never; want %d, 0, 0", len(res.Starts), res.StartedTwice, res.Unstarted, n)
	}
	if !slices.Equal(live, res.Starts) {
		t.Errorf("onStart saw %d starts, the result holds %d (or in another order)", len(live), len(res.Starts))
	}
	ids := map[string]bool{}
	producers := map[string]bool{}
	for _, s := range res.Starts {
		ids[s.JobID] = true
		producers[s.Producer] = true
		if s.Gate.IsZero() || s.At.Before(s.Gate) || s.At.Before(s.SlotAt) {
			t.Errorf("start %+v: want slot ≤ gate ≤ handler begin", s)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		checkRecord(t, b, cfg.Queue)
	}
	if len(ids) != n {
		t.Errorf("%d distinct job ids among %d starts", len(ids), n)
	}
	if len(producers) != cfg.Producers {
		t.Errorf("starts name producers %v, want %d of them", producers, cfg.Producers)
	}
	if len(res.Calls) != n {
		t.Errorf("the engine reported %d calls of the handler, want %d", len(res.Calls), n)
	}
	for _, s := range res.Starts {
		if call := res.Calls[s.JobID]; call.Before(s.Gate) || call.After(s.At) {
			t.Errorf("start %+v: called at %v, want gate ≤ call ≤ handler begin", s, call)
		}
	}
	r := newReport(cfg, res)
	if r.gate.Violations != 0 || r.call.Violations != 0 {
		t.Errorf("%d spacing violations at the gate, %d at the calls; min spacing %v, interval %v", r.gate.Violations, r.call.Violations, r.gate.SpacingMin, cfg.Interval)
	}
	if r.gate.Inversions != 0 {
		t.Errorf("%d order inversions at the gate", r.gate.Inversions)
	}
	if r.handler.Violations != 0 {
		// Not the guarantee (the handler begins after the gate, by however
		// long the scheduler takes), but worth seeing.
		t.Logf("%d handler begins closer than the interval; gate→handler max %v", r.handler.Violations, r.delay[2])
	}
}

// cancelConfig is a demo of 100 jobs 50ms apart, far more than its
// 300ms run starts.
var cancelConfig = Config{Queue: "q", Producers: 2, Jobs: 50, Batch: 3, Workers: 2, Interval: 50 * time.Millisecond, Seed: 1}

// TestRunDemoCancel: an interrupted demo returns, without running the
// rest of its jobs, and counts what did not finish. How soon it returns
// is BenchmarkRunDemoCancel's figure.
func TestRunDemoCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	res, err := runDemo(ctx, cancelConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Unfinished == 0 || res.Unfinished+res.Succeeded != res.Enqueued {
		t.Errorf("unfinished %d + succeeded %d, enqueued %d: want some unfinished, and the sum", res.Unfinished, res.Succeeded, res.Enqueued)
	}
}

// BenchmarkRunDemoCancel reports how long an interrupted demo takes to
// return after its context ends (ms/return; TestRunDemoCancel held it
// under 3s before it stopped asserting time).
func BenchmarkRunDemoCancel(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		ctx, cancel := context.WithTimeout(b.Context(), 300*time.Millisecond)
		if _, err := runDemo(ctx, cancelConfig, nil); err != nil {
			b.Fatal(err)
		}
		deadline, _ := ctx.Deadline()
		total += time.Since(deadline)
		cancel()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/return")
}

// TestDemoJSON runs the demo with --json and checks its stdout: one line
// per start, each with exactly the record's keys, and nothing else.
func TestDemoJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	cfg := Config{Queue: "jq", Producers: 2, Jobs: 4, Batch: 3, Workers: 3, Interval: 20 * time.Millisecond, Seed: 1, KeyMaxRunning: 1}
	if code := Demo(t.Context(), &stdout, &stderr, cfg, true, ""); code != clikit.ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d lines on stdout, want 8:\n%s", len(lines), stdout.String())
	}
	tickets := map[string]bool{}
	for _, l := range lines {
		m := checkRecord(t, []byte(l), "jq")
		tickets[m["ticket"].(json.Number).String()] = true
	}
	if len(tickets) != 8 {
		t.Errorf("%d distinct tickets among 8 starts", len(tickets))
	}
}

// The demo runs each form of a limit: its records carry the job's
// re-tickets, and its summary judges the starts by the form.
func TestDemoForms(t *testing.T) {
	for name, form := range map[string]func(*Config){
		"rate":   func(c *Config) { c.Rate, c.Burst = api.Rate{N: 100, Per: time.Second}, 3 },
		"window": func(c *Config) { c.Window = api.Rate{N: 5, Per: 100 * time.Millisecond} },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultDemo
			cfg.Queue, cfg.Producers, cfg.Jobs, cfg.Workers = "fq", 2, 6, 12
			form(&cfg)
			var stdout, stderr bytes.Buffer
			if code := Demo(t.Context(), &stdout, &stderr, cfg, true, ""); code != clikit.ExitOK {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if len(lines) != 12 {
				t.Fatalf("%d records, want 12:\n%s", len(lines), stdout.String())
			}
			for _, l := range lines {
				checkRecord(t, []byte(l), "fq")
			}
			if !strings.Contains(stderr.String(), "0 spacing violations at the gate") {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
}

// TestReticketFigures checks the re-ticket summary of a run's starts:
// the share of starts that came after a re-ticket, and the most
// re-tickets one job took, which a sum of re-tickets hides (one job
// re-ticketed six times reads like six jobs re-ticketed once).
// TestCallVerdict: handler begins that broke the limit are put down to
// the host when the workers' calls kept it, and to the calls when they
// broke it too.
func TestCallVerdict(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	cfg := Config{Queue: "q", Interval: 10 * time.Millisecond}
	starts := []timeline.Start{
		{JobID: "a", SlotAt: t0, Gate: t0, At: t0.Add(5 * time.Millisecond)},
		{JobID: "b", SlotAt: t0.Add(10 * time.Millisecond), Gate: t0.Add(10 * time.Millisecond), At: t0.Add(10 * time.Millisecond)},
	}
	onTime := map[string]time.Time{"a": t0, "b": t0.Add(10 * time.Millisecond)}
	late := map[string]time.Time{"a": t0.Add(5 * time.Millisecond), "b": t0.Add(10 * time.Millisecond)}
	for _, c := range []struct {
		calls map[string]time.Time
		want  string
	}{{onTime, "the host ran the handlers late"}, {late, "1 workers' calls broke it"}} {
		r := newReport(cfg, demoResult{Starts: starts, Calls: c.calls, Skew: time.Millisecond})
		if r.handler.Violations != 1 {
			t.Fatalf("%d handler violations, want 1", r.handler.Violations)
		}
		if got := r.callVerdict(); !strings.Contains(got, c.want) {
			t.Errorf("calls %v: verdict %q, want it to say %q", c.calls, got, c.want)
		}
	}
}

func TestReticketFigures(t *testing.T) {
	starts := func(retickets ...int) []timeline.Start {
		var ss []timeline.Start
		for i, n := range retickets {
			ss = append(ss, timeline.Start{JobID: string(rune('a' + i)), Retickets: n})
		}
		return ss
	}
	for name, tt := range map[string]struct {
		starts []timeline.Start
		want   reticketFigures
		text   string
	}{
		"none":               {nil, reticketFigures{}, "0.0 % of starts, most 0 of one job"},
		"no re-ticket":       {starts(0, 0, 0), reticketFigures{Starts: 3}, "0.0 % of starts, most 0 of one job"},
		"one job, often":     {starts(0, 6, 0, 0), reticketFigures{Reticketed: 1, Starts: 4, Most: 6}, "25.0 % of starts, most 6 of one job"},
		"several, once":      {starts(1, 1, 1, 0, 0, 0, 0, 0), reticketFigures{Reticketed: 3, Starts: 8, Most: 1}, "37.5 % of starts, most 1 of one job"},
		"mixed, all of them": {starts(2, 1, 3), reticketFigures{Reticketed: 3, Starts: 3, Most: 3}, "100.0 % of starts, most 3 of one job"},
	} {
		got := newReticketFigures(tt.starts)
		if got != tt.want || got.String() != tt.text {
			t.Errorf("%s: %+v %q; want %+v %q", name, got, got, tt.want, tt.text)
		}
	}
}

func TestBar(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int // cells
	}{
		{0, 0},
		{10 * time.Millisecond, 10},
		{15 * time.Millisecond, 15},
		{time.Second, 30},
	}
	for _, tt := range tests {
		if got := len([]rune(bar(tt.d, 10*time.Millisecond))); got != tt.want {
			t.Errorf("bar(%v) has %d cells, want %d", tt.d, got, tt.want)
		}
	}
}
