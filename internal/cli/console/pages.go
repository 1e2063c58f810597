package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// maxFailures is how many failed jobs the queue page lists and follows
// at each refresh: one admin list call.
const maxFailures = 20

// page is what every template gets.
type page struct {
	Name    string
	Title   string
	Refresh time.Duration
	Token   string
	Now     time.Time
	Done    string // what the last action did
	Error   string // an admin call that failed, shown in the page
	Data    any
}

// render writes page name (or only its live part, for ?part=live).
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any, loadErr error) {
	p := page{Name: s.o.Name, Title: title, Refresh: s.o.Refresh, Token: s.token, Now: s.o.Now().UTC(),
		Done: doneText(r.URL.Query()), Data: data}
	if loadErr != nil {
		p.Error = loadErr.Error()
		s.o.Logger.WarnContext(r.Context(), "admin call failed", "page", r.URL.Path, "err", loadErr)
	}
	tmpl := "layout"
	if r.URL.Query().Get("part") == "live" {
		tmpl = "live"
	}
	var b bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&b, tmpl, p); err != nil {
		s.o.Logger.ErrorContext(r.Context(), "render", "page", name, "err", err)
		http.Error(w, "slotq console: render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	b.WriteTo(w)
}

// fail answers an admin call that failed: 404 for what does not exist.
func (s *server) fail(w http.ResponseWriter, r *http.Request, title string, err error) {
	status := http.StatusBadGateway
	if errors.Is(err, ErrNotFound) {
		status = http.StatusNotFound
	}
	s.render(w, r, status, "error", title, nil, err)
}

// queueRow is one queue on the queues page.
type queueRow struct {
	api.Queue
	Stats QueueStats
	Err   string
}

func (s *server) queues(w http.ResponseWriter, r *http.Request) {
	qs, err := s.src.Queues(r.Context())
	if err != nil {
		s.fail(w, r, "Queues", err)
		return
	}
	rows := make([]queueRow, len(qs))
	for i, q := range qs {
		rows[i].Queue = q
		st, err := s.stats(r.Context(), q.Name)
		if err != nil {
			rows[i].Err = err.Error()
			continue
		}
		rows[i].Stats = st
		s.follow.sample(q.Name, st.State)
	}
	s.render(w, r, http.StatusOK, "queues", "Queues", rows, nil)
}

// queueData is the queue page.
type queueData struct {
	Queue    string
	Stats    QueueStats
	Failures []api.Job
	Timeline timeline
	Windows  []windowLink
	Followed int
	// Schedules are the queue's schedules with their next occurrences
	// (schedules.go).
	Schedules []scheduleRow
	// Keys is set on a queue with key_limits.
	Keys *keysData
}

// maxKeyRows is how many of the busiest keys the queue page lists: one
// list_keys call answers up to 1,000.
const maxKeyRows = 20

// keysData is the keys part of a keyed queue's page.
type keysData struct {
	// Limits is the queue's key_limits in words; MaxRunning says how
	// many jobs of a key run at once.
	Limits     string
	MaxRunning string
	// AtLimit counts the keys whose own limit holds back their next
	// start (stats' keys_at_limit).
	AtLimit int
	// Rows are the busiest keys, Listed how many list_keys answered.
	Rows   []api.KeyInfo
	Listed int
	// ReadAt is when they were read: at most every keysEvery.
	ReadAt time.Time
}

// keyRunning says a queue's key_max_running in words.
func keyRunning(n int) string {
	switch n {
	case api.NoKeyCap:
		return "no cap"
	case 0, 1:
		return "one at a time"
	}
	return fmt.Sprintf("at most %d at once", n)
}

type windowLink struct {
	Label   string
	Value   string
	Current bool
}

func (s *server) queue(w http.ResponseWriter, r *http.Request) {
	ctx, name := r.Context(), r.PathValue("queue")
	st, err := s.stats(ctx, name)
	if err != nil {
		s.fail(w, r, "Queue "+name, err)
		return
	}
	s.follow.sample(name, st.State)
	d := queueData{Queue: name, Stats: st}
	var errs []error
	if st.Failed > 0 {
		// The first page by ticket: the admin function lists no newest
		// first.
		d.Failures, err = s.src.Jobs(ctx, name, api.Failed, 0, maxFailures)
		if err != nil {
			errs = append(errs, fmt.Errorf("list failed jobs: %w", err))
		}
		s.follow.seen(name, d.Failures...)
	}
	if d.Schedules, err = s.schedules(ctx, name); err != nil {
		errs = append(errs, err)
	}
	now := s.o.Now()
	if err := s.follow.refresh(ctx, s.src, name, now, s.o.Refresh); err != nil {
		errs = append(errs, fmt.Errorf("read followed jobs: %w", err))
	}
	cfg := st.Config // the admin function answers it with its defaults filled
	ls := slot.Config(cfg).LimitList()
	var window time.Duration
	window, d.Windows = windowOf(r, slot.Config(cfg).Tick(), ls.Plain())
	// Every start of the window, from the worker's start lines; the
	// jobs the console knows add what their records say (re-tickets).
	logged, err := s.src.Starts(ctx, name, now.Add(-min(window, maxStartsBack)))
	if err != nil {
		errs = append(errs, fmt.Errorf("read the queue's starts: %w", err))
	}
	jobs, gate := s.follow.snapshot(name)
	d.Followed = len(jobs)
	d.Timeline = newTimeline(jobs, logged, gate, ls, cfg.Skew, window, now)
	d.Timeline.Subject = "queue " + name
	if len(cfg.KeyLimits) > 0 {
		d.Keys = &keysData{Limits: slot.Limits(cfg.KeyLimits).String(), MaxRunning: keyRunning(cfg.KeyMaxRunning),
			AtLimit: st.Lanes.KeysAtLimit}
		keys, at, err := s.busiest(ctx, name)
		d.Keys.ReadAt = at
		if err != nil {
			errs = append(errs, fmt.Errorf("list the queue's keys: %w", err))
		}
		d.Keys.Listed = len(keys)
		d.Keys.Rows = keys[:min(len(keys), maxKeyRows)]
	}
	s.render(w, r, http.StatusOK, "queue", "Queue "+name, d, errors.Join(errs...))
}

// windowOf reads the page's window (?window=), or the automatic one of
// a limit whose average gap is tick; the links to the others.
func windowOf(r *http.Request, tick time.Duration, plain bool) (time.Duration, []windowLink) {
	auto, autoLabel := autoWindow(tick), "40 intervals"
	if !plain {
		autoLabel = "40 average gaps"
	}
	window, asked := auto, r.URL.Query().Get("window")
	if v, err := time.ParseDuration(asked); err == nil && v >= time.Second && v <= 24*time.Hour {
		window = v
	}
	links := []windowLink{{Label: autoLabel + " (" + short(auto) + ")", Current: asked == ""}}
	for _, wd := range windows {
		links = append(links, windowLink{Label: short(wd), Value: wd.String(), Current: asked != "" && wd == window})
	}
	return window, links
}

// keyData is a key's page.
type keyData struct {
	Queue    string
	Key      api.KeyInfo
	Limits   string // the key's limits in words
	Stats    QueueStats
	Timeline timeline
	Windows  []windowLink
}

// key shows one key of a keyed queue: its figures and its starts over a
// window, judged by the key's own limits (its own, or the queue's
// key_limits) as the queue page judges the queue's by the queue's.
func (s *server) key(w http.ResponseWriter, r *http.Request) {
	ctx, name, key := r.Context(), r.PathValue("queue"), r.PathValue("key")
	if err := slot.ValidateKey("key", key); err != nil {
		s.render(w, r, http.StatusBadRequest, "error", "Not a key", nil, err)
		return
	}
	st, err := s.stats(ctx, name)
	if err != nil {
		s.fail(w, r, "Queue "+name, err)
		return
	}
	cfg := st.Config
	if len(cfg.KeyLimits) == 0 {
		s.render(w, r, http.StatusNotFound, "error", "Key "+key, nil,
			fmt.Errorf("queue %s has no key_limits: its keys keep no limit of their own", name))
		return
	}
	ki, err := s.src.Key(ctx, name, key)
	if err != nil {
		s.fail(w, r, "Key "+key, err)
		return
	}
	ls := slot.Limits(ki.Limits)
	if len(ls) == 0 {
		ls = slot.Limits(cfg.KeyLimits)
	}
	d := keyData{Queue: name, Key: ki, Limits: ls.String(), Stats: st}
	var window time.Duration
	window, d.Windows = windowOf(r, slot.Config{Limits: ls}.Tick(), ls.Plain())
	now := s.o.Now()
	var errs []error
	if err := s.follow.refresh(ctx, s.src, name, now, s.o.Refresh); err != nil {
		errs = append(errs, fmt.Errorf("read followed jobs: %w", err))
	}
	logged, err := s.src.Starts(ctx, name, now.Add(-min(window, maxStartsBack)))
	if err != nil {
		errs = append(errs, fmt.Errorf("read the queue's starts: %w", err))
	}
	logged = slices.DeleteFunc(logged, func(l api.Start) bool { return l.Key != key })
	jobs, _ := s.follow.snapshot(name)
	jobs = slices.DeleteFunc(jobs, func(j api.Job) bool { return j.Key != key })
	// The queue's gate samples are the queue's, not the key's: none here.
	d.Timeline = newTimeline(jobs, logged, nil, ls, cfg.Skew, window, now)
	d.Timeline.Of, d.Timeline.Subject = "key", "key "+key+" of queue "+name
	s.render(w, r, http.StatusOK, "key", "Key "+key+" of "+name, d, errors.Join(errs...))
}

// jobData is the job page.
type jobData struct {
	Job    api.Job
	Runs   string // what it runs: kind:NAME or its target
	Starts []start
	Why    string
	Result string
	Stats  *QueueStats
}

func (s *server) job(w http.ResponseWriter, r *http.Request) {
	ctx, name, id := r.Context(), r.PathValue("queue"), r.PathValue("id")
	j, err := s.src.Job(ctx, name, id)
	if err != nil {
		s.fail(w, r, "Job "+id, err)
		return
	}
	s.follow.seen(name, j)
	d := jobData{Job: j, Runs: j.What(), Starts: startsOf(j)}
	if len(j.Result) > 0 {
		var b bytes.Buffer
		if json.Indent(&b, j.Result, "", "  ") == nil {
			d.Result = b.String()
		} else {
			d.Result = string(j.Result)
		}
	}
	d.Why = why(j)
	s.render(w, r, http.StatusOK, "job", "Job "+id, d, nil)
}

// why says, for people, why a job has not started.
func why(j api.Job) string {
	switch j.Status {
	case api.Queued:
		return "Queued: it waits in the slot queue for its slot at " + j.SlotAt.UTC().Format(time.RFC3339Nano) + "."
	case api.Parked:
		switch j.ParkReason {
		case api.PausedQueue:
			return "Parked because its queue is paused: resuming the queue releases it, in its old order."
		case api.WaitKey:
			return fmt.Sprintf("Parked waiting for its key %q: another job of the queue holds it, and hands it on as its attempt ends.", j.Key)
		case api.WaitPlace:
			return "Parked waiting for a running place: the queue runs max_running attempts already; the next to end hands it its place."
		case api.Far:
			return "Parked because its slot lies further away than the slot queue can delay a message: the resume function sends it at " + j.DueAt.UTC().Format(time.RFC3339) + "."
		case api.WaitGate:
			return "Parked until the queue's gate opens for it, at " + j.DueAt.UTC().Format(time.RFC3339) + "."
		case api.Unsent:
			return "Parked because the slot queue refused it: the resume function sends it again."
		}
		return "Parked (" + string(j.ParkReason) + ")."
	case api.Running:
		return "Running: its attempt " + strconv.Itoa(j.Attempt) + " started at " + j.StartedAt.UTC().Format(time.RFC3339Nano) + "."
	}
	return ""
}

// action is one thing the console does after a confirmation.
type action struct {
	Name    string // the path segment
	Verb    string // the button
	Danger  bool
	NeedJob bool
}

var actions = map[string]action{
	"pause":  {Name: "pause", Verb: "Pause"},
	"resume": {Name: "resume", Verb: "Resume"},
	"purge":  {Name: "purge", Verb: "Purge", Danger: true},
	"cancel": {Name: "cancel", Verb: "Cancel job", Danger: true, NeedJob: true},
	"retry":  {Name: "retry", Verb: "Retry job", NeedJob: true},
}

// confirmData is the confirmation page of an action.
type confirmData struct {
	Action   action
	Queue    string
	JobID    string
	For      string
	Until    string // RFC 3339, for the form
	UntilAt  time.Time
	Question string
	Back     string
}

func (s *server) confirm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d, err := s.confirmOf(r.PathValue("queue"), q.Get("action"), q.Get("job"), q.Get("for"), q.Get("until"))
	if err != nil {
		s.render(w, r, http.StatusBadRequest, "error", "Confirm", nil, err)
		return
	}
	s.render(w, r, http.StatusOK, "confirm", d.Action.Verb+" — confirm", d, nil)
}

