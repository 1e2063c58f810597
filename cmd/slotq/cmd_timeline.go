package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// A start is one job's start against its slot.
type start struct {
	JobID     string    `json:"job_id"`
	Ticket    int64     `json:"ticket"`
	Attempt   int       `json:"attempt"`
	SlotAt    time.Time `json:"slot_at"`
	StartedAt time.Time `json:"started_at"`
	// Late is StartedAt − SlotAt (negative: early, within the skew).
	Late time.Duration `json:"late_ns"`
	// Gap is the time since the start before it in the timeline.
	Gap time.Duration `json:"gap_ns,omitempty"`
}

// timeline is what `slotq timeline --json` prints.
type startTimeline struct {
	Queue    string        `json:"queue"`
	Interval time.Duration `json:"interval_ns,omitempty"`
	Starts   []start       `json:"starts"`
	// NotStarted lists the job ids asked about that have not started
	// (waiting, cancelled, or between attempts).
	NotStarted []string `json:"not_started,omitempty"`
}

const timelineDesc = `Draws the recent starts of QUEUE in the terminal: each start against its slot,
the gap since the start before it, and its lateness.

The stack keeps no list of recent starts (a job that runs without trouble is never
indexed: an index write per start would double what a job costs on DynamoDB), so
the starts come from what you give:
  - job ids, as arguments or with --ids (one per line, or the JSON that
    'slotq enqueue --json' prints): each job's record (its slot and start);
    with --wait, once they ended (slotq enqueue --json | slotq timeline Q --ids - --wait);
  - --failed: the queue's failed jobs (dead letters), which are listed;
  - --log: the worker's "start" log lines, JSON: what 'slotq local --json' prints,
    or the worker function's log lines from CloudWatch Logs. No stack call.`

func timelineCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("timeline", "QUEUE [ID ...]", timelineDesc, stdout, stderr)
	ids := c.fs.String("ids", "", "FILE (or - for stdin) of job ids: one per line, or 'slotq enqueue --json' output")
	failed := c.fs.Bool("failed", false, "include the queue's failed jobs")
	logFile := c.fs.String("log", "", "FILE (or - for stdin) of JSON log lines to read the starts from")
	last := c.fs.Int("last", 30, "show the most recent N starts")
	width := c.fs.Int("width", 40, "width of the picture in columns")
	wait := c.fs.Bool("wait", false, "wait for the jobs named to end before drawing them (jobs just enqueued)")
	timeout := c.fs.Duration("timeout", defaultWaitTimeout, "with --wait, how long to wait at most for all of them")
	pos, code := c.parse(args, 1, -1)
	if code >= 0 {
		return code
	}
	queue, want := pos[0], pos[1:]
	if *ids != "" {
		b, err := readArg("@" + *ids)
		if *ids == "-" {
			b, err = readArg("-")
		}
		if err != nil {
			return c.fail(usagef("--ids: %v", err))
		}
		want = append(want, idsOf(b)...)
	}
	if len(want) == 0 && !*failed && *logFile == "" {
		fmt.Fprintf(stderr, "slotq timeline: give job ids, --ids, --failed or --log: the stack keeps no list of recent starts (see --help)\n")
		return exitUsage
	}
	if *logFile != "" && (len(want) > 0 || *failed) {
		return c.fail(usagef("--log reads starts from logs: give it without job ids or --failed"))
	}
	if *wait && len(want) == 0 {
		return c.fail(usagef("--wait waits for the jobs named: give job ids or --ids"))
	}
	if *width < 10 || *last < 1 {
		return c.fail(usagef("--width must be at least 10 and --last at least 1"))
	}
	show := func(tl startTimeline) (any, func(io.Writer), error) {
		tl.Starts = recent(tl.Starts, *last)
		return tl, func(w io.Writer) { drawTimeline(w, tl, *width) }, nil
	}
	if *logFile != "" {
		r := stdin
		if *logFile != "-" {
			f, err := os.Open(*logFile)
			if err != nil {
				return c.fail(usagef("--log: %v", err))
			}
			defer f.Close()
			r = f
		}
		tl, err := startsFromLog(r, queue)
		if err != nil {
			return c.fail(err)
		}
		c.conn.endpoint = "unused" // no stack call: skip the stack lookup
		c.conn.stack = ""
		return c.run(ctx, func(*client.Client) (any, func(io.Writer), error) { return show(tl) })
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		tl := startTimeline{Queue: queue}
		st, err := cl.GetStats(ctx, &client.GetStatsInput{Queue: queue})
		if err != nil {
			return nil, nil, err
		}
		tl.Interval = st.Stats.Config.Interval
		var jobs []api.Job
		wctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		for _, id := range want {
			if *wait {
				// Ended jobs draw as they are; those still waiting at
				// the timeout are listed as not started.
				out, err := cl.Wait(wctx, &client.WaitInput{Queue: queue, JobID: id})
				var je *client.JobError
				switch {
				case err == nil, errors.As(err, &je), wctx.Err() != nil && out.Polls > 0:
					jobs = append(jobs, out.Job)
					continue
				case err != nil:
					return nil, nil, err
				}
			}
			out, err := cl.GetJob(ctx, &client.GetJobInput{Queue: queue, JobID: id})
			if err != nil {
				return nil, nil, err
			}
			jobs = append(jobs, out.Job)
		}
		if *failed {
			in := &client.ListJobsInput{Queue: queue, Status: api.Failed}
			for {
				page, err := cl.ListJobs(ctx, in)
				if err != nil {
					return nil, nil, err
				}
				jobs = append(jobs, page.Jobs...)
				if in.After = page.NextAfter; in.After == 0 {
					break
				}
			}
		}
		for _, j := range jobs {
			if j.StartedAt.IsZero() {
				tl.NotStarted = append(tl.NotStarted, j.ID)
				continue
			}
			tl.Starts = append(tl.Starts, start{JobID: j.ID, Ticket: j.Ticket, Attempt: j.Attempt, SlotAt: j.SlotAt, StartedAt: j.StartedAt})
		}
		return show(tl)
	})
}

