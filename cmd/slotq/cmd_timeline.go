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
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/startlog"
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
	// Limits are the queue's limits in words ("interval 1s", "rate
	// 100/1m burst 10; window 5000/1h").
	Limits string  `json:"limits,omitempty"`
	Starts []start `json:"starts"`
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
  - --log: the worker's "start" log lines, no stack call. JSON lines: what
    'slotq local --json' prints, or the worker function's lines from CloudWatch Logs;
    or slog's text lines: what 'slotq local --log info' (make run ARGS='--log info')
    writes on stderr. The live view 'make run' prints on stdout carries no dates:
    it is not a log.`

func newTimelineCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "timeline QUEUE [ID ...]",
		Short: "Draw starts of a queue against their slots: gaps and lateness",
		Long:  timelineDesc,
		Example: "  $ slotq enqueue emails --kind echo --json | slotq timeline emails --ids - --wait\n" +
			"  $ make run ARGS='--log info' 2>run.log   # then, in another terminal:\n" +
			"  $ slotq timeline emails --log run.log",
		Args: nArgs(1, -1),
	}
	cn := connFlags(cmd.Flags())
	fs := cmd.Flags()
	ids := fs.String("ids", "", "`FILE` (or - for stdin) of job ids: one per line, or 'slotq enqueue --json' output")
	failed := fs.Bool("failed", false, "include the queue's failed jobs")
	logFile := fs.String("log", "", "`FILE` (or - for stdin) of log lines, JSON or slog text, to read the starts from")
	last := fs.Int("last", 30, "show the most recent `N` starts")
	width := fs.Int("width", 40, "width of the picture in columns")
	wait := fs.Bool("wait", false, "wait for the jobs named to end before drawing them (jobs just enqueued)")
	timeout := fs.Duration("timeout", defaultWaitTimeout, "with --wait, how long to wait at most for all of them")
	cmd.RunE = runE(func(cmd *cobra.Command, pos []string) int {
		c := newStackCmd(cmd, cn)
		return c.timeline(cmd.Context(), pos, timelineFlags{*ids, *failed, *logFile, *last, *width, *wait, *timeout})
	})
	return cmd
}

// timelineFlags are timeline's own flags.
type timelineFlags struct {
	ids     string
	failed  bool
	logFile string
	last    int
	width   int
	wait    bool
	timeout time.Duration
}

func (c *stackCmd) timeline(ctx context.Context, pos []string, f timelineFlags) int {
	queue, want := pos[0], pos[1:]
	if f.ids != "" {
		b, err := readArg("@" + f.ids)
		if f.ids == "-" {
			b, err = readArg("-")
		}
		if err != nil {
			return c.Fail(clikit.Usagef("--ids: %v", err))
		}
		want = append(want, idsOf(b)...)
	}
	if len(want) == 0 && !f.failed && f.logFile == "" {
		return c.Fail(clikit.Usagef("give job ids, --ids, --failed or --log: the stack keeps no list of recent starts (see --help)"))
	}
	if f.logFile != "" && (len(want) > 0 || f.failed) {
		return c.Fail(clikit.Usagef("--log reads starts from logs: give it without job ids or --failed"))
	}
	if f.wait && len(want) == 0 {
		return c.Fail(clikit.Usagef("--wait waits for the jobs named: give job ids or --ids"))
	}
	if f.width < 10 || f.last < 1 {
		return c.Fail(clikit.Usagef("--width must be at least 10 and --last at least 1"))
	}
	show := func(tl startTimeline) (any, func(io.Writer), error) {
		tl.Starts = recent(tl.Starts, f.last)
		return tl, func(w io.Writer) { drawTimeline(w, tl, f.width) }, nil
	}
	if f.logFile != "" {
		r := stdin
		if f.logFile != "-" {
			file, err := os.Open(f.logFile)
			if err != nil {
				return c.Fail(clikit.Usagef("--log: %v", err))
			}
			defer file.Close()
			r = file
		}
		tl, err := startsFromLog(r, queue)
		if err != nil {
			return c.Fail(err)
		}
		res, print, _ := show(tl)
		c.Print(res, print)
		return clikit.ExitOK
	}
	return c.Run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		tl := startTimeline{Queue: queue}
		st, err := cl.GetStats(ctx, &client.GetStatsInput{Queue: queue})
		if err != nil {
			return nil, nil, err
		}
		tl.Interval = st.Stats.Config.Interval
		tl.Limits = limits(st.Stats.Config)
		var jobs []api.Job
		wctx, cancel := context.WithTimeout(ctx, f.timeout)
		defer cancel()
		for _, id := range want {
			if f.wait {
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
		if f.failed {
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

// startsFromLog reads the "start" lines of queue from log lines (the
// engine's: msg "start", with queue, job_id, ticket, slot_at, gate_at,
// lateness_ms, attempt and the record's time), JSON or slog's text
// (key=value). A start is at gate_at, the start the gate reserved, as in
// the job's record; a line without it (an older worker's) at its own time,
// when the handler began. Other lines are skipped; a log with no start
// line of queue at all is an error that says what log to give.
func startsFromLog(r io.Reader, queue string) (startTimeline, error) {
	tl := startTimeline{Queue: queue}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var starts, view int // start lines of any queue; live view lines
	for sc.Scan() {
		l, ok := startlog.ParseLine(sc.Text())
		if !ok {
			if liveViewStart.MatchString(sc.Text()) {
				view++
			}
			continue
		}
		if l.Message != "start" {
			continue
		}
		starts++
		ls := l.Start
		if l.Queue != queue || ls.SlotAt.IsZero() {
			continue
		}
		s := start{JobID: ls.JobID, Ticket: ls.Ticket, Attempt: ls.Attempt, SlotAt: ls.SlotAt, StartedAt: ls.StartedAt}
		if l.HasLateness && (s.StartedAt.IsZero() || s.StartedAt.Sub(s.SlotAt).Milliseconds() != ls.LatenessMS) {
			s.StartedAt = ls.SlotAt.Add(time.Duration(ls.LatenessMS) * time.Millisecond)
		}
		if !ls.GateAt.IsZero() {
			s.StartedAt = ls.GateAt
		}
		if s.StartedAt.IsZero() {
			continue
		}
		tl.Starts = append(tl.Starts, s)
	}
	if err := sc.Err(); err != nil {
		return tl, err
	}
	switch {
	case view > 0 && starts == 0:
		return tl, clikit.Usagef("--log: these are the live view's lines (make run's stdout), which carry no dates; " +
			"give slotq local's log instead: make run ARGS='--log info' 2>FILE, or slotq local --json >FILE")
	case starts == 0:
		return tl, clikit.Usagef("--log: no \"start\" line in the log: give the worker's log at level info, JSON or slog text " +
			"(make run ARGS='--log info' 2>FILE, slotq local --json >FILE, or the worker function's CloudWatch Logs)")
	}
	return tl, nil
}

// liveViewStart matches a start line of slotq local's live view:
// "14:00:00.004  start     emails  #1 …".
var liveViewStart = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  start `)

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
	var times []time.Time
	var lates []time.Duration
	for _, s := range tl.Starts {
		times = append(times, s.SlotAt, s.StartedAt)
		lates = append(lates, s.Late)
	}
	t0, t1 := slices.MinFunc(times, time.Time.Compare), slices.MaxFunc(times, time.Time.Compare)
	span := t1.Sub(t0)
	col := func(t time.Time) int {
		if span <= 0 {
			return 0
		}
		return int(float64(t.Sub(t0)) / float64(span) * float64(width-1))
	}
	slices.Sort(lates)
	head := fmt.Sprintf("%s: %d starts from %s to %s (%s)", tl.Queue, len(tl.Starts), clikit.Time(t0), clikit.Time(t1), clikit.Human(span))
	switch {
	case tl.Limits != "":
		head += ", " + tl.Limits // "interval 100ms", "rate 100/1m burst 10"
	case tl.Interval > 0:
		head += fmt.Sprintf(", interval %s", clikit.Setting(tl.Interval))
	}
	fmt.Fprintf(w, "%s; late p50 %s, max %s\n", head, clikit.Signed(lates[len(lates)/2]), clikit.Signed(lates[len(lates)-1]))
	clikit.Row(w, "TICKET", "JOB ID", "ATTEMPT", "SLOT", "STARTED", "LATE", "GAP", "|"+strings.Repeat(" ", width-2)+"|")
	for _, s := range tl.Starts {
		bar := []byte(strings.Repeat(" ", width))
		a, b := col(s.SlotAt), col(s.StartedAt)
		for i := min(a, b); i <= max(a, b); i++ {
			bar[i] = '-'
		}
		bar[a], bar[b] = '|', '*'
		gap := "-"
		if s.Gap > 0 {
			gap = clikit.Human(s.Gap)
		}
		clikit.Row(w, s.Ticket, s.JobID, s.Attempt, clock(s.SlotAt), clock(s.StartedAt), clikit.Signed(s.Late), gap, string(bar))
	}
	fmt.Fprintf(w, "| slot  * start  - lateness; times UTC; the picture spans %s\n", clikit.Human(span))
	notStarted(w, tl)
}

func notStarted(w io.Writer, tl startTimeline) {
	if len(tl.NotStarted) > 0 {
		fmt.Fprintf(w, "not started: %s\n", strings.Join(tl.NotStarted, ", "))
	}
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }
