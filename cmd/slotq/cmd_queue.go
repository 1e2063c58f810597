package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

func enqueueCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("enqueue", "QUEUE", "Enqueues one job (a kind, or a target) on QUEUE and prints its ticket, slot and position;\n"+
		"with --key, also how many jobs of its key are ahead of it (it starts after they end).\n"+
		"A queue that does not exist is created (with --interval, or the stack's default).\n"+
		"With --wait, waits for the job to end and prints its record and result instead:\n"+
		waitExits, stdout, stderr)
	var (
		kind      = c.fs.String("kind", "", "Go handler the worker runs (give --kind or --target)")
		target    = c.fs.String("target", "", "HTTP URL or Lambda function (lambda:NAME) the worker calls; the queue must allow it")
		payload   = c.fs.String("payload", "", "the job's JSON payload, @FILE to read it from a file, or - for stdin")
		id        = c.fs.String("id", "", "job id: enqueued once per queue however often it is sent (default: a random id)")
		notBefore = c.fs.String("not-before", "", "earliest start: an RFC 3339 time or a duration from now (10m)")
		key       = c.fs.String("key", "", "the job's key: jobs of the queue with the same key run one at a time, in ticket order (default: none)")
		interval  = durationFlag(c.fs, "interval", "interval of the queue if this call creates it, a `duration` of at least 1ms (default: the stack's)")
		wait      = c.fs.Bool("wait", false, "wait for the job to end and print its record with its result (exit 3 if it failed or was cancelled, 4 at --timeout)")
		timeout   = c.fs.Duration("timeout", defaultWaitTimeout, "with --wait, how long to wait at most")
	)
	pos, code := c.parse(args, 1, 1)
	if code >= 0 {
		return code
	}
	if given(c.fs, "timeout") && !*wait {
		return c.fail(usagef("--timeout goes with --wait"))
	}
	if *timeout <= 0 {
		return c.fail(usagef("--timeout must be greater than 0"))
	}
	spec := api.Spec{ID: *id, Kind: *kind, Target: *target, Key: *key}
	if *payload != "" {
		b, err := readArg(*payload)
		if err != nil {
			return c.fail(usagef("--payload: %v", err))
		}
		if !json.Valid(b) {
			return c.fail(usagef("--payload is not JSON"))
		}
		spec.Payload = b
	}
	if *notBefore != "" {
		t, err := parseTime("not-before", *notBefore, time.Now())
		if err != nil {
			return c.fail(err)
		}
		spec.NotBefore = &t
	}
	in := &client.EnqueueInput{Queue: pos[0], Job: &spec}
	if given(c.fs, "interval") {
		if *interval == 0 {
			return c.fail(zeroSetting("enqueue", "", "interval"))
		}
		d := api.Duration(*interval)
		in.Interval = &d
	}
	if *wait {
		cl, err := c.conn.client(ctx)
		if err != nil {
			return c.fail(err)
		}
		out, err := cl.Enqueue(ctx, in)
		if err != nil {
			return c.fail(err)
		}
		return c.waitJob(ctx, cl, out.Queue, out.Jobs[0].JobID, *timeout)
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.Enqueue(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		keyed := slices.ContainsFunc(out.Jobs, func(a api.Accepted) bool { return a.Key != "" })
		return out, func(w io.Writer) {
			if keyed {
				row(w, "JOB ID", "TICKET", "SLOT AT", "POSITION", "KEY", "KEY AHEAD", "STATUS")
			} else {
				row(w, "JOB ID", "TICKET", "SLOT AT", "POSITION", "STATUS")
			}
			for _, a := range out.Jobs {
				status := string(a.Status)
				if a.Existing {
					status += " (enqueued before)"
				}
				if !keyed {
					row(w, a.JobID, a.Ticket, ts(a.SlotAt), a.Position, status)
					continue
				}
				ahead := "-" // a job enqueued before: not counted again
				if a.KeyAhead != nil {
					ahead = strconv.FormatInt(*a.KeyAhead, 10)
				}
				row(w, a.JobID, a.Ticket, ts(a.SlotAt), a.Position, orDash(a.Key), ahead, status)
			}
		}, nil
	})
}

// readArg reads a flag value that may be @FILE or - (stdin).
func readArg(v string) ([]byte, error) {
	if v == "-" {
		return io.ReadAll(stdin)
	}
	if name, ok := strings.CutPrefix(v, "@"); ok {
		return os.ReadFile(name)
	}
	return []byte(v), nil
}

func queuesCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("queues", "", "Lists the queues with their interval, pause and counters.", stdout, stderr)
	if _, code := c.parse(args, 0, 0); code >= 0 {
		return code
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.ListQueues(ctx, &client.ListQueuesInput{})
		if err != nil {
			return nil, nil, err
		}
		return out.Queues, func(w io.Writer) {
			row(w, "QUEUE", "INTERVAL", "SKEW", "MAX ATTEMPTS", "MAX RUNNING", "TARGETS", "PAUSED", "TICKETS", "STARTED", "CREATED")
			for _, q := range out.Queues {
				row(w, q.Name, q.Config.Interval, q.Config.Skew, q.Config.MaxAttempts, maxRunning(q.Config.MaxRunning), len(q.Config.Targets),
					paused(q.State), q.State.Ticket, q.State.Current, ts(q.CreatedAt))
			}
		}, nil
	})
}

func paused(s api.QueueState) string {
	switch {
	case !s.Paused:
		return "no"
	case s.PausedUntil.IsZero():
		return "yes"
	}
	return "until " + ts(s.PausedUntil)
}

func statsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("stats", "QUEUE", "Shows a queue's figures: jobs waiting (from its counters), parked and failed,\n"+
		"how far its starts trail its line (lag), how far ahead the line is booked (backlog), its lanes\n"+
		"(attempts running under max_running; keys held, keys with jobs waiting, jobs waiting on keys and\n"+
		"for a running place), what it did over the last 15 minutes (starts, outcomes, start lateness,\n"+
		"from its metrics: CloudWatch on a stack, the process's own tally on the local runtime),\n"+
		"and its configuration.", stdout, stderr)
	pos, code := c.parse(args, 1, 1)
	if code >= 0 {
		return code
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.GetStats(ctx, &client.GetStatsInput{Queue: pos[0]})
		if err != nil {
			return nil, nil, err
		}
		s := out.Stats
		js := statsJSON{Stats: s, Activity: out.Activity, ActivityError: out.ActivityError}
		return js, func(w io.Writer) {
			row(w, "queue", s.Queue)
			row(w, "paused", paused(s.State))
			row(w, "waiting", s.Waiting)
			row(w, "parked", s.Parked)
			row(w, "failed", s.Failed)
			row(w, "lag", time.Duration(s.Lag))
			row(w, "backlog", time.Duration(s.Backlog))
			activityRows(w, out.Activity, out.ActivityError)
			laneRows(w, s.Lanes, s.Config.MaxRunning)
			row(w, "tickets", s.State.Ticket)
			row(w, "started", s.State.Current)
			row(w, "last start", ts(s.State.LastStart))
			configRows(w, s.Config)
		}, nil
	})
}

// statsJSON is stats' --json answer: the queue's figures, and its recent
// activity beside them.
type statsJSON struct {
	api.Stats
	Activity      *api.Activity `json:"activity,omitempty"`
	ActivityError string        `json:"activity_error,omitempty"`
}

// activityRows prints what a queue did over the last window, from its
// metrics, or why that is not known.
func activityRows(w io.Writer, a *api.Activity, why string) {
	if a == nil {
		if why == "" {
			why = "not available"
		}
		row(w, "recent activity", "unknown: "+why)
		return
	}
	in := " (last " + shortDuration(time.Duration(a.Window)) + ")"
	row(w, "starts"+in, a.Starts)
	lateness := "-"
	if a.LatenessP50 != nil && a.LatenessP99 != nil && a.LatenessMax != nil {
		lateness = fmt.Sprintf("%s / %s / %s", msDuration(*a.LatenessP50), msDuration(*a.LatenessP99), msDuration(*a.LatenessMax))
	}
	row(w, "start lateness p50 / p99 / max", lateness)
	row(w, "succeeded / attempts failed / dead letters", fmt.Sprintf("%d / %d / %d", a.Succeeded, a.AttemptFailures, a.DeadLetters))
	row(w, "retries / re-tickets / handed back", fmt.Sprintf("%d / %d / %d", a.Retries, a.Reticketed, a.HandedBack))
}

// msDuration is a number of milliseconds as a duration.
func msDuration(v float64) time.Duration {
	return time.Duration(v * float64(time.Millisecond)).Round(100 * time.Microsecond)
}

