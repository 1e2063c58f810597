package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/slotq/slotq/internal/esm"
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

type queueSummary struct {
	starts, succeeded, failed, retries, parked, released int
	lateness                                             []time.Duration
}

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
	"pause lifted":                     "lifted",
	"paused":                           "paused",
	"attempt lost":                     "lost",
	"echo":                             "echo",
	"dropped message of deleted queue": "dropped",
}

func (v *view) record(ctx context.Context, r slog.Record) {
	name, ok := events[r.Message]
	if !ok {
		return
	}
	a := map[string]slog.Value{}
	r.Attrs(func(at slog.Attr) bool { a[at.Key] = at.Value.Resolve(); return true })
	queue := a["queue"].String()
	v.mu.Lock()
	defer v.mu.Unlock()
	q := v.queues[queue]
	if q == nil && queue != "" {
		q = &queueSummary{}
		v.queues[queue] = q
	}
	worker, hasWorker := esm.Poller(ctx)
	switch name {
	case "start":
		q.starts++
		q.lateness = append(q.lateness, time.Duration(a["lateness_ms"].Int64())*time.Millisecond)
	case "succeeded":
		q.succeeded++
		return // the start line said it; a success is the common case
	case "failed":
		q.failed++
	case "retry":
		q.retries++
	case "park":
		q.parked++
	case "release":
		q.released += int(a["released"].Int64())
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
	case "park":
		fmt.Fprintf(&b, " #%-5d %-24s %s", a["ticket"].Int64(), a["job_id"], a["reason"])
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
		v.json.Info("ready", "event", "ready", "invoke_url", e.InvokeURL, "functions", e.Functions, "backend", e.Backend,
			"batch_size", s.BatchSize, "visibility_timeout", a.VisibilityTimeout.String(), "max_receive_count", a.MaxReceiveCount,
			"resume_every", s.ResumeEvery.String())
		return
	}
	redrive := "no redrive"
	if a.MaxReceiveCount > 0 {
		redrive = fmt.Sprintf("dead-letter queue after %d receives", a.MaxReceiveCount)
	}
	fmt.Fprintf(v.out, `slotq local: the stack in one process, on %s
  Invoke API    %s   %s
  event source  slot queue → WorkerFunction: batches of %d, window %s, %s,
                visibility timeout %s, %s, up to %d batches at once
  schedule      ResumeFunction every %s

Try, from another shell (AWS CLI v1; with v2 add --cli-binary-format raw-in-base64-out):
  export AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
  aws lambda invoke --endpoint-url %[2]s --function-name EnqueueFunction --payload file://events/enqueue.json out.json && cat out.json
  aws lambda invoke --endpoint-url %[2]s --function-name AdminFunction --payload '{"op":"stats","queue":"emails"}' out.json && cat out.json
  go run ./cmd/slotq invoke --endpoint-url %[2]s AdminFunction '{"op":"get","queue":"emails","job_id":"welcome-42"}'
Ctrl-C stops it and prints a summary per queue.

`, e.Backend, e.InvokeURL, strings.Join(e.Functions, " "), s.BatchSize, s.BatchingWindow, partial(s.ReportBatchItemFailures),
		a.VisibilityTimeout, redrive, concurrency, s.ResumeEvery)
}

// summary prints each queue's counts and lateness.
func (v *view) summary() {
	v.mu.Lock()
	defer v.mu.Unlock()
	names := slices.Sorted(maps.Keys(v.queues))
	if v.json != nil {
		for _, n := range names {
			q := v.queues[n]
			p50, worst := lateness(q.lateness)
			v.json.Info("summary", "event", "summary", "queue", n, "starts", q.starts, "succeeded", q.succeeded, "failed", q.failed,
				"retries", q.retries, "parked", q.parked, "released", q.released, "lateness_p50_ms", p50.Milliseconds(), "lateness_max_ms", worst.Milliseconds())
		}
		return
	}
	if len(names) == 0 {
		fmt.Fprintln(v.out, "\nslotq local: no jobs ran.")
		return
	}
	fmt.Fprintln(v.out)
	tw := tabwriter.NewWriter(v.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "queue\tstarts\tsucceeded\tfailed\tretries\tparked\treleased\tlateness p50\tmax\t")
	for _, n := range names {
		q := v.queues[n]
		p50, worst := lateness(q.lateness)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", n, q.starts, q.succeeded, q.failed, q.retries, q.parked, q.released,
			p50.Round(time.Millisecond), worst.Round(time.Millisecond))
	}
	tw.Flush()
}

func lateness(ls []time.Duration) (p50, worst time.Duration) {
	if len(ls) == 0 {
		return 0, 0
	}
	s := slices.Clone(ls)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}

func partial(on bool) string {
	if on {
		return "partial batch responses"
	}
	return "whole batches"
}