// idsOf reads job ids: the JSON of an enqueue answer ({"jobs":[{"job_id"…}]})
// or of a list of jobs, or one id a line.
func idsOf(b []byte) []string {
	var ans struct {
		Jobs []struct {
			ID string `json:"job_id"`
		} `json:"jobs"`
	}
	var ids []string
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.Decode(&ans) == nil {
		for _, j := range ans.Jobs {
			ids = append(ids, j.ID)
		}
		ans.Jobs = nil
	}
	if len(ids) > 0 {
		return ids
	}
	for _, l := range strings.Fields(string(b)) {
		ids = append(ids, l)
	}
	return ids
}

// startsFromLog reads the "start" lines of queue from JSON log lines (the
// engine's: msg "start", with queue, job_id, ticket, slot_at, lateness_ms,
// attempt and the record's time). Other lines are skipped.
func startsFromLog(r io.Reader, queue string) (startTimeline, error) {
	tl := startTimeline{Queue: queue}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if i := bytes.IndexByte(line, '{'); i > 0 {
			line = line[i:] // a CloudWatch Logs prefix (timestamp, stream)
		}
		var l struct {
			Msg        string    `json:"msg"`
			Time       time.Time `json:"time"`
			Queue      string    `json:"queue"`
			JobID      string    `json:"job_id"`
			Ticket     int64     `json:"ticket"`
			SlotAt     time.Time `json:"slot_at"`
			LatenessMS *int64    `json:"lateness_ms"`
			Attempt    int       `json:"attempt"`
		}
		if json.Unmarshal(line, &l) != nil || l.Msg != "start" || l.Queue != queue || l.SlotAt.IsZero() {
			continue
		}
		s := start{JobID: l.JobID, Ticket: l.Ticket, Attempt: l.Attempt, SlotAt: l.SlotAt, StartedAt: l.Time}
		if l.LatenessMS != nil && (s.StartedAt.IsZero() || s.StartedAt.Sub(s.SlotAt).Milliseconds() != *l.LatenessMS) {
			s.StartedAt = l.SlotAt.Add(time.Duration(*l.LatenessMS) * time.Millisecond)
		}
		if s.StartedAt.IsZero() {
			continue
		}
		tl.Starts = append(tl.Starts, s)
	}
	return tl, sc.Err()
}