// confirmOf checks an action's parameters and says what it will do.
func (s *server) confirmOf(queue, name, id, forText, untilText string) (confirmData, error) {
	a, ok := actions[name]
	if !ok {
		return confirmData{}, fmt.Errorf("unknown action %q", name)
	}
	if a.NeedJob && id == "" {
		return confirmData{}, fmt.Errorf("%s needs a job", name)
	}
	d := confirmData{Action: a, Queue: queue, JobID: id, Back: "/queues/" + url.PathEscape(queue)}
	if id != "" {
		d.Back += "/jobs/" + url.PathEscape(id)
	}
	switch name {
	case "pause":
		until, err := s.pauseUntil(forText, untilText)
		if err != nil {
			return d, err
		}
		d.For, d.UntilAt = strings.TrimSpace(forText), until
		if !until.IsZero() {
			d.Until = until.Format(time.RFC3339)
		}
		switch {
		case until.IsZero():
			d.Question = fmt.Sprintf("Pause queue %s until it is resumed? Nothing of it starts meanwhile; its jobs park and keep their order.", queue)
		default:
			d.Question = fmt.Sprintf("Pause queue %s until %s UTC? Nothing of it starts meanwhile; the pause lifts itself then.", queue, until.Format("2006-01-02 15:04:05"))
		}
	case "resume":
		d.Question = fmt.Sprintf("Resume queue %s? Its parked jobs are released, re-ticketed in their old order.", queue)
	case "purge":
		d.Question = fmt.Sprintf("Purge queue %s? Every job of it that has not started is cancelled. This cannot be undone.", queue)
	case "cancel":
		d.Question = fmt.Sprintf("Cancel job %s of queue %s? It will not start (a job that started already is not stopped).", id, queue)
	case "retry":
		d.Question = fmt.Sprintf("Run job %s of queue %s again? It takes a new ticket at the end of the line.", id, queue)
	}
	return d, nil
}

