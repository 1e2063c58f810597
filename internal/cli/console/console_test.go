package console

import (
	"context"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	starts "github.com/slotq/slotq/internal/cli/timeline"
	"github.com/slotq/slotq/pkg/api"
)

var t0 = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

// fixture is a console over a fake with queue emails (1s interval, 10ms
// skew) whose jobs started at t0+k s, the third 4ms late, the fourth a
// retry after a re-ticket; one failed and one parked on its key.
func fixture(t *testing.T) (*fakeSource, *server, http.Handler) {
	t.Helper()
	f := newFake()
	st := f.addQueue("emails", api.Config{Interval: time.Second, Skew: 10 * time.Millisecond})
	st.Failed = 1
	f.addQueue("crawls", api.Config{Interval: 2 * time.Second, BatchMax: 20, BatchWait: 500 * time.Millisecond}).State.Paused = true
	started := func(id string, ticket int64, slotAt time.Time, late time.Duration, extra ...api.Event) api.Job {
		h := []api.Event{{At: slotAt.Add(-time.Minute), Kind: api.Enqueued, Ticket: ticket}}
		h = append(h, extra...)
		h = append(h, api.Event{At: slotAt.Add(late), Kind: api.Started, Attempt: 1 + len(extra)/2, LatenessMs: late.Milliseconds()},
			api.Event{At: slotAt.Add(late + 50*time.Millisecond), Kind: api.SucceededEvent, Attempt: 1 + len(extra)/2})
		return api.Job{Queue: "emails", ID: id, Status: api.Succeeded, Ticket: ticket, SlotAt: slotAt, Attempt: 1 + len(extra)/2,
			StartedAt: slotAt.Add(late), History: h, Result: []byte(`{"sent":true}`)}
	}
	f.addJob(started("a", 1, t0, 0))
	f.addJob(started("b", 2, t0.Add(time.Second), 0))
	f.addJob(started("c", 3, t0.Add(2*time.Second), 4*time.Millisecond))
	f.addJob(started("d", 7, t0.Add(3*time.Second), 0,
		api.Event{At: t0, Kind: api.Reticketed, Ticket: 5, OldTicket: 4},
		api.Event{At: t0, Kind: api.Retried, Ticket: 7, Attempt: 2}))
	f.addJob(api.Job{Queue: "emails", ID: "bad", Status: api.Failed, Ticket: 8, Attempt: 3, LastError: "partner answered 500: try later",
		FinishedAt: t0.Add(5 * time.Second)})
	f.addJob(api.Job{Queue: "emails", ID: "k1", Status: api.Parked, ParkReason: api.WaitKey, Key: "ada@example.com", Ticket: 9, SlotAt: t0.Add(9 * time.Second)})
	s := newServer(f, Options{Name: "test", Now: func() time.Time { return t0.Add(10 * time.Second) }})
	return f, s, s.handler()
}

func get(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:3002"+target, nil))
	return rec.Code, html.UnescapeString(rec.Body.String())
}

