package console_test

import (
	"context"
	"encoding/json"
	"log"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/chromedp/chromedp"

	"github.com/slotq/slotq/internal/cli/console"
	"github.com/slotq/slotq/internal/dev/localtest"
	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
	"github.com/slotq/slotq/pkg/local"
)

// The browser the tests share: started on first use, stopped by
// TestMain (its whole process group) when the tests end.
var browser struct {
	once   sync.Once
	ctx    context.Context // the allocator's
	cancel context.CancelFunc
	pgid   int
	err    error
}

func TestMain(m *testing.M) { testenv.Main(m, testenv.Stop(stopBrowser)) }

// browserPath finds Chromium (Debian's package `chromium`) or Chrome.
func browserPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// needBrowser returns a new tab's context, or skips the test when no
// browser is installed — a failure instead with SLOTQ_REQUIRE_BROWSER=1,
// as `make test` runs.
func needBrowser(t *testing.T) context.Context {
	t.Helper()
	path := browserPath()
	if path == "" {
		if os.Getenv("SLOTQ_REQUIRE_BROWSER") == "1" {
			t.Fatal("SLOTQ_REQUIRE_BROWSER=1 but no chromium on PATH: install it (apt-get install chromium)")
		}
		t.Skip("no chromium on PATH (apt-get install chromium): the browser tests are skipped; SLOTQ_REQUIRE_BROWSER=1 makes this a failure")
	}
	browser.once.Do(func() {
		dir, err := os.MkdirTemp("", "slotq-console-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.UserDataDir(dir),
			chromedp.NoSandbox, // as root in CI containers
			chromedp.DisableGPU,
			// Crashpad double-forks away from the browser's group: none.
			chromedp.Flag("disable-crash-reporter", true),
			chromedp.Flag("disable-breakpad", true),
			chromedp.WindowSize(1200, 860),
			chromedp.ModifyCmdFunc(ownGroup),
		)
		browser.ctx, browser.cancel = chromedp.NewExecAllocator(context.Background(), opts...)
		context.AfterFunc(browser.ctx, func() { os.RemoveAll(dir) })
	})
	if browser.err != nil {
		t.Fatalf("start chromium: %v", browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithErrorf(quietErrorf))
	t.Cleanup(cancel)
	// The first Run starts the browser.
	if err := chromedp.Run(ctx); err != nil {
		if os.Getenv("SLOTQ_REQUIRE_BROWSER") != "1" {
			t.Skipf("chromium at %s does not start: %v", path, err)
		}
		t.Fatalf("chromium at %s does not start: %v", path, err)
	}
	if p := chromedp.FromContext(ctx).Browser.Process(); p != nil && browser.pgid == 0 {
		browser.pgid = p.Pid // its own group's id (ownGroup)
	}
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelT)
	return ctx
}

// quietErrorf logs chromedp's errors but those of events newer than
// its protocol tables (a newer Chromium's enum values), which it skips.
func quietErrorf(format string, a ...any) {
	if strings.HasPrefix(format, "could not unmarshal event") {
		return
	}
	log.Printf(format, a...)
}

// stopBrowser closes the browser and kills whatever of its process
// group is left (renderers, the zygote).
func stopBrowser() {
	if browser.cancel == nil {
		return
	}
	browser.cancel()
	if browser.pgid > 0 {
		killGroup(browser.pgid)
	}
}

// stack is the local runtime on the embedded backend, a client over it
// and the console over the client, all in this process.
type stack struct {
	c       *client.Client
	console string // the console's URL
}

func startStack(t *testing.T) stack {
	t.Helper()
	invoke := localtest.Start(t, local.Options{}).InvokeURL
	c := client.NewFromConfig(aws.Config{}, client.WithEndpoint(invoke))
	srv := httptest.NewServer(console.New(console.FromClient(c), console.Options{Name: "local", Refresh: time.Second}))
	t.Cleanup(srv.Close)
	return stack{c: c, console: srv.URL}
}

