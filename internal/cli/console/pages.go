package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/slotq/slotq/internal/cli/clikit"
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
	// Room is set on a queue with a booking horizon (book_ahead,
	// key_book_ahead) or jobs in its waiting room.
	Room *roomData
}

// roomData is the waiting room part of a queue's page, beside its
// timeline.
type roomData struct {
	// Booked counts the jobs holding a slot of the horizon, BookAhead and
	// KeyBookAhead are the bounds (0: none), Waiting the jobs in the room.
	Booked, BookAhead, KeyBookAhead, Waiting int
	// Priorities are the room's jobs by priority, 1 first, those with
	// jobs only.
	Priorities []priorityRow
	// Keys are its busiest keys, most jobs first.
	Keys []api.RoomKey
}

type priorityRow struct{ Priority, Jobs int }

// newRoomData is the room part of the page of a queue whose stats are st,
// nil for a queue without a room.
func newRoomData(st api.Stats) *roomData {
	f := st.Room
	if f == nil {
		return nil
	}
	d := &roomData{Booked: f.Booked, BookAhead: st.Config.BookAhead, KeyBookAhead: st.Config.KeyBookAhead,
		Waiting: f.Waiting, Keys: f.Keys}
	for i, n := range f.ByPriority {
		if n > 0 {
			d.Priorities = append(d.Priorities, priorityRow{Priority: i + 1, Jobs: n})
		}
	}
	return d
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
	d := queueData{Queue: name, Stats: st, Room: newRoomData(st.Stats)}
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
	links := []windowLink{{Label: autoLabel + " (" + clikit.Human(auto) + ")", Current: asked == ""}}
	for _, wd := range windows {
		links = append(links, windowLink{Label: clikit.Human(wd), Value: wd.String(), Current: asked != "" && wd == window})
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

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"short":  clikit.Human,
	"signed": clikit.Signed,
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
		return clikit.Human(time.Duration(*p * float64(time.Millisecond)))
	},
	"dur": func(d any) string {
		switch v := d.(type) {
		case time.Duration:
			return clikit.Human(v)
		case api.Duration:
			return clikit.Human(time.Duration(v))
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
