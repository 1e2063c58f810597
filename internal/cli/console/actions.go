package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

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

// ownForm parses the form r posts and answers whether it came from a
// page of this console (it carries the console's token); if not, it has
// answered the browser with an error, whose hint says what to do.
func (s *server) ownForm(w http.ResponseWriter, r *http.Request, hint string) bool {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "slotq console: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if r.PostForm.Get("token") != s.token {
		http.Error(w, "slotq console: this form is not from this console ("+hint+")", http.StatusForbidden)
		return false
	}
	return true
}

// act runs a confirmed action and sends the browser back to its page.
func (s *server) act(w http.ResponseWriter, r *http.Request) {
	if !s.ownForm(w, r, "reload the page and confirm again") {
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