// enqueue enqueues jobs on queue and waits for each to end.
func (s stack) run(t *testing.T, queue string, specs ...api.Spec) []api.Job {
	t.Helper()
	ctx := t.Context()
	if _, err := s.c.Enqueue(ctx, &client.EnqueueInput{Queue: queue, Jobs: specs}); err != nil {
		t.Fatalf("enqueue on %s: %v", queue, err)
	}
	var out []api.Job
	for _, sp := range specs {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		w, err := s.c.Wait(wctx, &client.WaitInput{Queue: queue, JobID: sp.ID})
		cancel()
		if w == nil || w.Job.ID == "" {
			t.Fatalf("wait for %s: %v", sp.ID, err)
		}
		out = append(out, w.Job)
	}
	return out
}

func (s stack) create(t *testing.T, queue string, cfg api.Config) {
	t.Helper()
	if _, err := s.c.CreateQueue(t.Context(), &client.CreateQueueInput{Queue: queue, Config: &cfg}); err != nil {
		t.Fatalf("create %s: %v", queue, err)
	}
}

func echo(ids ...string) []api.Spec {
	var specs []api.Spec
	for _, id := range ids {
		specs = append(specs, api.Spec{ID: id, Kind: "echo", Payload: json.RawMessage(`{"to":"` + id + `@example.com"}`)})
	}
	return specs
}