// shortDuration prints d without the zero parts Go's String adds ("15m",
// not "15m0s").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// laneRows prints what a queue's lanes show (docs/guarantees.md §12).
func laneRows(w io.Writer, l api.LaneFigures, maxRunning int) {
	running := "-" // no max_running: the queue counts none
	if l.Running >= 0 {
		running = fmt.Sprintf("%d of %d", l.Running, maxRunning)
	}
	row(w, "running", running)
	row(w, "keys held", l.KeysHeld)
	row(w, "keys waiting", l.KeysWaiting)
	row(w, "jobs waiting on keys", l.WaitingOnKeys)
	row(w, "jobs waiting for a place", l.WaitingForPlace)
}

// maxRunning prints a queue's MaxRunning: "-" for no cap.
func maxRunning(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// configRows prints a queue's configuration, a setting a line.
func configRows(w io.Writer, c api.Config) {
	row(w, "interval", c.Interval)
	row(w, "skew", c.Skew)
	row(w, "max attempts", c.MaxAttempts)
	row(w, "max running", maxRunning(c.MaxRunning))
	row(w, "backoff", fmt.Sprintf("%s (at most %s)", c.Backoff, c.MaxBackoff))
	row(w, "retention", c.Retention)
	row(w, "target timeout", c.TargetTimeout)
	row(w, "targets", orDash(strings.Join(c.Targets, ", ")))
	row(w, "allow networks", orDash(strings.Join(c.AllowNetworks, ", ")))
}

func pauseCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("pause", "QUEUE", "Pauses QUEUE: once this returns no job of it starts until it is resumed,\n"+
		"by 'slotq resume' or, with --until or --for, by the schedule at that time.", stdout, stderr)
	until := c.fs.String("until", "", "lift the pause at this RFC 3339 time")
	forD := durationFlag(c.fs, "for", "lift the pause after this long, a `duration` such as 90m")
	pos, code := c.parse(args, 1, 1)
	if code >= 0 {
		return code
	}
	in := &client.PauseQueueInput{Queue: pos[0]}
	switch {
	case *until != "" && given(c.fs, "for"):
		return c.fail(usagef("give --until or --for, not both"))
	case *until != "":
		t, err := time.Parse(time.RFC3339Nano, *until)
		if err != nil {
			return c.fail(usagef("--until %q: want an RFC 3339 time such as 2025-06-01T14:00:00Z", *until))
		}
		in.Until = t
	case *forD <= 0 && given(c.fs, "for"):
		return c.fail(usagef("--for must be greater than 0 (leave it out to pause until 'slotq resume')"))
	case *forD > 0:
		in.Until = time.Now().Add(*forD)
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.PauseQueue(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		return out.State, func(w io.Writer) {
			row(w, "queue", pos[0])
			row(w, "paused", paused(out.State))
		}, nil
	})
}

func resumeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("resume", "QUEUE", "Lifts QUEUE's pause now and releases its parked jobs, in their old order.", stdout, stderr)
	pos, code := c.parse(args, 1, 1)
	if code >= 0 {
		return code
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.ResumeQueue(ctx, &client.ResumeQueueInput{Queue: pos[0]})
		if err != nil {
			return nil, nil, err
		}
		r := out.Report
		return r, func(w io.Writer) {
			row(w, "queue", pos[0])
			row(w, "released", r.Released)
			row(w, "reticketed", r.Reticketed)
			if r.Continued > 0 {
				row(w, "left for the schedule", "yes (more parked jobs than one pass takes)")
			}
		}, nil
	})
}

// cancelled is the answer of purge and delete.
type cancelled struct {
	Queue     string `json:"queue"`
	Cancelled int    `json:"cancelled"`
}

func purgeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("purge", "QUEUE", "Cancels every job of QUEUE that has not started.", stdout, stderr)
	pos, code := c.parse(args, 1, 1)
	if code >= 0 {
		return code
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.PurgeQueue(ctx, &client.PurgeQueueInput{Queue: pos[0]})
		if err != nil {
			return nil, nil, err
		}
		r := cancelled{pos[0], out.Cancelled}
		return r, func(w io.Writer) { row(w, "queue", r.Queue); row(w, "cancelled", r.Cancelled) }, nil
	})
}

func deleteCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("delete", "QUEUE", "Deletes QUEUE and cancels its waiting jobs.", stdout, stderr)
	pos, code := c.parse(args, 1, 1)
	if code >= 0 {
		return code
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.DeleteQueue(ctx, &client.DeleteQueueInput{Queue: pos[0]})
		if err != nil {
			return nil, nil, err
		}
		r := cancelled{pos[0], out.Cancelled}
		return r, func(w io.Writer) { row(w, "deleted", r.Queue); row(w, "cancelled", r.Cancelled) }, nil
	})
}

// configFlags are the settings of create and configure.
type configFlags struct {
	interval, skew, backoff, maxBackoff, retention, targetTimeout *time.Duration
	maxAttempts, maxRunning                                       *int
	targets, networks                                             *string
}

func newConfigFlags(fs *flag.FlagSet, what string) *configFlags {
	return &configFlags{
		interval:      durationFlag(fs, "interval", "least time between two starts, a `duration` of at least 1ms "+what),
		skew:          durationFlag(fs, "skew", "allowance for clock differences, less than the interval; 1ns for none "+what),
		maxAttempts:   fs.Int("max-attempts", 0, "attempts a job gets, at least 1 "+what),
		maxRunning:    fs.Int("max-running", 0, "most attempts of the queue that run at once, 0 for no cap "+what),
		backoff:       durationFlag(fs, "backoff", "wait before the first retry, doubled each further attempt "+what),
		maxBackoff:    durationFlag(fs, "max-backoff", "cap of the retry wait "+what),
		retention:     durationFlag(fs, "retention", "how long finished and failed jobs are kept "+what),
		targetTimeout: durationFlag(fs, "target-timeout", "bound of one run of an HTTP or Lambda target "+what),
		targets:       fs.String("targets", "", "comma-separated HTTP and Lambda target patterns jobs may name "+what),
		networks:      fs.String("allow-networks", "", "comma-separated CIDR prefixes HTTP targets may reach although private "+what),
	}
}

// check refuses a setting given on the command line as zero where zero
// would be read as its default, with the error the admin function gives
// (slot.ZeroSetting): a flag left out is absent, the queue's setting
// (configure) or its default (create); a flag given means its value.
func (f *configFlags) check(op string, fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(fl *flag.Flag) {
		if v := fl.Value.String(); err == nil && (v == "0" || v == "0s") {
			err = zeroSetting(op, "config.", strings.ReplaceAll(fl.Name, "-", "_"))
		}
	})
	return err
}

// apply sets on cfg the settings given on the command line.
func (f *configFlags) apply(fs *flag.FlagSet, cfg *api.Config) {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "interval":
			cfg.Interval = *f.interval
		case "skew":
			cfg.Skew = *f.skew
		case "max-attempts":
			cfg.MaxAttempts = *f.maxAttempts
		case "max-running":
			cfg.MaxRunning = *f.maxRunning
		case "backoff":
			cfg.Backoff = *f.backoff
		case "max-backoff":
			cfg.MaxBackoff = *f.maxBackoff
		case "retention":
			cfg.Retention = *f.retention
		case "target-timeout":
			cfg.TargetTimeout = *f.targetTimeout
		case "targets":
			cfg.Targets = split(*f.targets)
		case "allow-networks":
			cfg.AllowNetworks = split(*f.networks)
		}
	})
}

// update is the change the command line asks for: the settings given, and
// only those.
func (f *configFlags) update(fs *flag.FlagSet) api.ConfigUpdate {
	var cfg api.Config
	f.apply(fs, &cfg)
	u := cfg.Update()
	fs.Visit(func(fl *flag.Flag) { // zeros that are settings of their own
		switch fl.Name {
		case "max-running":
			u.MaxRunning = &cfg.MaxRunning
		case "targets":
			t := append([]string{}, cfg.Targets...)
			u.Targets = &t
		case "allow-networks":
			n := append([]string{}, cfg.AllowNetworks...)
			u.AllowNetworks = &n
		}
	})
	return u
}

// given reports whether the command line set the flag name.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

func queueRows(q api.Queue) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "queue", q.Name)
		configRows(w, q.Config)
		row(w, "paused", paused(q.State))
		row(w, "created", ts(q.CreatedAt))
	}
}

func createCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("create", "QUEUE", "Creates QUEUE. Settings left out take the stack's defaults (its DefaultInterval\n"+
		"and AllowedTargets), then slotq's.", stdout, stderr)
	cf := newConfigFlags(c.fs, "(default: the stack's or slotq's)")
	pos, code := c.parse(args, 1, 1)
	if code >= 0 {
		return code
	}
	if err := cf.check("create", c.fs); err != nil {
		return c.fail(err)
	}
	var cfg api.Config
	cf.apply(c.fs, &cfg)
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.CreateQueue(ctx, &client.CreateQueueInput{Queue: pos[0], Config: &cfg})
		if err != nil {
			return nil, nil, err
		}
		return out.Queue, queueRows(out.Queue), nil
	})
}

func configureCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("configure", "QUEUE", "Changes the settings of QUEUE given on the command line and keeps the others\n"+
		"(the admin function reads the configuration, then writes it whole: run one configure\n"+
		"of a queue at a time). A setting given as zero is refused unless zero is a setting\n"+
		"of its own (--max-running 0: no cap; --targets \"\": none).\n"+
		"Jobs that hold slots keep them; new tickets follow the new interval.", stdout, stderr)
	cf := newConfigFlags(c.fs, "(default: unchanged)")
	reset := c.fs.Bool("reset", false, "start from the defaults instead of the queue's settings")
	pos, code := c.parse(args, 1, 1)
	if code >= 0 {
		return code
	}
	if err := cf.check("configure", c.fs); err != nil {
		return c.fail(err)
	}
	in := &client.ConfigureQueueInput{Queue: pos[0]}
	if *reset {
		cf.apply(c.fs, &in.Config)
	} else {
		u := cf.update(c.fs)
		in.Update = &u
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.ConfigureQueue(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		return out.Queue, queueRows(out.Queue), nil
	})
}

func jobsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return subcommands(ctx, "jobs", map[string]runFunc{
		"list": jobsListCmd, "get": jobsGetCmd, "cancel": jobsCancelCmd, "retry": jobsRetryCmd,
	}, "Usage: slotq jobs COMMAND [flags] QUEUE ...\n\nCommands:\n"+
		"  list    list QUEUE's parked or failed jobs (jobs that run without trouble are never listed)\n"+
		"  get     show a job's record by its id\n"+
		"  cancel  cancel a job that has not started\n"+
		"  retry   run failed or cancelled jobs again under their ids (--failed: every dead letter)\n\n"+
		"Run 'slotq jobs COMMAND --help' for a command's flags.\n", args, stdout, stderr)
}

func jobsListCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("jobs list", "QUEUE", "Lists QUEUE's parked jobs (waiting for the resume function: far slot, paused queue;\n"+
		"or for their key, or a running place, which an attempt that ends hands them)\n"+
		"or its failed ones (dead letters), by ticket. Jobs that run without trouble are never listed:\n"+
		"get them by id.", stdout, stderr)
	status := c.fs.String("status", string(api.Parked), "parked or failed")
	after := c.fs.Int64("after", 0, "list tickets after this one (the next page)")
	limit := c.fs.Int("limit", 100, "most jobs to list")
	pos, code := c.parse(args, 1, 1)
	if code >= 0 {
		return code
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.ListJobs(ctx, &client.ListJobsInput{Queue: pos[0], Status: api.Status(*status), After: *after, Limit: *limit})
		if err != nil {
			return nil, nil, err
		}
		res := struct {
			Jobs      []api.Job `json:"jobs"`
			NextAfter int64     `json:"next_after,omitempty"`
		}{out.Jobs, out.NextAfter}
		return res, func(w io.Writer) {
			row(w, "JOB ID", "TICKET", "STATUS", "SLOT AT", "ATTEMPT", "WHAT", "WHY")
			for _, j := range out.Jobs {
				why := j.LastError
				if j.Status == api.Parked {
					why = parkedWhy(j)
				}
				row(w, j.ID, j.Ticket, j.Status, ts(j.SlotAt), j.Attempt, j.What(), oneLine(why, 60))
			}
			if out.NextAfter != 0 {
				fmt.Fprintf(w, "more: --after %d\n", out.NextAfter)
			}
		}, nil
	})
}

