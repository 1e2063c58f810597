package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/slotq/slotq/internal/local/esm"
	"github.com/slotq/slotq/internal/metrics"
)

// tap passes the functions' log records on to next and shows the ones a
// person watches (starts, outcomes, retries, parks, releases) in the view.
type tap struct {
	next slog.Handler
	view *view
}

// Enabled is true for every level: the view counts successes, which the
// engine logs at Debug.
func (t *tap) Enabled(context.Context, slog.Level) bool { return true }

func (t *tap) Handle(ctx context.Context, r slog.Record) error {
	t.view.record(ctx, r)
	if t.next.Enabled(ctx, r.Level) {
		return t.next.Handle(ctx, r)
	}
	return nil
}

func (t *tap) WithAttrs(as []slog.Attr) slog.Handler {
	return &tap{next: t.next.WithAttrs(as), view: t.view}
}

func (t *tap) WithGroup(name string) slog.Handler {
	return &tap{next: t.next.WithGroup(name), view: t.view}
}

// view prints the live lines and keeps the per-queue summary.
type view struct {
	mu     sync.Mutex
	out    io.Writer
	json   *slog.Logger // nil: human lines
	queues map[string]*queueSummary
}

// queueSummary adds up a queue's metrics, as the functions' EMF lines
// carry them: the figures CloudWatch gets on the stack.
type queueSummary struct {
	counts   map[string]float64
	lateness []float64 // ms
	gaps     []float64 // ms
	// The last figures resume published; seen is false before any.
	waiting, parkedJobs, lag float64
	seen                     bool
	// The last lane figures resume published (docs/guarantees.md §12): running
	// is -1 for a queue without max_running; lanes is set once resume
	// wrote lane figures for the queue (it writes them only for queues
	// that use keys or max_running).
	running, keysHeld, keysWaiting, waitingOnKeys, waitingForPlace float64
	lanes                                                          bool
}

func (q *queueSummary) n(name string) int { return int(q.counts[name]) }