// TestBrowser drives the console in Chromium against the local runtime:
// the queue list; a timeline with one mark per started job at its start,
// growing live; pausing a queue through its confirmation; a failed job's
// error on its page.
func TestBrowser(t *testing.T) {
	ctx := needBrowser(t)
	s := startStack(t)
	s.create(t, "emails", api.Config{Interval: 300 * time.Millisecond, Backoff: 200 * time.Millisecond})
	s.create(t, "reports", api.Config{Interval: time.Second, MaxAttempts: 1})
	ids := []string{"welcome-1", "welcome-2", "welcome-3", "welcome-4", "welcome-5"}
	jobs := s.run(t, "emails", echo(ids...)...)
	failed := s.run(t, "reports", api.Spec{ID: "report-7", Kind: "fail", Payload: json.RawMessage(`{"error":"partner answered 503"}`)})
	if failed[0].Status != api.Failed {
		t.Fatalf("report-7 is %s, want failed", failed[0].Status)
	}

	t.Run("queues", func(t *testing.T) {
		var names []string
		if err := chromedp.Run(ctx,
			chromedp.Navigate(s.console+"/"),
			chromedp.WaitVisible(`table.queues`),
			chromedp.Evaluate(`[...document.querySelectorAll("table.queues tbody tr")].map(r => r.dataset.queue)`, &names),
		); err != nil {
			t.Fatal(err)
		}
		if strings.Join(names, ",") != "emails,reports" {
			t.Errorf("queues listed %q, want emails, reports", names)
		}
	})

	t.Run("timeline", func(t *testing.T) {
		var svg struct {
			From, To    string
			Left, Right float64
			Marks       []struct {
				Job, Start, Gate string
				X                float64
			}
		}
		read := `(() => { const s = document.getElementById("timeline");
			return {From: s.dataset.from, To: s.dataset.to, Left: +s.dataset.plotLeft, Right: +s.dataset.plotRight,
				Marks: [...s.querySelectorAll("g.start")].map(g => ({Job: g.dataset.job, Start: g.dataset.start, Gate: g.dataset.gate, X: +g.dataset.x}))}; })()`
		// The queue's starts come from the admin function (starts): no
		// job needs following for its mark.
		if err := chromedp.Run(ctx,
			chromedp.Navigate(s.console+"/queues/emails?window=5m"),
			chromedp.WaitVisible(`#timeline`),
			chromedp.Evaluate(read, &svg),
		); err != nil {
			t.Fatal(err)
		}
		if len(svg.Marks) != len(jobs) {
			t.Fatalf("%d marks on the timeline, want one per started job (%d)", len(svg.Marks), len(jobs))
		}
		// A mark is at the start the gate reserved, which the worker's
		// start line reports beside when the handler began: the record's
		// started_at, and the handler within the queue's skew (10ms, the
		// stack's) after it.
		from, _ := time.Parse(time.RFC3339Nano, svg.From)
		to, _ := time.Parse(time.RFC3339Nano, svg.To)
		byJob := map[string]int{}
		var prev time.Time
		for _, m := range svg.Marks {
			byJob[m.Job]++
			started, err := time.Parse(time.RFC3339Nano, m.Start)
			if err != nil {
				t.Fatalf("%s's mark: start %q: %v", m.Job, m.Start, err)
			}
			gate, err := time.Parse(time.RFC3339Nano, m.Gate)
			if err != nil {
				t.Fatalf("%s's mark: gate %q: %v", m.Job, m.Gate, err)
			}
			if gate.Before(prev) {
				t.Errorf("marks out of start order: %s at %s after %s", m.Job, m.Gate, prev.Format(time.RFC3339Nano))
			}
			prev = gate
			want := svg.Left + float64(gate.Sub(from))/float64(to.Sub(from))*(svg.Right-svg.Left)
			if math.Abs(m.X-want) > 0.1 {
				t.Errorf("%s's mark at x=%.1f, want %.1f (its gate's start %s in the window)", m.Job, m.X, want, m.Gate)
			}
			for _, j := range jobs {
				if j.ID != m.Job {
					continue
				}
				if !gate.Equal(j.StartedAt) {
					t.Errorf("%s's mark is at %s, want its record's started_at %s", m.Job, m.Gate, j.StartedAt.UTC().Format(time.RFC3339Nano))
				}
				if started.Before(gate) || started.After(gate.Add(10*time.Millisecond)) {
					t.Errorf("%s's handler began at %s, want within 10ms after its gate's start %s", m.Job, m.Start, m.Gate)
				}
			}
		}
		for _, j := range jobs {
			if byJob[j.ID] != 1 {
				t.Errorf("%d marks for %s, want 1", byJob[j.ID], j.ID)
			}
		}
		var check string
		if err := chromedp.Run(ctx, chromedp.Text(`#spacing-check`, &check)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(check, "✓ Smallest gap") {
			t.Errorf("spacing check says %q, want ✓", check)
		}

		// Live: a job followed before it starts appears by itself.
		later := time.Now().Add(3 * time.Second)
		if _, err := s.c.Enqueue(t.Context(), &client.EnqueueInput{Queue: "emails", Job: &api.Spec{ID: "welcome-6", Kind: "echo", NotBefore: &later}}); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := chromedp.Run(ctx,
			// From a page without the last follow's message, so that
			// p.done below is the next page's.
			chromedp.Navigate(s.console+"/queues/emails"),
			chromedp.WaitVisible(`#follow-ids`),
			chromedp.SendKeys(`#follow-ids`, "welcome-6"),
			chromedp.Click(`#follow`),
			chromedp.WaitVisible(`p.done`),
			chromedp.Evaluate(`document.querySelectorAll("#timeline g.start").length`, &n),
		); err != nil {
			t.Fatal(err)
		}
		if n != len(jobs) {
			t.Fatalf("%d marks before welcome-6 started, want %d", n, len(jobs))
		}
		if err := chromedp.Run(ctx,
			chromedp.Poll(`document.querySelector('#timeline g.start[data-job="welcome-6"]') !== null`, nil, chromedp.WithPollingTimeout(20*time.Second)),
			chromedp.Evaluate(`document.querySelectorAll("#timeline g.start").length`, &n),
		); err != nil {
			t.Fatalf("welcome-6 did not appear without a reload: %v", err)
		}
		if n != len(jobs)+1 {
			t.Errorf("%d marks after welcome-6 started, want %d", n, len(jobs)+1)
		}
	})

	t.Run("pause", func(t *testing.T) {
		var question, state string
		if err := chromedp.Run(ctx,
			chromedp.Navigate(s.console+"/queues/emails"),
			chromedp.WaitVisible(`#pause`),
			chromedp.SendKeys(`#pause-for`, "10m"),
			chromedp.Click(`#pause`),
			chromedp.WaitVisible(`#confirm`),
			chromedp.Text(`#question`, &question),
			chromedp.Click(`#confirm`),
			chromedp.WaitVisible(`p.done`),
			chromedp.Text(`#queue-state`, &state),
		); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(question, "Pause queue emails until") {
			t.Errorf("the confirmation asks %q", question)
		}
		if !strings.Contains(state, "paused until") {
			t.Errorf("queue state shows %q, want paused until …", state)
		}
		st, err := s.c.GetStats(t.Context(), &client.GetStatsInput{Queue: "emails"})
		if err != nil {
			t.Fatal(err)
		}
		if !st.Stats.State.Paused || st.Stats.State.PausedUntil.Sub(time.Now()) < 9*time.Minute {
			t.Errorf("emails' state %+v, want paused for about 10m", st.Stats.State)
		}
	})

	t.Run("failed job", func(t *testing.T) {
		var status, msg string
		if err := chromedp.Run(ctx,
			chromedp.Navigate(s.console+"/queues/reports/jobs/report-7"),
			chromedp.WaitVisible(`#job-error`),
			chromedp.Text(`#job-status`, &status),
			chromedp.Text(`#job-error`, &msg),
		); err != nil {
			t.Fatal(err)
		}
		if status != "failed" || !strings.Contains(msg, "partner answered 503") {
			t.Errorf("job page shows %q: %q, want failed: …partner answered 503", status, msg)
		}
	})

	if dir := os.Getenv("SLOTQ_SCREENSHOTS"); dir != "" {
		screenshots(t, ctx, s, dir)
	}
}

// TestBrowserKeys drives a keyed queue's pages in Chromium against the
// local runtime: its keys table (the key limit in words, the busiest
// keys with a key's own limit marked, each a link), and a key's page
// whose timeline draws that key's starts only, judged by its own limit.
func TestBrowserKeys(t *testing.T) {
	ctx := needBrowser(t)
	s := startStack(t)
	s.create(t, "tenants", api.Config{Interval: 50 * time.Millisecond,
		KeyLimits: []api.Limit{{Interval: 300 * time.Millisecond}}, KeyMaxRunning: api.NoKeyCap})
	if _, err := s.c.SetKeyLimits(t.Context(), &client.SetKeyLimitsInput{Queue: "tenants",
		Keys: []api.KeyLimit{{Key: "acme", Limits: []api.Limit{{Window: api.Rate{N: 2, Per: time.Second}}}}}}); err != nil {
		t.Fatal(err)
	}
	keyed := func(key string, ids ...string) []api.Spec {
		specs := echo(ids...)
		for i := range specs {
			specs[i].Key = key
		}
		return specs
	}
	acme := s.run(t, "tenants", keyed("acme", "acme-1", "acme-2", "acme-3")...)
	s.run(t, "tenants", keyed("zed", "zed-1", "zed-2")...)
	// Jobs far ahead keep their keys busy while the pages are read.
	later := time.Now().Add(10 * time.Minute)
	var ahead []api.Spec
	for _, sp := range append(keyed("zed", "zed-later-1", "zed-later-2"), keyed("acme", "acme-later")...) {
		sp.NotBefore = &later
		ahead = append(ahead, sp)
	}
	if _, err := s.c.Enqueue(t.Context(), &client.EnqueueInput{Queue: "tenants", Jobs: ahead}); err != nil {
		t.Fatal(err)
	}

	t.Run("keys table", func(t *testing.T) {
		var limits string
		var rows []struct{ Key, Limit, Href string }
		if err := chromedp.Run(ctx,
			chromedp.Navigate(s.console+"/queues/tenants"),
			chromedp.WaitVisible(`table.keys`),
			chromedp.Text(`#key-limits`, &limits),
			chromedp.Evaluate(`[...document.querySelectorAll("table.keys tbody tr")].map(r => ({Key: r.dataset.key,
				Limit: r.cells[1].textContent, Href: r.querySelector("a").getAttribute("href")}))`, &rows),
		); err != nil {
			t.Fatal(err)
		}
		if limits != "interval 300ms" {
			t.Errorf("the key limit reads %q, want interval 300ms", limits)
		}
		got := map[string]string{}
		for _, r := range rows {
			got[r.Key] = r.Limit
			if r.Href != "/queues/tenants/keys/"+r.Key {
				t.Errorf("key %s links to %q", r.Key, r.Href)
			}
		}
		if got["zed"] != "interval 300ms" || got["acme"] != "window 2/1s own" || len(rows) != 2 {
			t.Errorf("keys listed %+v, want zed (the queue's key limit) and acme (its own, marked)", rows)
		}
	})

	t.Run("key timeline", func(t *testing.T) {
		var svg struct {
			Of, Bad string
			Marks   []struct{ Job, Gate string }
		}
		var check string
		if err := chromedp.Run(ctx,
			chromedp.Navigate(s.console+"/queues/tenants?window=5m"),
			chromedp.WaitVisible(`table.keys`),
			chromedp.Click(`table.keys tr[data-key="acme"] a`),
			chromedp.WaitVisible(`#key-limit`),
			chromedp.Navigate(s.console+"/queues/tenants/keys/acme?window=5m"),
			chromedp.WaitVisible(`#timeline`),
			chromedp.Evaluate(`(() => { const s = document.getElementById("timeline");
				return {Of: s.dataset.of, Bad: s.dataset.bad,
					Marks: [...s.querySelectorAll("g.start")].map(g => ({Job: g.dataset.job, Gate: g.dataset.gate}))}; })()`, &svg),
			chromedp.Text(`#spacing-check`, &check),
		); err != nil {
			t.Fatal(err)
		}
		if svg.Of != "key" {
			t.Errorf("the key page's timeline is the %q's", svg.Of)
		}
		var ids []string
		for _, m := range svg.Marks {
			ids = append(ids, m.Job)
			for _, j := range acme {
				if gate, _ := time.Parse(time.RFC3339Nano, m.Gate); j.ID == m.Job && !gate.Equal(j.StartedAt) {
					t.Errorf("%s's mark is at %s, want its record's started_at %s", m.Job, m.Gate, j.StartedAt.UTC().Format(time.RFC3339Nano))
				}
			}
		}
		slices.Sort(ids)
		if strings.Join(ids, ",") != "acme-1,acme-2,acme-3" {
			t.Errorf("the key's timeline draws %q, want acme's three starts only", ids)
		}
		if svg.Bad != "0" || !strings.Contains(check, "✓ No run of starts breaks at most 2 in any 1s") {
			t.Errorf("the key's spacing check says %q (%s bad), want ✓ against its own limit", check, svg.Bad)
		}
	})
}

// screenshots writes the pages the README and docs/console.md show:
// console-queues.png, console-queue.png (the timeline) and
// console-job.png, into dir.
func screenshots(t *testing.T, ctx context.Context, s stack, dir string) {
	// A busier queue: on-time starts, retries, a failure.
	s.create(t, "webhooks", api.Config{Interval: 250 * time.Millisecond, Backoff: 300 * time.Millisecond, MaxAttempts: 2})
	var specs []api.Spec
	for i := range 24 {
		sp := api.Spec{ID: "hook-" + strconv.Itoa(i+1), Kind: "echo", Payload: json.RawMessage(`{"n":` + strconv.Itoa(i+1) + `}`)}
		switch i {
		case 5, 13:
			sp.Kind, sp.Payload = "fail", json.RawMessage(`{"times":1,"error":"timeout after 5s"}`)
		case 19:
			sp.Kind, sp.Payload = "fail", json.RawMessage(`{"error":"partner answered 503 Service Unavailable"}`)
		}
		specs = append(specs, sp)
	}
	s.run(t, "webhooks", specs...)
	var ids []string
	for _, sp := range specs {
		ids = append(ids, sp.ID)
	}
	shot := func(name, url, wait string, prep ...chromedp.Action) {
		var png []byte
		actions := append([]chromedp.Action{chromedp.EmulateViewport(1200, 900), chromedp.Navigate(url), chromedp.WaitVisible(wait)}, prep...)
		actions = append(actions, chromedp.CaptureScreenshot(&png))
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d KB)", filepath.Join(dir, name), len(png)/1024)
	}
	shot("console-queues.png", s.console+"/", "table.queues")
	if err := chromedp.Run(ctx,
		chromedp.Navigate(s.console+"/queues/webhooks"),
		chromedp.WaitVisible(`#follow-ids`),
		chromedp.SendKeys(`#follow-ids`, strings.Join(ids, " ")),
		chromedp.Click(`#follow`),
		chromedp.WaitVisible(`p.done`),
	); err != nil {
		t.Fatal(err)
	}
	shot("console-queue.png", s.console+"/queues/webhooks?window=12s", "#timeline",
		chromedp.Evaluate(`document.getElementById("figures-h").scrollIntoView()`, nil))
	shot("console-job.png", s.console+"/queues/webhooks/jobs/hook-20", "#job-error")
}