// parkedWhy says why a job is parked and when the resume function
// releases it; a job waiting on a lane is released by a hand-off instead.
func parkedWhy(j api.Job) string {
	switch {
	case j.ParkReason == api.WaitKey:
		return "waiting for key " + j.Key
	case j.ParkReason == api.WaitPlace:
		return "waiting for a running place"
	case j.ParkReason == api.WaitGate && !j.DueAt.IsZero():
		return "waiting for its gate to open, released " + ts(j.DueAt)
	case j.DueAt.IsZero():
		return string(j.ParkReason)
	}
	return fmt.Sprintf("%s, due %s", j.ParkReason, ts(j.DueAt))
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return orDash(s)
}

func jobRows(j api.Job) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "queue", j.Queue)
		row(w, "job id", j.ID)
		row(w, "what", j.What())
		if j.Key != "" {
			row(w, "key", j.Key)
		}
		row(w, "status", j.Status)
		row(w, "ticket", j.Ticket)
		row(w, "slot at", ts(j.SlotAt))
		row(w, "attempt", j.Attempt)
		if j.Retickets > 0 {
			row(w, "retickets", j.Retickets)
		}
		if j.Reruns > 0 {
			row(w, "reruns", fmt.Sprintf("%d (this run from attempt %d)", j.Reruns, j.RerunFrom+1))
		}
		if !j.NotBefore.IsZero() {
			row(w, "not before", ts(j.NotBefore))
		}
		if j.ParkReason != "" {
			row(w, "parked", parkedWhy(j))
		}
		row(w, "enqueued", ts(j.EnqueuedAt))
		row(w, "started", ts(j.StartedAt))
		if !j.StartedAt.IsZero() {
			row(w, "late", j.StartedAt.Sub(j.SlotAt).Round(time.Millisecond))
		}
		row(w, "finished", ts(j.FinishedAt))
		if j.LastError != "" {
			row(w, "last error", oneLine(j.LastError, 200))
		}
		if len(j.Payload) > 0 {
			row(w, "payload", oneLine(string(j.Payload), 200))
		}
		if len(j.Result) > 0 {
			row(w, "result", oneLine(string(j.Result), 200))
		}
		if j.ResultDropped > 0 {
			row(w, "result", fmt.Sprintf("not kept: %d bytes, over the %d-byte bound", j.ResultDropped, api.MaxResult))
		}
		for i, ev := range j.History {
			label := ""
			if i == 0 {
				label = "history"
				if j.HistoryDropped > 0 {
					label = fmt.Sprintf("history (%d older not kept)", j.HistoryDropped)
				}
			}
			row(w, label, ts(ev.At)+"  "+eventText(ev))
		}
	}
}

// eventText is one history event for people: its kind and what it says.
func eventText(ev api.Event) string {
	s := string(ev.Kind)
	switch ev.Kind {
	case api.Enqueued, api.Retried:
		s += fmt.Sprintf(" ticket %d", ev.Ticket)
		if ev.Attempt > 0 {
			s += fmt.Sprintf(", attempt %d", ev.Attempt)
		}
	case api.Reticketed:
		s += fmt.Sprintf(" ticket %d → %d", ev.OldTicket, ev.Ticket)
	case api.Rerun:
		s += fmt.Sprintf(" by %s: ticket %d, attempt %d", ev.Reason, ev.Ticket, ev.Attempt)
	case api.ParkedEvent:
		switch api.ParkReason(ev.Reason) {
		case api.WaitKey:
			s += ": waiting for its key"
		case api.WaitPlace:
			s += ": waiting for a running place"
		default:
			s += " " + ev.Reason
		}
	case api.Released:
		switch ev.Reason {
		case "key":
			s += ": handed its key"
		case "max_running":
			s += ": handed a running place"
		case "handed":
			s += ": handed its key or a running place as it parked"
		}
	case api.HandedBack:
		s += fmt.Sprintf(" %dms before its slot", ev.DelayMs)
	case api.SlotMissed:
		s = fmt.Sprintf("slot missed: woke %dms late", ev.LatenessMs)
		if ev.OldTicket != 0 {
			s += fmt.Sprintf("; new ticket %d", ev.Ticket)
		} else {
			s += "; takes the next opening"
		}
	case api.Started:
		s += fmt.Sprintf(" attempt %d, %dms late", ev.Attempt, ev.LatenessMs)
	case api.AttemptFailed, api.FailedEvent:
		if ev.Attempt > 0 {
			s += fmt.Sprintf(" attempt %d", ev.Attempt)
		}
		if ev.Error != "" {
			s += ": " + oneLine(ev.Error, 100)
		}
	}
	return s
}