func newView(out io.Writer, asJSON bool) *view {
	v := &view{out: out, queues: map[string]*queueSummary{}}
	if asJSON {
		v.json = slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return v
}

// events are the engine's log messages the view shows, and its name for each.
var events = map[string]string{
	"start":                            "start",
	"job succeeded":                    "succeeded",
	"job failed":                       "failed",
	"attempt failed; retrying":         "retry",
	"parked":                           "park",
	"resumed":                          "release",
	"handed on":                        "handed",
	"pause lifted":                     "lifted",
	"paused":                           "paused",
	"attempt lost":                     "lost",
	"echo":                             "echo",
	"dropped message of deleted queue": "dropped",
}

func (v *view) record(ctx context.Context, r slog.Record) {
	if r.Message == metrics.Message {
		v.metrics(ctx, r)
		return
	}
	name, ok := events[r.Message]
	if !ok {
		return
	}
	a := map[string]slog.Value{}
	r.Attrs(func(at slog.Attr) bool { a[at.Key] = at.Value.Resolve(); return true })
	queue := a["queue"].String()
	v.mu.Lock()
	defer v.mu.Unlock()
	worker, hasWorker := esm.Poller(ctx)
	switch name {
	case "succeeded":
		return // the start line said it; a success is the common case
	case "release":
		if a["released"].Int64() == 0 && a["reticketed"].Int64() == 0 {
			return
		}
	case "echo":
		// The built-in kind's own line: shown in the view's JSON only.
		if v.json == nil {
			return
		}
	}
	if v.json != nil {
		attrs := []any{"event", name}
		for _, k := range sortedKeys(a) {
			attrs = append(attrs, slog.Any(k, a[k]))
		}
		if hasWorker {
			attrs = append(attrs, "worker", worker)
		}
		v.json.LogAttrs(ctx, slog.LevelInfo, name, toAttrs(attrs)...)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-9s %-14s", r.Time.Format("15:04:05.000"), name, queue)
	switch name {
	case "start":
		fmt.Fprintf(&b, " #%-5d %-24s late %-7s attempt %d", a["ticket"].Int64(), a["job_id"], ms(a["lateness_ms"].Int64()), a["attempt"].Int64())
		if hasWorker {
			fmt.Fprintf(&b, "  worker %d", worker)
		}
	case "failed", "retry":
		fmt.Fprintf(&b, " #%-5d %-24s attempt %d: %s", a["ticket"].Int64(), a["job_id"], a["attempt"].Int64(), a["error"])
		if name == "retry" {
			fmt.Fprintf(&b, " (again as #%d at %s)", a["ticket"].Int64(), a["slot_at"].Time().Format("15:04:05.000"))
		}
	case "park", "handed":
		fmt.Fprintf(&b, " #%-5d %-24s %s", a["ticket"].Int64(), a["job_id"], a["reason"])
		if key := a["key"].String(); key != "" && a["reason"].String() == "key" {
			fmt.Fprintf(&b, " %s", key)
		}
	case "release":
		fmt.Fprintf(&b, " %d released, %d re-ticketed", a["released"].Int64(), a["reticketed"].Int64())
	case "paused":
		if t := a["paused_until"].Time(); !t.IsZero() {
			fmt.Fprintf(&b, " until %s", t.Local().Format("15:04:05"))
		}
	default:
		fmt.Fprintf(&b, " %s %s", a["job_id"], a["error"])
	}
	fmt.Fprintln(v.out, strings.TrimRight(b.String(), " "))
}

func ms(n int64) string { return fmt.Sprintf("%dms", n) }

// metrics adds an EMF line of the worker, resume or enqueue function to
// its queue's summary, and shows resume's figures in the live view.
func (v *view) metrics(ctx context.Context, r slog.Record) {
	a := map[string]slog.Value{}
	r.Attrs(func(at slog.Attr) bool { a[at.Key] = at.Value.Resolve(); return true })
	queue, ok := a[metrics.QueueProperty]
	if !ok {
		return // a refusal line, by code
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	q := v.queues[queue.String()]
	if q == nil {
		q = &queueSummary{counts: map[string]float64{}, running: -1}
		v.queues[queue.String()] = q
	}
	vals := func(name string) []float64 {
		switch x := a[name].Any().(type) {
		case float64:
			return []float64{x}
		case []float64:
			return x
		}
		return nil
	}
	for _, m := range metrics.Metrics {
		vs := vals(m.Name)
		switch m.Name {
		case metrics.StartLateness:
			q.lateness = append(q.lateness, vs...)
		case metrics.StartGap:
			q.gaps = append(q.gaps, vs...)
		case metrics.Waiting, metrics.ParkedJobs, metrics.Lag, metrics.Running,
			metrics.KeysHeld, metrics.KeysWaiting, metrics.WaitingOnKeys, metrics.WaitingForPlace:
			// Figures, not counts: the last one stands (below).
		default:
			for _, x := range vs {
				q.counts[m.Name] += x
			}
		}
	}
	w, ok := a[metrics.Waiting]
	if !ok {
		return
	}
	q.seen, q.waiting, q.lag, q.parkedJobs = true, w.Float64(), a[metrics.Lag].Float64(), -1
	if p, ok := a[metrics.ParkedJobs]; ok {
		q.parkedJobs = p.Float64()
	}
	// Lane figures: absent ones are zero (resume leaves out the figures
	// of queues without lanes), Running -1 (no max_running).
	q.running = -1
	if r, ok := a[metrics.Running]; ok {
		q.running = r.Float64()
	}
	fig := func(name string) float64 {
		if x, ok := a[name]; ok {
			q.lanes = true
			return x.Float64()
		}
		return 0
	}
	q.keysHeld, q.keysWaiting, q.waitingOnKeys, q.waitingForPlace =
		fig(metrics.KeysHeld), fig(metrics.KeysWaiting), fig(metrics.WaitingOnKeys), fig(metrics.WaitingForPlace)
	if q.waiting == 0 && q.lag == 0 && q.running <= 0 && q.keysHeld == 0 {
		return // nothing waits or runs: no line
	}
	if v.json != nil {
		attrs := []slog.Attr{slog.String("event", "figures"), slog.String("queue", queue.String()),
			slog.Float64("waiting", q.waiting), slog.Float64("parked", q.parkedJobs), slog.Float64("lag_ms", q.lag)}
		if q.lanes {
			attrs = append(attrs, slog.Float64("running", q.running), slog.Float64("keys_held", q.keysHeld),
				slog.Float64("keys_waiting", q.keysWaiting), slog.Float64("waiting_on_keys", q.waitingOnKeys),
				slog.Float64("waiting_for_place", q.waitingForPlace))
		}
		v.json.LogAttrs(ctx, slog.LevelInfo, "figures", attrs...)
		return
	}
	parked := "-"
	if q.parkedJobs >= 0 {
		parked = fmt.Sprint(q.parkedJobs)
	}
	fmt.Fprintf(v.out, "%s  %-9s %-14s waiting %v, parked %s, lag %s%s\n", r.Time.Format("15:04:05.000"), "figures", queue.String(),
		q.waiting, parked, ms(int64(q.lag)), q.laneText())
}

// laneText is the live line's account of the queue's lanes: attempts
// running under max_running, keys held and waited for, jobs waiting for a
// running place; "" for a queue without lanes.
func (q *queueSummary) laneText() string {
	if !q.lanes {
		return ""
	}
	var b strings.Builder
	if q.running >= 0 {
		fmt.Fprintf(&b, ", running %v", q.running)
	}
	fmt.Fprintf(&b, ", keys held %v, keys waiting %v (%v jobs)", q.keysHeld, q.keysWaiting, q.waitingOnKeys)
	if q.running >= 0 || q.waitingForPlace > 0 {
		fmt.Fprintf(&b, ", waiting for a place %v", q.waitingForPlace)
	}
	return b.String()
}

// runningText is the summary's running figure: "-" for a queue without
// max_running, or before resume reported it.
func (q *queueSummary) runningText() string {
	if !q.lanes || q.running < 0 {
		return "-"
	}
	return fmt.Sprint(q.running)
}

func sortedKeys(m map[string]slog.Value) []string { return slices.Sorted(maps.Keys(m)) }

func toAttrs(kv []any) []slog.Attr {
	var out []slog.Attr
	for i := 0; i < len(kv); {
		if a, ok := kv[i].(slog.Attr); ok {
			out = append(out, a)
			i++
			continue
		}
		out = append(out, slog.Any(kv[i].(string), kv[i+1]))
		i += 2
	}
	return out
}

// banner tells a person where the stack is and what to try.
func (v *view) banner(e Endpoints, s Stack, a esm.Attributes, concurrency int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.json != nil {
		v.json.Info("ready", "event", "ready", "invoke_url", e.InvokeURL, "console_url", e.ConsoleURL, "functions", e.Functions, "backend", e.Backend,
			"batch_size", s.BatchSize, "visibility_timeout", a.VisibilityTimeout.String(), "max_receive_count", a.MaxReceiveCount,
			"resume_every", s.ResumeEvery.String())
		return
	}
	redrive := "no redrive"
	if a.MaxReceiveCount > 0 {
		redrive = fmt.Sprintf("dead-letter queue after %d receives", a.MaxReceiveCount)
	}
	console := ""
	if e.ConsoleURL != "" {
		console = fmt.Sprintf("  console       %s   queues, live timelines, jobs\n", e.ConsoleURL)
	}
	fmt.Fprintf(v.out, `slotq local: the stack in one process, on %s
  Invoke API    %s   %s
%s  event source  slot queue → WorkerFunction: batches of %d, window %s, %s,
                visibility timeout %s, %s, up to %d batches at once
  schedule      ResumeFunction every %s

Try, from another shell (slotq is go run ./cmd/slotq in slotq's repository, go tool slotq in a project):
  slotq enqueue emails --kind echo --payload '{"to":"ada@example.com"}' --wait
  slotq queues stats emails
  slotq jobs list emails --status failed
or with the AWS CLI (v1; with v2 add --cli-binary-format raw-in-base64-out):
  export AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
  aws lambda invoke --endpoint-url %[2]s --function-name AdminFunction --payload '{"op":"list"}' out.json
Ctrl-C stops it and prints a summary per queue.

`, e.Backend, e.InvokeURL, strings.Join(e.Functions, " "), console, s.BatchSize, s.BatchingWindow, partial(s.ReportBatchItemFailures),
		a.VisibilityTimeout, redrive, concurrency, s.ResumeEvery)
}

// summary prints each queue's figures: its metrics added up over the run
// (docs/operations.md says what each means).
func (v *view) summary() {
	v.mu.Lock()
	defer v.mu.Unlock()
	names := slices.Sorted(maps.Keys(v.queues))
	if v.json != nil {
		for _, n := range names {
			q := v.queues[n]
			p50, p99, worst := percentiles(q.lateness)
			gap50, _, _ := percentiles(q.gaps)
			v.json.Info("summary", "event", "summary", "queue", n, "starts", q.n(metrics.Starts), "succeeded", q.n(metrics.Succeeded),
				"failed", q.n(metrics.DeadLetters), "attempt_failures", q.n(metrics.AttemptFailures), "retries", q.n(metrics.Retries),
				"reticketed", q.n(metrics.Reticketed), "parked", q.n(metrics.Parks), "released", q.n(metrics.Released),
				"handed_back", q.n(metrics.HandedBack), "accepted", q.n(metrics.JobsAccepted),
				"lateness_p50_ms", p50, "lateness_p99_ms", p99, "lateness_max_ms", worst, "gap_p50_ms", gap50,
				"waiting", q.waiting, "lag_ms", q.lag,
				"running", q.running, "keys_held", q.keysHeld, "keys_waiting", q.keysWaiting,
				"waiting_on_keys", q.waitingOnKeys, "waiting_for_place", q.waitingForPlace)
		}
		return
	}
	if len(names) == 0 {
		fmt.Fprintln(v.out, "\nslotq local: no jobs ran.")
		return
	}
	fmt.Fprintln(v.out)
	tw := tabwriter.NewWriter(v.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "queue\tstarts\tsucceeded\tfailed\tretries\tre-ticketed\tparked\treleased\thanded back\tlateness p50\tp99\tmax\tgap p50\twaiting\tlag\trunning\tkeys waiting\t")
	for _, n := range names {
		q := v.queues[n]
		p50, p99, worst := percentiles(q.lateness)
		gap50, _, _ := percentiles(q.gaps)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%v\t%s\t%s\t%v\t\n", n, q.n(metrics.Starts), q.n(metrics.Succeeded),
			q.n(metrics.DeadLetters), q.n(metrics.Retries), q.n(metrics.Reticketed), q.n(metrics.Parks), q.n(metrics.Released),
			q.n(metrics.HandedBack), msf(p50), msf(p99), msf(worst), msf(gap50), q.waiting, msf(q.lag), q.runningText(), q.keysWaiting)
	}
	tw.Flush()
}

// percentiles returns the median, the 99th percentile and the largest of
// vs (nearest rank); zeros for none.
func percentiles(vs []float64) (p50, p99, worst float64) {
	if len(vs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	rank := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return s[len(s)/2], rank(0.99), s[len(s)-1]
}

// msf prints milliseconds rounded to the millisecond.
// msf is v ms for people, as slotq's tables print a duration: a tenth of
// a millisecond under 10 ms (4.5ms), whole milliseconds above.
func msf(v float64) string {
	if math.Abs(v) < 10 {
		return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + "ms"
	}
	return fmt.Sprintf("%.0fms", v)
}

func partial(on bool) string {
	if on {
		return "partial batch responses"
	}
	return "whole batches"
}
