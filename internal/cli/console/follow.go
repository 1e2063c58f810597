package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// follow keeps, per queue, the jobs whose starts the timeline draws and
// the gate's last starts read at each refresh. The stack keeps no list
// of recent starts (a job that runs without trouble is never indexed),
// so the console draws the jobs it knows of: those named on the queue's
// page, those it listed (failed and parked) and those opened.
type follow struct {
	max int

	mu     sync.Mutex
	queues map[string]*followed
}

type followed struct {
	jobs  map[string]api.Job // the last record read; a zero one not read yet
	order []string           // ids, oldest first
	gate  []gateSample
}

// gateSample is the queue's counters at one refresh: the highest ticket
// started (Current) and the theoretical time of the last start.
type gateSample struct {
	Ticket int64
	At     time.Time
}

// maxGateSamples bounds the samples kept per queue.
const maxGateSamples = 500

func newFollow(n int) *follow { return &follow{max: n, queues: map[string]*followed{}} }

func (f *follow) queue(q string) *followed {
	fq := f.queues[q]
	if fq == nil {
		fq = &followed{jobs: map[string]api.Job{}}
		f.queues[q] = fq
	}
	return fq
}

// add follows ids of queue (not read yet).
func (f *follow) add(queue string, ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fq := f.queue(queue)
	for _, id := range ids {
		if _, ok := fq.jobs[id]; ok || id == "" {
			continue
		}
		fq.jobs[id] = api.Job{}
		fq.order = append(fq.order, id)
	}
	f.trim(fq)
}

// seen follows jobs just read, keeping their records.
func (f *follow) seen(queue string, jobs ...api.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fq := f.queue(queue)
	for _, j := range jobs {
		if _, ok := fq.jobs[j.ID]; !ok {
			fq.order = append(fq.order, j.ID)
		}
		fq.jobs[j.ID] = j
	}
	f.trim(fq)
}

func (f *follow) trim(fq *followed) {
	if n := len(fq.order) - f.max; n > 0 {
		for _, id := range fq.order[:n] {
			delete(fq.jobs, id)
		}
		fq.order = slices.Delete(fq.order, 0, n)
	}
}

// sample records the gate's last start from the queue's state, once per
// ticket.
func (f *follow) sample(queue string, st api.QueueState) {
	if st.Current == 0 || st.LastStart.IsZero() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fq := f.queue(queue)
	if n := len(fq.gate); n > 0 && fq.gate[n-1].Ticket >= st.Current {
		return
	}
	fq.gate = append(fq.gate, gateSample{Ticket: st.Current, At: st.LastStart})
	if n := len(fq.gate) - maxGateSamples; n > 0 {
		fq.gate = slices.Delete(fq.gate, 0, n)
	}
}

// stale returns the ids of queue's jobs to read again at now: those not
// read yet, and those not ended whose slot is due within ahead (a job
// waiting for a later slot cannot start before it, so it costs no read
// until then).
func (f *follow) stale(queue string, now time.Time, ahead time.Duration) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	fq := f.queues[queue]
	if fq == nil {
		return nil
	}
	var ids []string
	for _, id := range fq.order {
		j := fq.jobs[id]
		switch {
		case j.ID == "":
			ids = append(ids, id)
		case j.Status.Final():
		case j.Status == api.Parked && j.ParkReason != api.PausedQueue && j.DueAt.After(now.Add(ahead)):
		case j.Status == api.Queued && j.SlotAt.After(now.Add(ahead)):
		default:
			ids = append(ids, id)
		}
	}
	return ids
}

// forget stops following a job that does not exist.
func (f *follow) forget(queue, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fq := f.queues[queue]
	if fq == nil {
		return
	}
	delete(fq.jobs, id)
	fq.order = slices.DeleteFunc(fq.order, func(s string) bool { return s == id })
}

// snapshot returns queue's followed records that have been read and its
// gate samples.
func (f *follow) snapshot(queue string) ([]api.Job, []gateSample) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fq := f.queues[queue]
	if fq == nil {
		return nil, nil
	}
	var jobs []api.Job
	for _, id := range fq.order {
		if j := fq.jobs[id]; j.ID != "" {
			jobs = append(jobs, j)
		}
	}
	return jobs, slices.Clone(fq.gate)
}

// refresh reads queue's stale jobs through src. A job that no longer
// exists is forgotten; other errors are returned after the rest are
// read.
func (f *follow) refresh(ctx context.Context, src Source, queue string, now time.Time, ahead time.Duration) error {
	var errs []error
	for _, id := range f.stale(queue, now, ahead) {
		j, err := src.Job(ctx, queue, id)
		switch {
		case errors.Is(err, ErrNotFound):
			f.forget(queue, id)
		case err != nil:
			errs = append(errs, err)
		default:
			f.seen(queue, j)
		}
	}
	return errors.Join(errs...)
}

// maxFollowIDs caps the ids one follow request names.
const maxFollowIDs = 500

// followJobs adds job ids to the queue's timeline: ids separated by
// spaces, commas or lines, or the JSON `slotq enqueue --json` prints.
func (s *server) followJobs(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if !s.ownForm(w, r, "reload the page") {
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