// pauseUntil reads a pause's end: a duration from now ("10m"), or a time
// (RFC 3339, or a datetime-local form field read as UTC). Neither: zero,
// a pause until resumed.
func (s *server) pauseUntil(forText, untilText string) (time.Time, error) {
	forText, untilText = strings.TrimSpace(forText), strings.TrimSpace(untilText)
	switch {
	case forText != "" && untilText != "":
		return time.Time{}, errors.New("give a pause either a duration or an end time, not both")
	case forText != "":
		d, err := time.ParseDuration(forText)
		if err != nil || d <= 0 {
			return time.Time{}, fmt.Errorf("pause for %q: give a duration such as 10m or 1h30m", forText)
		}
		return s.o.Now().Add(d).UTC().Truncate(time.Second), nil
	case untilText != "":
		for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
			if t, err := time.ParseInLocation(layout, untilText, time.UTC); err == nil {
				if !t.After(s.o.Now()) {
					return time.Time{}, fmt.Errorf("pause until %s: that time has passed", untilText)
				}
				return t.UTC(), nil
			}
		}
		return time.Time{}, fmt.Errorf("pause until %q: give a time such as 2026-06-01T14:00 (UTC)", untilText)
	}
	return time.Time{}, nil
}

// act runs a confirmed action and sends the browser back to its page.
func (s *server) act(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "slotq console: "+err.Error(), http.StatusBadRequest)
		return
	}
	if r.PostForm.Get("token") != s.token {
		http.Error(w, "slotq console: this form is not from this console (reload the page and confirm again)", http.StatusForbidden)
		return
	}
	queue, name, id := r.PathValue("queue"), r.PathValue("action"), r.PostForm.Get("job")
	d, err := s.confirmOf(queue, name, id, "", r.PostForm.Get("until"))
	if err != nil {
		s.render(w, r, http.StatusBadRequest, "error", "Action", nil, err)
		return
	}
	if r.PostForm.Get("confirm") != "yes" {
		http.Error(w, "slotq console: an action needs its confirmation", http.StatusBadRequest)
		return
	}
	done, err := s.do(r.Context(), d)
	if err != nil {
		s.o.Logger.WarnContext(r.Context(), "action failed", "action", name, "queue", queue, "job_id", id, "err", err)
		s.render(w, r, http.StatusBadGateway, "error", d.Action.Verb, nil, err)
		return
	}
	s.o.Logger.InfoContext(r.Context(), "action", "action", name, "queue", queue, "job_id", id)
	http.Redirect(w, r, d.Back+"?"+done.Encode(), http.StatusSeeOther)
}