// recent orders starts by start time, keeps the last n, and sets each
// one's lateness and gap.
func recent(ss []start, n int) []start {
	slices.SortStableFunc(ss, func(a, b start) int { return a.StartedAt.Compare(b.StartedAt) })
	if len(ss) > n {
		ss = ss[len(ss)-n:]
	}
	for i := range ss {
		ss[i].Late = ss[i].StartedAt.Sub(ss[i].SlotAt)
		ss[i].Gap = 0
		if i > 0 {
			ss[i].Gap = ss[i].StartedAt.Sub(ss[i-1].StartedAt)
		}
	}
	return ss
}

// drawTimeline prints the starts as a table whose last column is a picture
// of the span they cover: | the slot, * the start, - the lateness between.
func drawTimeline(w io.Writer, tl startTimeline, width int) {
	if len(tl.Starts) == 0 {
		fmt.Fprintf(w, "%s: no starts\n", tl.Queue)
		notStarted(w, tl)
		return
	}
	t0, t1 := tl.Starts[0].SlotAt, tl.Starts[0].StartedAt
	var lates []time.Duration
	for _, s := range tl.Starts {
		t0 = minTime(t0, minTime(s.SlotAt, s.StartedAt))
		t1 = maxTime(t1, maxTime(s.SlotAt, s.StartedAt))
		lates = append(lates, s.Late)
	}
	span := t1.Sub(t0)
	col := func(t time.Time) int {
		if span <= 0 {
			return 0
		}
		return int(float64(t.Sub(t0)) / float64(span) * float64(width-1))
	}
	slices.Sort(lates)
	head := fmt.Sprintf("%s: %d starts from %s to %s (%s)", tl.Queue, len(tl.Starts), ts(t0), ts(t1), span.Round(time.Millisecond))
	if tl.Interval > 0 {
		head += fmt.Sprintf(", interval %s", tl.Interval)
	}
	fmt.Fprintf(w, "%s; late p50 %s, max %s\n", head, ms(lates[len(lates)/2]), ms(lates[len(lates)-1]))
	row(w, "TICKET", "JOB ID", "ATTEMPT", "SLOT", "STARTED", "LATE", "GAP", "|"+strings.Repeat(" ", width-2)+"|")
	for _, s := range tl.Starts {
		bar := []byte(strings.Repeat(" ", width))
		a, b := col(s.SlotAt), col(s.StartedAt)
		for i := min(a, b); i <= max(a, b); i++ {
			bar[i] = '-'
		}
		bar[a], bar[b] = '|', '*'
		gap := "-"
		if s.Gap > 0 {
			gap = strings.TrimPrefix(ms(s.Gap), "+")
		}
		row(w, s.Ticket, s.JobID, s.Attempt, clock(s.SlotAt), clock(s.StartedAt), ms(s.Late), gap, string(bar))
	}
	fmt.Fprintf(w, "| slot  * start  - lateness; times UTC; the picture spans %s\n", span.Round(time.Millisecond))
	notStarted(w, tl)
}

func notStarted(w io.Writer, tl startTimeline) {
	if len(tl.NotStarted) > 0 {
		fmt.Fprintf(w, "not started: %s\n", strings.Join(tl.NotStarted, ", "))
	}
}

// ms writes a duration in milliseconds, signed when late or early.
func ms(d time.Duration) string {
	return fmt.Sprintf("%+.1fms", float64(d)/float64(time.Millisecond))
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