func post(t *testing.T, h http.Handler, target string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("POST", "http://127.0.0.1:3002"+target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestQueuesPage(t *testing.T) {
	f, _, h := fixture(t)
	code, body := get(t, h, "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d\n%s", code, body)
	}
	for _, want := range []string{`<a href="/queues/emails">emails</a>`, `<a href="/queues/crawls">crawls</a>`, `badge paused`, `<td class="num bad">1</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("queues page lacks %q", want)
		}
	}
	// One list and one stats per queue: what a refresh costs.
	if got, want := f.takeCalls(), []string{"list", "stats emails", "stats crawls"}; !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
}

// marks returns the timeline's marks: job id and start of each.
func marks(body string) [][2]string {
	var out [][2]string
	for _, m := range regexp.MustCompile(`<g class="start[^"]*" data-job="([^"]+)"[^>]*data-start="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

// The queue page says how many jobs a start carries: one, or a batch's
// bound and wait.
func TestQueuePageBatches(t *testing.T) {
	_, _, h := fixture(t)
	for q, want := range map[string]string{
		"emails": `id="queue-batches">one job a start<`,
		"crawls": `id="queue-batches">up to 20 jobs a start, the first waiting 500ms for more<`,
	} {
		if _, body := get(t, h, "/queues/"+q); !strings.Contains(body, want) {
			t.Errorf("page of %s lacks %q", q, want)
		}
	}
}

func TestQueueTimeline(t *testing.T) {
	f, s, h := fixture(t)
	if rec := post(t, h, "/queues/emails/follow", url.Values{"token": {s.token}, "ids": {`{"queue":"emails","jobs":[{"job_id":"a"},{"job_id":"b"}]}`}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("follow = %d %s", rec.Code, rec.Body)
	}
	if rec := post(t, h, "/queues/emails/follow", url.Values{"token": {s.token}, "ids": {"c, d\nmissing"}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("follow = %d %s", rec.Code, rec.Body)
	}
	f.takeCalls()
	code, body := get(t, h, "/queues/emails")
	if code != http.StatusOK {
		t.Fatalf("GET /queues/emails = %d\n%s", code, body)
	}
	want := [][2]string{
		{"a", "2026-11-21T14:00:00Z"}, {"b", "2026-11-21T14:00:01Z"},
		{"c", "2026-11-21T14:00:02.004Z"}, {"d", "2026-11-21T14:00:03Z"},
	}
	if got := marks(body); !slices.Equal(got, want) {
		t.Errorf("marks %v, want %v", got, want)
	}
	for _, want := range []string{
		`class="start retry reticketed" data-job="d"`, // a retry after a re-ticket, not by colour alone:
		`>R</text>`, `<rect class="head"`, // its flag and its diamond head
		`>+4ms</text>`, // c's lateness, labelled
		"✓ Smallest gap 996ms ≥ interval − skew (990ms)",
		"partner answered 500: try later", // the failure with its error
		"interval − skew = 990ms",
		"p50 0ms, p90 +4ms",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("queue page lacks %q", want)
		}
	}
	// A refresh: stats, the failed jobs (there is one), and the followed
	// jobs not read before (missing is read once, then forgotten).
	calls := f.takeCalls()
	if want := []string{"stats emails", "list emails failed", "get emails a", "get emails b", "get emails c", "get emails d", "get emails missing", "starts emails"}; !slices.Equal(calls, want) {
		t.Errorf("first refresh calls %q, want %q", calls, want)
	}
	code, live := get(t, h, "/queues/emails?part=live")
	if code != http.StatusOK || strings.Contains(live, "<html") || !strings.Contains(live, `id="timeline"`) {
		t.Errorf("live part = %d, want the timeline without the page around it:\n%.300s", code, live)
	}
	// Ended jobs are not read again, nor the activity within a minute
	// of its last read: the counters alone.
	if calls, want := f.takeCalls(), []string{"stats emails (counters)", "list emails failed", "starts emails"}; !slices.Equal(calls, want) {
		t.Errorf("next refresh calls %q, want %q", calls, want)
	}
	// A minute on, the activity is read again.
	s.o.Now = func() time.Time { return t0.Add(70 * time.Second) }
	get(t, h, "/queues/emails?part=live")
	if calls := f.takeCalls(); len(calls) == 0 || calls[0] != "stats emails" {
		t.Errorf("a minute on, the refresh calls %q, want the activity read (stats emails) first", calls)
	}
}

// The queue's starts as the admin function lists them are marks too,
// jobs the console never read included; a start it also knows from a
// job's record is drawn once.
func TestQueueTimelineFromStarts(t *testing.T) {
	f, s, h := fixture(t)
	s.follow.add("emails", "a")
	f.starts["emails"] = []api.Start{
		{JobID: "a", Ticket: 1, Attempt: 1, SlotAt: t0, StartedAt: t0}, // also a's record
		{JobID: "u1", Ticket: 7, Attempt: 1, SlotAt: t0.Add(1500 * time.Millisecond), StartedAt: t0.Add(1500 * time.Millisecond)},
		{JobID: "u2", Ticket: 8, Attempt: 2, SlotAt: t0.Add(2500 * time.Millisecond), StartedAt: t0.Add(2512 * time.Millisecond), LatenessMS: 12},
	}
	_, body := get(t, h, "/queues/emails")
	want := [][2]string{{"a", "2026-11-21T14:00:00Z"}, {"u1", "2026-11-21T14:00:01.5Z"}, {"u2", "2026-11-21T14:00:02.512Z"}}
	if got := marks(body); !slices.Equal(got, want) {
		t.Errorf("marks %v, want %v", got, want)
	}
	for _, want := range []string{`class="start retry" data-job="u2"`, `>+12ms</text>`} {
		if !strings.Contains(body, want) {
			t.Errorf("queue page lacks %q", want)
		}
	}
}

func TestSpacingBelowMinimumShown(t *testing.T) {
	f, s, h := fixture(t)
	f.addJob(api.Job{Queue: "emails", ID: "x", Status: api.Running, Ticket: 10, SlotAt: t0.Add(3500 * time.Millisecond), StartedAt: t0.Add(3500 * time.Millisecond),
		History: []api.Event{{At: t0, Kind: api.Enqueued, Ticket: 10}, {At: t0.Add(3500 * time.Millisecond), Kind: api.Started, Attempt: 1}}})
	s.follow.add("emails", "d", "x")
	_, body := get(t, h, "/queues/emails")
	for _, want := range []string{"✗ 1 gaps below interval − skew (990ms)", `class="start gapbad" data-job="x"`, "✗ 500ms"} {
		if !strings.Contains(body, want) {
			t.Errorf("queue page lacks %q", want)
		}
	}
}

// The spacing check counts the gate's starts, as the guarantee does, not
// when the handlers began: a handler that woke 8ms after its gate's start,
// before one that woke on time, began less than interval − skew before it.
func TestSpacingCountsGateStarts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gate2 time.Duration // the second gate's start after the first's
		want  []string
	}{
		{"gates far enough apart", 995 * time.Millisecond, []string{"✓ Smallest gap 995ms ≥ interval − skew (990ms)"}},
		{"gates too close", 985 * time.Millisecond, []string{"✗ 1 gaps below interval − skew (990ms)", `class="start gapbad" data-job="u2"`, "✗ 985ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, h := fixture(t)
			g1, g2 := t0.Add(time.Second), t0.Add(time.Second+tc.gate2)
			f.starts["emails"] = []api.Start{
				{JobID: "u1", Ticket: 7, Attempt: 1, SlotAt: g1, GateAt: g1, StartedAt: g1.Add(8 * time.Millisecond), LatenessMS: 8},
				{JobID: "u2", Ticket: 8, Attempt: 1, SlotAt: g2, GateAt: g2, StartedAt: g2},
			}
			_, body := get(t, h, "/queues/emails")
			for _, want := range tc.want {
				if !strings.Contains(body, want) {
					t.Errorf("queue page lacks %q", want)
				}
			}
		})
	}
}

func TestJobPage(t *testing.T) {
	_, _, h := fixture(t)
	tests := []struct {
		name, path string
		status     int
		want       []string
	}{
		// An ended job's page does not poll: no data-refresh.
		{"failed", "/queues/emails/jobs/bad", 200, []string{`id="job-error"`, "partner answered 500: try later", `id="retry"`, "s-failed", `<div id="live">`}},
		{"parked on a key", "/queues/emails/jobs/k1", 200, []string{`Parked waiting for its key "ada@example.com"`, `id="cancel"`, `<div id="live" data-refresh="5">`}},
		{"succeeded with a result", "/queues/emails/jobs/d", 200, []string{`"sent": true`, "(re-ticketed)", "2 (retry)", "reticketed"}},
		{"missing job", "/queues/emails/jobs/nope", 404, []string{"not found"}},
		{"missing queue", "/queues/nope", 404, []string{"not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, h, tt.path)
			if code != tt.status {
				t.Errorf("GET %s = %d, want %d", tt.path, code, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
}

func TestActions(t *testing.T) {
	tests := []struct {
		name     string
		confirm  string // the confirm page's query
		question string
		form     url.Values
		call     string
		redirect string
	}{
		{"pause", "action=pause", "Pause queue emails until it is resumed?", url.Values{}, "pause emails", "/queues/emails?done=pause"},
		{"pause for", "action=pause&for=10m", "until 2026-11-21 14:10:10 UTC", url.Values{"until": {"2026-11-21T14:10:10Z"}}, "pause emails until 2026-11-21T14:10:10Z", "/queues/emails?done=pause"},
		{"pause until", "action=pause&until=2026-11-21T15:00", "until 2026-11-21 15:00:00 UTC", url.Values{"until": {"2026-11-21T15:00:00Z"}}, "pause emails until 2026-11-21T15:00:00Z", "/queues/emails?done=pause"},
		{"resume", "action=resume", "Resume queue emails?", url.Values{}, "resume emails", "/queues/emails?done=resume"},
		{"purge", "action=purge", "This cannot be undone.", url.Values{}, "purge emails", "/queues/emails?done=purge&n=3"},
		{"cancel", "action=cancel&job=k1", "Cancel job k1 of queue emails?", url.Values{"job": {"k1"}}, "cancel emails k1", "/queues/emails/jobs/k1?done=cancel"},
		{"retry", "action=retry&job=bad", "Run job bad of queue emails again?", url.Values{"job": {"bad"}}, "retry emails bad by console", "/queues/emails/jobs/bad?done=retry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, s, h := fixture(t)
			code, body := get(t, h, "/queues/emails/confirm?"+tt.confirm)
			if code != 200 || !strings.Contains(body, tt.question) || !strings.Contains(body, `value="`+s.token+`"`) {
				t.Fatalf("confirm page = %d, want %q and the token:\n%s", code, tt.question, body)
			}
			if c := f.takeCalls(); len(c) != 0 {
				t.Fatalf("the confirm page called %q", c)
			}
			action := strings.TrimPrefix(strings.SplitN(tt.confirm, "&", 2)[0], "action=")
			// Without the confirmation, or with a token of another page:
			// nothing.
			if rec := post(t, h, "/queues/emails/actions/"+action, with(tt.form, "token", s.token)); rec.Code != http.StatusBadRequest {
				t.Errorf("unconfirmed POST = %d, want 400", rec.Code)
			}
			if rec := post(t, h, "/queues/emails/actions/"+action, with(with(tt.form, "token", "forged"), "confirm", "yes")); rec.Code != http.StatusForbidden {
				t.Errorf("forged POST = %d, want 403", rec.Code)
			}
			if c := f.takeCalls(); len(c) != 0 {
				t.Fatalf("refused POSTs called %q", c)
			}
			rec := post(t, h, "/queues/emails/actions/"+action, with(with(tt.form, "token", s.token), "confirm", "yes"))
			if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != tt.redirect {
				t.Errorf("POST = %d to %q, want 303 to %q\n%s", rec.Code, rec.Header().Get("Location"), tt.redirect, rec.Body)
			}
			if c := f.takeCalls(); !slices.Equal(c, []string{tt.call}) {
				t.Errorf("calls %q, want %q", c, tt.call)
			}
		})
	}
}

func with(v url.Values, k, val string) url.Values {
	c := url.Values{}
	for key, vs := range v {
		c[key] = slices.Clone(vs)
	}
	c.Set(k, val)
	return c
}

func TestConfirmRefusals(t *testing.T) {
	_, _, h := fixture(t)
	for _, q := range []string{
		"action=pause&until=2020-01-01T00:00",  // passed
		"action=pause&for=soon",                // not a duration
		"action=pause&for=1m&until=2030-01-01", // both
		"action=cancel",                        // no job
		"action=drop",                          // no such action
	} {
		if code, body := get(t, h, "/queues/emails/confirm?"+q); code != http.StatusBadRequest || !strings.Contains(body, `class="error"`) {
			t.Errorf("confirm?%s = %d, want 400 with the reason", q, code)
		}
	}
}

func TestRefusesOtherHostsAndOrigins(t *testing.T) {
	_, s, h := fixture(t)
	req := httptest.NewRequest("GET", "http://attacker.example:3002/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("Host attacker.example = %d, want 421", rec.Code)
	}
	for _, host := range []string{"localhost:3002", "[::1]:3002", "127.0.0.2"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/", nil)
		req.Host = host
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("Host %s = %d, want 200", host, rec.Code)
		}
	}
	remote := New(newFake(), Options{AllowRemote: true, AllowHosts: []string{"console.internal"}, AuthProxy: true})
	for host, want := range map[string]int{"console.internal:3002": http.StatusOK, "CONSOLE.internal": http.StatusOK, "rebound.example": http.StatusMisdirectedRequest} {
		rec = httptest.NewRecorder()
		remote.ServeHTTP(rec, httptest.NewRequest("GET", "http://"+host+"/", nil))
		if rec.Code != want {
			t.Errorf("AllowHosts [console.internal]: Host %s = %d, want %d", host, rec.Code, want)
		}
	}
	// A cross-site form post, as a browser sends it, with a good token.
	form := url.Values{"token": {s.token}, "confirm": {"yes"}}
	req = httptest.NewRequest("POST", "http://127.0.0.1:3002/queues/emails/actions/purge", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("cross-site POST = %d, want 403", rec.Code)
	}
}

func TestListen(t *testing.T) {
	tests := []struct {
		addr        string
		allowRemote bool
		refused     bool
	}{
		{"127.0.0.1:0", false, false},
		{"localhost:0", false, false},
		{"0.0.0.0:0", false, true},
		{":0", false, true},
		{"192.0.2.1:0", false, true},
		{"0.0.0.0:0", true, false},
	}
	for _, tt := range tests {
		ln, err := Listen(t.Context(), tt.addr, tt.allowRemote)
		if tt.refused {
			if !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), "pause, cancel and purge") {
				t.Errorf("Listen(%q, %v) = %v, want ErrRemote saying why", tt.addr, tt.allowRemote, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Listen(%q, %v): %v", tt.addr, tt.allowRemote, err)
			continue
		}
		ln.Close()
	}
}

func TestRun(t *testing.T) {
	f, _, _ := fixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, f, "127.0.0.1:0", Options{}, func(u string) { urls <- u }) }()
	u := <-urls
	res, err := http.Get(u + "static/console.css")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), "--accent") {
		t.Errorf("GET console.css = %d", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestStartsOf(t *testing.T) {
	j := api.Job{ID: "j", Ticket: 9, History: []api.Event{
		{At: t0, Kind: api.Enqueued, Ticket: 3},
		{At: t0.Add(time.Second), Kind: api.Started, Attempt: 1, LatenessMs: 2},
		{At: t0.Add(2 * time.Second), Kind: api.AttemptFailed, Attempt: 1, Error: "x"},
		{At: t0.Add(2 * time.Second), Kind: api.Retried, Ticket: 6, Attempt: 2},
		{At: t0.Add(3 * time.Second), Kind: api.SlotMissed, Ticket: 8, OldTicket: 6, LatenessMs: 40},
		{At: t0.Add(4 * time.Second), Kind: api.Started, Attempt: 2},
	}}
	got := startsOf(j)
	want := []start{
		{Start: starts.Start{JobID: "j", Ticket: 3, Attempt: 1, At: t0.Add(time.Second), Gate: t0.Add(time.Second), SlotAt: t0.Add(time.Second - 2*time.Millisecond)}},
		{Start: starts.Start{JobID: "j", Ticket: 8, Attempt: 2, At: t0.Add(4 * time.Second), Gate: t0.Add(4 * time.Second), SlotAt: t0.Add(4 * time.Second)},
			Reticketed: true, Retry: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("startsOf = %+v\nwant %+v", got, want)
	}
}

// wantPage checks that the page's body holds every string of want and
// none of not.
func wantPage(t *testing.T, page, body string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", page, w)
		}
	}
	for _, n := range not {
		if strings.Contains(body, n) {
			t.Errorf("%s has %q", page, n)
		}
	}
}