// do runs a confirmed action and says what it did, as query parameters
// doneText reads.
func (s *server) do(ctx context.Context, d confirmData) (url.Values, error) {
	v := url.Values{"done": {d.Action.Name}}
	switch d.Action.Name {
	case "pause":
		return v, s.src.Pause(ctx, d.Queue, d.UntilAt)
	case "resume":
		return v, s.src.Resume(ctx, d.Queue)
	case "purge":
		n, err := s.src.Purge(ctx, d.Queue)
		v.Set("n", strconv.Itoa(n))
		return v, err
	case "cancel":
		return v, s.src.Cancel(ctx, d.Queue, d.JobID)
	case "retry":
		return v, s.src.Retry(ctx, d.Queue, d.JobID, "console")
	}
	return nil, fmt.Errorf("unknown action %q", d.Action.Name)
}

// doneText says what the action named in q did: fixed sentences, so a
// link cannot put words of its own in the page.
func doneText(q url.Values) string {
	switch q.Get("done") {
	case "pause":
		return "Paused."
	case "resume":
		return "Resumed: its parked jobs were released."
	case "purge":
		n, _ := strconv.Atoi(q.Get("n"))
		return fmt.Sprintf("Purged: %d jobs cancelled.", n)
	case "cancel":
		return "Job cancelled."
	case "retry":
		return "Job run again: it took a new ticket."
	case "follow":
		return "Following those jobs: their starts show on the timeline."
	}
	return ""
}