// Exit codes of a wait (enqueue --wait, jobs get --wait), beside 0 (the
// job succeeded), 1 and 2.
const (
	exitJobFailed = 3 // the job ended failed, or was cancelled
	exitTimedOut  = 4 // --timeout came first: the job still waits or runs
)

// waitExits says a wait's exit codes, for the help.
const waitExits = "exit 0 when it succeeded, 3 when it failed or was cancelled, 4 when --timeout came first."

// defaultWaitTimeout is --timeout's default.
const defaultWaitTimeout = 5 * time.Minute

// waitJob waits (client.Wait) for job id of queue to end, at most
// timeout, prints its record as last read (with its result), and returns
// the exit code: 0 succeeded, 3 failed or cancelled, 4 timed out, 1 when
// the wait itself failed.
func (c *stackCmd) waitJob(ctx context.Context, cl *client.Client, queue, id string, timeout time.Duration) int {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := cl.Wait(wctx, &client.WaitInput{Queue: queue, JobID: id})
	code := exitOK
	var je *client.JobError
	switch {
	case err == nil:
	case errors.As(err, &je):
		code = exitJobFailed
		fmt.Fprintf(c.stderr, "slotq %s: %s\n", c.name, strings.TrimPrefix(err.Error(), "slotq: "))
	case wctx.Err() != nil && ctx.Err() == nil && out.Polls > 0:
		code = exitTimedOut
		fmt.Fprintf(c.stderr, "slotq %s: job %s is still %s after %s; wait again with: slotq jobs get %s %s --wait\n",
			c.name, id, out.Job.Status, timeout, queue, id)
	default:
		return c.fail(err)
	}
	if c.conn.json {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out.Job); err != nil {
			return c.fail(err)
		}
		return code
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	jobRows(out.Job)(tw)
	tw.Flush()
	return code
}

func jobsGetCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("jobs get", "QUEUE ID", "Shows the record of job ID of QUEUE, whatever its status, with its result once it ended.\n"+
		"With --wait, waits for it to end first: "+waitExits, stdout, stderr)
	wait := c.fs.Bool("wait", false, "wait for the job to end (exit 3 if it failed or was cancelled, 4 at --timeout)")
	timeout := c.fs.Duration("timeout", defaultWaitTimeout, "with --wait, how long to wait at most")
	pos, code := c.parse(args, 2, 2)
	if code >= 0 {
		return code
	}
	if given(c.fs, "timeout") && !*wait {
		return c.fail(usagef("--timeout goes with --wait"))
	}
	if *timeout <= 0 {
		return c.fail(usagef("--timeout must be greater than 0"))
	}
	if *wait {
		cl, err := c.conn.client(ctx)
		if err != nil {
			return c.fail(err)
		}
		return c.waitJob(ctx, cl, pos[0], pos[1], *timeout)
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.GetJob(ctx, &client.GetJobInput{Queue: pos[0], JobID: pos[1]})
		if err != nil {
			return nil, nil, err
		}
		return out.Job, jobRows(out.Job), nil
	})
}

func jobsRetryCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("jobs retry", "QUEUE [ID...]", "Runs failed or cancelled jobs of QUEUE again under their ids: each takes a new ticket\n"+
		"at the end of the line and goes through the gate like any job. Its attempts keep counting,\n"+
		"and the rerun has the queue's max_attempts of its own. Name the jobs (up to 100; one that is\n"+
		"not failed or cancelled refuses them all: not_retryable), or give --failed to run every\n"+
		"failed job again, a page of --limit at a time, one call each.", stdout, stderr)
	failed := c.fs.Bool("failed", false, "run every failed job (dead letter) of QUEUE again, in pages, instead of the IDs")
	limit := c.fs.Int("limit", engine.DefaultRetryPage, "with --failed, jobs per page (one call each), at most 500")
	pages := c.fs.Int("pages", 0, "with --failed, stop after this many pages and print where to go on (0: all)")
	after := c.fs.Int64("after", 0, "with --failed, go on after this ticket (as a stopped run printed)")
	upTo := c.fs.Int64("up-to", 0, "with --failed, only jobs whose ticket is at most this (as a stopped run printed; 0: the queue's ticket now)")
	by := c.fs.String("by", defaultBy(), "who asks, recorded in each job's history")
	pos, code := c.parse(args, 1, -1)
	if code >= 0 {
		return code
	}
	if *failed == (len(pos) > 1) {
		if *failed {
			return c.fail(usagef("give job ids or --failed, not both"))
		}
		return c.fail(usagef("name the jobs to run again, or give --failed"))
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		res := struct {
			Jobs      []api.Accepted `json:"jobs"`
			Skipped   int            `json:"skipped,omitempty"`
			NextAfter int64          `json:"next_after,omitempty"`
			UpTo      int64          `json:"up_to,omitempty"`
			Pages     int            `json:"pages,omitempty"`
		}{Jobs: []api.Accepted{}}
		if !*failed {
			out, err := cl.RetryJobs(ctx, &client.RetryJobsInput{Queue: pos[0], JobIDs: pos[1:], By: *by})
			if err != nil {
				return nil, nil, err
			}
			res.Jobs = out.Jobs
		} else {
			p := client.NewRetryFailedPaginator(cl, &client.RetryJobsInput{Queue: pos[0], After: *after, UpTo: *upTo, Limit: *limit, By: *by})
			for p.HasMorePages() && (*pages == 0 || res.Pages < *pages) {
				out, err := p.NextPage(ctx)
				if err != nil {
					if res.Pages > 0 {
						fmt.Fprintf(stderr, "slotq jobs retry: %d jobs run again in %d pages before the error; go on with --after %d --up-to %d\n",
							len(res.Jobs), res.Pages, *after, res.UpTo)
					}
					return nil, nil, err
				}
				res.Pages++
				res.Jobs = append(res.Jobs, out.Jobs...)
				res.Skipped += out.Skipped
				res.NextAfter, res.UpTo = out.NextAfter, out.UpTo
				*after = out.NextAfter
			}
		}
		return res, func(w io.Writer) {
			row(w, "JOB ID", "TICKET", "SLOT AT", "POSITION", "STATUS")
			for _, a := range res.Jobs {
				row(w, a.JobID, a.Ticket, ts(a.SlotAt), a.Position, a.Status)
			}
			if *failed {
				fmt.Fprintf(w, "run again: %d in %d pages", len(res.Jobs), res.Pages)
				if res.Skipped > 0 {
					fmt.Fprintf(w, " (%d no longer failed)", res.Skipped)
				}
				fmt.Fprintln(w)
				if res.NextAfter != 0 {
					fmt.Fprintf(w, "more: --after %d --up-to %d\n", res.NextAfter, res.UpTo)
				}
			}
		}, nil
	})
}

func redriveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("redrive", "", "Moves the messages SQS moved to the slot queue's dead-letter queue (a worker failed on them\n"+
		"five times without recording anything) back to the slot queue, each checked against its job:\n"+
		"one whose job still waits for it is sent again, one whose job ended or moved on is dropped,\n"+
		"a body that is no job envelope stays. Fix the cause first (the worker's logs).", stdout, stderr)
	limit := c.fs.Int("limit", engine.DefaultRedrive, "most messages to receive in this call, at most 1000")
	if _, code := c.parse(args, 0, 0); code >= 0 {
		return code
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.Redrive(ctx, &client.RedriveInput{Limit: *limit})
		if err != nil {
			return nil, nil, err
		}
		r := out.Report
		return r, func(w io.Writer) {
			row(w, "received", r.Received)
			row(w, "sent back", r.Redriven)
			row(w, "dropped (job moved on)", r.Dropped)
			row(w, "left (not a job envelope)", r.Undecodable)
			if r.More {
				row(w, "more", "run it again: the limit was reached")
			}
		}, nil
	})
}

// defaultBy is who asks for a retry, by default: the user's login, as far
// as a history event can carry it, or "cli".
func defaultBy() string {
	u := os.Getenv("USER")
	if u == "" || len(u) > 60 || strings.Trim(u, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:/@+-") != "" {
		return "cli"
	}
	return "cli:" + u
}

func jobsCancelCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newStackCmd("jobs cancel", "QUEUE ID", "Cancels job ID of QUEUE if it has not started (code not_waiting if it has).", stdout, stderr)
	pos, code := c.parse(args, 2, 2)
	if code >= 0 {
		return code
	}
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := cl.CancelJob(ctx, &client.CancelJobInput{Queue: pos[0], JobID: pos[1]})
		if err != nil {
			return nil, nil, err
		}
		return out.Job, jobRows(out.Job), nil
	})
}