// maxFollowIDs caps the ids one follow request names.
const maxFollowIDs = 500

// followJobs adds job ids to the queue's timeline: ids separated by
// spaces, commas or lines, or the JSON `slotq enqueue --json` prints.
func (s *server) followJobs(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "slotq console: "+err.Error(), http.StatusBadRequest)
		return
	}
	if r.PostForm.Get("token") != s.token {
		http.Error(w, "slotq console: this form is not from this console (reload the page)", http.StatusForbidden)
		return
	}
	queue := r.PathValue("queue")
	ids := idsOf(r.PostForm.Get("ids"))
	if len(ids) > maxFollowIDs {
		ids = ids[:maxFollowIDs]
	}
	s.follow.add(queue, ids...)
	http.Redirect(w, r, "/queues/"+url.PathEscape(queue)+"?done=follow", http.StatusSeeOther)
}

// idsOf reads job ids: an enqueue answer's JSON ({"jobs":[{"job_id"…}]},
// one or several), or ids separated by spaces, commas or lines.
func idsOf(text string) []string {
	var ids []string
	dec := json.NewDecoder(strings.NewReader(text))
	for {
		var ans struct {
			Jobs []struct {
				ID string `json:"job_id"`
			} `json:"jobs"`
		}
		if dec.Decode(&ans) != nil {
			break
		}
		for _, j := range ans.Jobs {
			ids = append(ids, j.ID)
		}
	}
	if len(ids) > 0 {
		return ids
	}
	return strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"short":  short,
	"signed": signed,
	"utc":    func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
	"full": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
	},
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	// ahead reports whether t is still to come: a slow-down that holds.
	"ahead": func(t time.Time) bool { return time.Now().Before(t) },
	"path":  url.PathEscape,
	"ms": func(p *float64) string {
		if p == nil {
			return "—"
		}
		return short(time.Duration(*p * float64(time.Millisecond)))
	},
	"dur": func(d any) string {
		switch v := d.(type) {
		case time.Duration:
			return short(v)
		case api.Duration:
			return short(time.Duration(v))
		case interface{ String() string }:
			return v.String()
		}
		return fmt.Sprint(d)
	},
	"f1":   func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"sub":  func(a, b float64) float64 { return a - b },
	"add":  func(a, b float64) float64 { return a + b },
	"half": func(a, b float64) float64 { return (a + b) / 2 },
	"secs": func(d time.Duration) int { return int(d / time.Second) },
	// limits says a queue's limits in the words a user writes them.
	"limits": func(c api.Config) string { return slot.Config(c).LimitList().String() },
	// keylimits says a key's limits so: "-" for none.
	"keylimits": func(ls []api.Limit) string {
		if len(ls) == 0 {
			return "—"
		}
		return slot.Limits(ls).String()
	},
}
