package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// newQueuesCmd is `slotq queues VERB`. Alone it lists the queues, as
// `slotq queues list` does.
func newQueuesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "queues [<command>]",
		Short:   "List, create, configure, pause, resume, purge or delete queues; show a queue's figures",
		Long:    "Work with queues: list, create, configure, pause, resume, purge, delete, stats, starts.\nAlone, 'slotq queues' lists the queues.",
		GroupID: groupOps,
		Example: "  $ slotq queues create emails --interval 2s --max-attempts 5\n" +
			"  $ slotq queues create crawls --rate 100/1m --burst 10\n" +
			"  $ slotq queues pause emails --for 1h\n" +
			"  $ slotq queues stats emails --json",
	}
	cn := connFlags(cmd.PersistentFlags())
	list := newQueuesListCmd(cn)
	cmd.RunE = list.RunE
	return parent(cmd,
		list, newCreateCmd(cn), newConfigureCmd(cn), newPauseCmd(cn), newResumeCmd(cn),
		newPurgeCmd(cn), newDeleteCmd(cn), newStatsCmd(cn), newStartsCmd(cn))
}

func newQueuesListCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the queues with their settings, pause and counters",
		Args:  nArgs(0, 0),
	}
	cn = stackFlags(cmd, cn)
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		c := newStackCmd(cmd, cn)
		if c.Name == "queues" {
			c.Name = "queues list"
		}
		ctx := cmd.Context()
		return clikit.Call(c.Cmd, ctx, (*client.Client).ListQueues, &client.ListQueuesInput{}, func(out *client.ListQueuesOutput) (any, func(io.Writer)) {
			return out.Queues, func(w io.Writer) {
				clikit.Row(w, "QUEUE", "LIMITS", "KEY LIMITS", "SKEW", "MAX ATTEMPTS", "MAX RUNNING", "TARGETS", "PAUSED", "TICKETS", "STARTED", "CREATED")
				for _, q := range out.Queues {
					clikit.Row(w, q.Name, limits(q.Config), keyLimits(q.Config), clikit.Setting(q.Config.Skew), q.Config.MaxAttempts, maxRunning(q.Config.MaxRunning), countOrDash(len(q.Config.Targets)),
						paused(q.State), q.State.Ticket, q.State.Current, clikit.Time(q.CreatedAt))
				}
			}
		})
	})
	return cmd
}

// countOrDash is n, or "-" for none, as stats shows an empty setting.
func countOrDash(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func paused(s api.QueueState) string {
	switch {
	case !s.Paused:
		return "no"
	case s.PausedUntil.IsZero():
		return "yes"
	}
	return "until " + clikit.Time(s.PausedUntil)
}

func newStatsCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stats QUEUE",
		Short: "Show a queue's figures: waiting, parked, failed, lag, backlog, lanes, recent activity",
		Long: "Shows a queue's figures: jobs waiting in line (from its counters: an upper bound, 0 once the\n" +
			"line has run; scheduled jobs and jobs under key limits are out of line), parked and failed,\n" +
			"how far its starts trail its line (lag), how far ahead the line is booked (backlog), its lanes\n" +
			"(attempts running under max_running; keys held, keys with jobs waiting, jobs waiting on keys and\n" +
			"for a running place), what it did over the last 15 minutes (starts, outcomes, start lateness,\n" +
			"from its metrics: CloudWatch on a stack, the process's own tally on the local runtime),\n" +
			"and its configuration.",
		Args: nArgs(1, 1),
	}
	cn = stackFlags(cmd, cn)
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		return clikit.Call(c.Cmd, ctx, (*client.Client).GetStats, &client.GetStatsInput{Queue: pos[0]}, func(out *client.GetStatsOutput) (any, func(io.Writer)) {
			s := out.Stats
			js := statsJSON{Stats: s, Activity: out.Activity, ActivityError: out.ActivityError}
			return js, func(w io.Writer) {
				clikit.Row(w, "queue", s.Queue)
				clikit.Row(w, "paused", paused(s.State))
				clikit.Row(w, "slowed", slowed(s.State.SlowUntil, s.State.SlowDowns, time.Now()))
				clikit.Row(w, "waiting", s.Waiting)
				clikit.Row(w, "parked", s.Parked)
				clikit.Row(w, "failed", s.Failed)
				clikit.Row(w, "lag", clikit.Human(time.Duration(s.Lag)))
				clikit.Row(w, "backlog", clikit.Human(time.Duration(s.Backlog)))
				activityRows(w, out.Activity, out.ActivityError)
				laneRows(w, s.Lanes, s.Config.MaxRunning)
				roomRows(w, s.Room)
				clikit.Row(w, "tickets", s.State.Ticket)
				clikit.Row(w, "started", s.State.Current)
				clikit.Row(w, "last start", clikit.Time(s.State.LastStart))
				configRows(w, s.Config)
			}
		})
	})
	return cmd
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
		clikit.Row(w, "recent activity", "unknown: "+why)
		return
	}
	in := " (last " + clikit.Setting(time.Duration(a.Window)) + ")"
	clikit.Row(w, "starts"+in, a.Starts)
	if a.BatchJobs > 0 && a.Starts > 0 {
		clikit.Row(w, "jobs per start (batches)", fmt.Sprintf("%.1f (%d jobs)", float64(a.BatchJobs)/float64(a.Starts), a.BatchJobs))
	}
	lateness := "-"
	if a.LatenessP50 != nil && a.LatenessP99 != nil && a.LatenessMax != nil {
		lateness = fmt.Sprintf("%s / %s / %s", clikit.Human(msDuration(*a.LatenessP50)), clikit.Human(msDuration(*a.LatenessP99)), clikit.Human(msDuration(*a.LatenessMax)))
	}
	clikit.Row(w, "start lateness p50 / p99 / max", lateness)
	clikit.Row(w, "succeeded / attempts failed / dead letters", fmt.Sprintf("%d / %d / %d", a.Succeeded, a.AttemptFailures, a.DeadLetters))
	clikit.Row(w, "retries / re-tickets / handed back", fmt.Sprintf("%d / %d / %d", a.Retries, a.Reticketed, a.HandedBack))
}

// msDuration is a number of milliseconds as a duration.
func msDuration(v float64) time.Duration {
	return time.Duration(v * float64(time.Millisecond))
}

// laneRows prints what a queue's lanes show (docs/guarantees.md §12).
func laneRows(w io.Writer, l api.LaneFigures, maxRunning int) {
	running := "-" // no max_running: the queue counts none
	if l.Running >= 0 {
		running = fmt.Sprintf("%d of %d", l.Running, maxRunning)
	}
	clikit.Row(w, "running", running)
	clikit.Row(w, "keys held", l.KeysHeld)
	clikit.Row(w, "keys waiting", l.KeysWaiting)
	clikit.Row(w, "jobs waiting on keys", l.WaitingOnKeys)
	clikit.Row(w, "jobs waiting for a place", l.WaitingForPlace)
	atLimit := "-" // no key_limits: no key has a limit to be at
	if l.KeysAtLimit >= 0 {
		atLimit = fmt.Sprint(l.KeysAtLimit)
	}
	clikit.Row(w, "keys at their limit", atLimit)
}

// maxRunning prints a queue's MaxRunning: "-" for no cap.
func maxRunning(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// limits prints a queue's limits in the words a user writes them (and
// --limit reads): "interval 1s", "rate 100/1m burst 10; window 5000/1h".
func limits(c api.Config) string { return slot.Config(c).LimitList().String() }

// configRows prints a queue's configuration, a setting a line.
func configRows(w io.Writer, c api.Config) {
	clikit.Row(w, "limits", limits(c))
	clikit.Row(w, "key limits", keyLimits(c))
	clikit.Row(w, "key max running", keyMaxRunning(c))
	clikit.Row(w, "skew", clikit.Setting(c.Skew))
	clikit.Row(w, "max attempts", c.MaxAttempts)
	clikit.Row(w, "max running", maxRunning(c.MaxRunning))
	clikit.Row(w, "backoff", fmt.Sprintf("%s (at most %s)", clikit.Setting(c.Backoff), clikit.Setting(c.MaxBackoff)))
	clikit.Row(w, "retention", clikit.Setting(c.Retention))
	clikit.Row(w, "target timeout", clikit.Setting(c.TargetTimeout))
	clikit.Row(w, "max slow downs", clikit.OrDash(numSetting(c.MaxSlowDowns)))
	clikit.Row(w, "retry after default", clikit.OrDash(durSetting(c.RetryAfterDefault)))
	if c.BookAhead > 0 || c.KeyBookAhead > 0 {
		clikit.Row(w, "book ahead", fmt.Sprintf("%s (a key: %s)", clikit.OrDash(numSetting(c.BookAhead)), clikit.OrDash(numSetting(c.KeyBookAhead))))
	}
	clikit.Row(w, "targets", clikit.OrDash(strings.Join(c.Targets, ", ")))
	clikit.Row(w, "allow networks", clikit.OrDash(strings.Join(c.AllowNetworks, ", ")))
}

func newPauseCmd(cn *clikit.Conn) *cobra.Command {
	var until string
	cmd := &cobra.Command{
		Use:   "pause QUEUE",
		Short: "Pause a queue, until a time or for a while if given",
		Long: "Pauses QUEUE: once this returns no job of it starts until it is resumed,\n" +
			"by 'slotq queues resume' or, with --until or --for, by the schedule at that time.",
		Example: "  $ slotq queues pause emails --for 90m",
		Args:    nArgs(1, 1),
	}
	cn = stackFlags(cmd, cn)
	cmd.Flags().StringVar(&until, "until", "", "lift the pause at this RFC 3339 `time`")
	forD := durationFlag(cmd.Flags(), "for", "lift the pause after this long, a `duration` such as 90m")
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		in := &client.PauseQueueInput{Queue: pos[0]}
		switch {
		case until != "" && c.Given("for"):
			return c.Fail(clikit.Usagef("give --until or --for, not both"))
		case until != "":
			t, err := time.Parse(time.RFC3339Nano, until)
			if err != nil {
				return c.Fail(clikit.Usagef("--until %q: want an RFC 3339 time such as 2025-06-01T14:00:00Z", until))
			}
			in.Until = t
		case *forD <= 0 && c.Given("for"):
			return c.Fail(clikit.Usagef("--for must be greater than 0 (leave it out to pause until 'slotq queues resume')"))
		case *forD > 0:
			in.Until = time.Now().Add(*forD)
		}
		return clikit.Call(c.Cmd, ctx, (*client.Client).PauseQueue, in, func(out *client.PauseQueueOutput) (any, func(io.Writer)) {
			return out.State, func(w io.Writer) {
				clikit.Row(w, "queue", pos[0])
				clikit.Row(w, "paused", paused(out.State))
			}
		})
	})
	return cmd
}

func newResumeCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume QUEUE",
		Short: "Lift a queue's pause and release its parked jobs",
		Long:  "Lifts QUEUE's pause now and releases its parked jobs, in their old order.",
		Args:  nArgs(1, 1),
	}
	cn = stackFlags(cmd, cn)
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		return clikit.Call(c.Cmd, ctx, (*client.Client).ResumeQueue, &client.ResumeQueueInput{Queue: pos[0]}, func(out *client.ResumeQueueOutput) (any, func(io.Writer)) {
			r := out.Report
			return r, func(w io.Writer) {
				clikit.Row(w, "queue", pos[0])
				clikit.Row(w, "released", r.Released)
				clikit.Row(w, "reticketed", r.Reticketed)
				if r.Continued > 0 {
					clikit.Row(w, "left for the schedule", "yes (more parked jobs than one pass takes)")
				}
			}
		})
	})
	return cmd
}

// cancelled is the answer of purge and delete.
type cancelled struct {
	Queue     string `json:"queue"`
	Cancelled int    `json:"cancelled"`
}

// yesFlag is --yes of the commands that ask before they act.
func yesFlag(cmd *cobra.Command) *bool {
	return cmd.Flags().BoolP("yes", "y", false, "do it without asking (needed when stdin is not a terminal)")
}

func newPurgeCmd(cn *clikit.Conn) *cobra.Command {
	return confirmedCmd(cn, &cobra.Command{
		Use:     "purge QUEUE",
		Short:   "Cancel every job of a queue that has not started",
		Long:    "Cancels every job of QUEUE that has not started.",
		Example: "  $ slotq queues purge emails --yes",
	}, "queue", "cancel every job of queue %s that has not started",
		func(ctx context.Context, cl *client.Client, q string) (int, error) {
			out, err := cl.PurgeQueue(ctx, &client.PurgeQueueInput{Queue: q})
			if err != nil {
				return 0, err
			}
			return out.Cancelled, nil
		})
}

func newDeleteCmd(cn *clikit.Conn) *cobra.Command {
	return confirmedCmd(cn, &cobra.Command{
		Use:     "delete QUEUE",
		Short:   "Delete a queue and cancel its waiting jobs",
		Long:    "Deletes QUEUE and cancels its waiting jobs.",
		Example: "  $ slotq queues delete emails --yes",
	}, "deleted", "delete queue %s and cancel its waiting jobs",
		func(ctx context.Context, cl *client.Client, q string) (int, error) {
			out, err := cl.DeleteQueue(ctx, &client.DeleteQueueInput{Queue: q})
			if err != nil {
				return 0, err
			}
			return out.Cancelled, nil
		})
}

// confirmedCmd completes cmd, an operation on one queue that cancels jobs
// (do answers how many): on a terminal it asks first (what, with the
// queue's name), elsewhere it needs --yes. label names the queue's row.
func confirmedCmd(cn *clikit.Conn, cmd *cobra.Command, label, what string, do func(ctx context.Context, cl *client.Client, queue string) (int, error)) *cobra.Command {
	cmd.Long += " On a terminal it asks first;\nelsewhere (a script, a pipe) it needs --yes."
	cmd.Args = nArgs(1, 1)
	cn = stackFlags(cmd, cn)
	yes := yesFlag(cmd)
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		if err := c.Confirm(*yes, fmt.Sprintf(what, pos[0])); err != nil {
			return c.Fail(err)
		}
		return c.Run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
			n, err := do(ctx, cl, pos[0])
			if err != nil {
				return nil, nil, err
			}
			r := cancelled{pos[0], n}
			return r, func(w io.Writer) { clikit.Row(w, label, r.Queue); clikit.Row(w, "cancelled", r.Cancelled) }, nil
		})
	})
	return cmd
}

// configFlags are the settings of create and configure: a flag for each
// setting of slot.Settings with a doc line (the keys' are
// keyConfigFlags').
type configFlags struct {
	counts            map[string]*int // by flag: --burst, --max-attempts, …
	durations         map[string]*time.Duration
	burst             *int
	rate, window      *api.Rate
	limits            *limitsValue
	targets, networks *string
	keys              *keyConfigFlags
}

// skewRule is the skew's rule, said the same way in the help, docs/usage.md
// and docs/operations.md (slot.SkewRule).
const skewRule = slot.SkewRule

// skewDefault is the skew of a queue created without one.
const skewDefault = "(default: the stack's DefaultSkew, 10ms, also on slotq local and make run; " +
	"capped at a quarter of the least average time between two starts)"

// newConfigFlags defines the settings' flags on fs, each with its doc
// line and what says of its default (skewWhat of the skew's).
func newConfigFlags(fs *pflag.FlagSet, what, skewWhat string) *configFlags {
	f := &configFlags{counts: map[string]*int{}, durations: map[string]*time.Duration{}, rate: new(api.Rate), window: new(api.Rate)}
	for _, s := range configSettings() {
		usage := s.Doc + " " + what
		if s.Name == "skew" {
			usage = s.Doc + " " + skewWhat
		}
		switch {
		case s.IsDuration():
			f.durations[s.Flag] = durationFlag(fs, s.Flag, usage)
		case s.IsCount():
			f.counts[s.Flag] = fs.Int(s.Flag, 0, usage)
		case s.Name == "rate":
			fs.Var(rateFlag{f.rate}, s.Flag, usage)
		case s.Name == "window":
			fs.Var(rateFlag{f.window}, s.Flag, usage)
		case s.Name == "limits":
			f.limits = limitFlag(fs, s.Flag, usage)
		case s.Name == "targets":
			f.targets = fs.String(s.Flag, "", usage)
		case s.Name == "allow_networks":
			f.networks = fs.String(s.Flag, "", usage)
		}
	}
	f.burst = f.counts["burst"]
	f.keys = newKeyConfigFlags(fs, strings.Contains(what, "unchanged"))
	return f
}

// configSettings are the settings configFlags gives a flag.
func configSettings() []slot.Setting {
	var ss []slot.Setting
	for _, s := range slot.Settings {
		if s.Doc != "" {
			ss = append(ss, s)
		}
	}
	return ss
}

// check refuses a setting given on the command line as zero where zero
// would be read as its default, with the error the admin function gives
// (slot.ZeroSetting): a flag left out is absent, the queue's setting
// (configure) or its default (create); a flag given means its value.
//
// It refuses, too, a limit the admin function would refuse, naming the
// flag: two forms at once, a burst without a rate where the command
// gives the whole configuration (whole: create, configure --reset), and
// a count, period or burst out of range (slot.ValidateLimit).
func (f *configFlags) check(op string, fs *pflag.FlagSet, whole bool) error {
	for _, s := range configSettings() {
		if fl := fs.Lookup(s.Flag); fl.Changed && fl.Value.String() == "0" {
			if err := zeroSetting(op, "config.", s.Name); err != nil {
				return err
			}
		}
	}
	var forms []string
	for _, name := range []string{"interval", "rate", "window", "limit"} {
		if fs.Changed(name) {
			forms = append(forms, "--"+name)
		}
	}
	switch {
	case len(forms) > 1:
		return clikit.Usagef("give one of --interval, --rate (with --burst), --window and --limit, not %s: each gives the queue's limit whole (repeat --limit to keep several)", strings.Join(forms, " and "))
	case fs.Changed("burst") && !fs.Changed("rate") && (whole || len(forms) > 0):
		return clikit.Usagef("--burst goes with --rate, such as --rate 100/1m --burst 10")
	}
	bad := func(flag string, err error) error {
		var e *input.Error
		if !errors.As(err, &e) {
			return err
		}
		return &client.Error{Op: op, Code: e.Code, Field: "config." + e.Field, Message: flag + ": " + e.Message}
	}
	switch {
	case fs.Changed("rate"):
		if err := slot.ValidateLimit(api.Limit{Rate: *f.rate, Burst: *f.burst}, ""); err != nil {
			if e := (*input.Error)(nil); errors.As(err, &e) && e.Field == "burst" {
				return bad(fmt.Sprintf("--burst %d", *f.burst), err)
			}
			return bad("--rate "+f.rate.String(), err)
		}
	case fs.Changed("burst"):
		if *f.burst < 0 || *f.burst > slot.MaxBurst {
			return bad(fmt.Sprintf("--burst %d", *f.burst), input.Invalid("invalid_burst", "burst", fmt.Sprintf("burst must be between 0 and %d", slot.MaxBurst)))
		}
	case fs.Changed("window"):
		if err := slot.ValidateLimit(api.Limit{Window: *f.window}, ""); err != nil {
			return bad("--window "+f.window.String(), err)
		}
	case fs.Changed("limit"):
		if n := len(f.limits.ls); n > slot.MaxLimits {
			return bad("--limit", input.Invalid("too_many_limits", "limits", fmt.Sprintf("%d limits; a queue keeps at most %d at once", n, slot.MaxLimits)))
		}
		for i, l := range f.limits.ls {
			if err := slot.ValidateLimit(l, fmt.Sprintf("limits[%d].", i)); err != nil {
				return bad(fmt.Sprintf("--limit '%s'", l), err)
			}
		}
	}
	return f.keys.check(op, fs)
}

// apply sets on cfg the settings given on the command line.
func (f *configFlags) apply(fs *pflag.FlagSet, cfg *api.Config) {
	for _, s := range configSettings() {
		if !fs.Changed(s.Flag) {
			continue
		}
		switch {
		case s.IsDuration():
			s.Set(cfg, int64(*f.durations[s.Flag]))
		case s.IsCount():
			s.Set(cfg, int64(*f.counts[s.Flag]))
		case s.Name == "rate":
			cfg.Rate = *f.rate
		case s.Name == "window":
			cfg.Window = *f.window
		case s.Name == "limits":
			cfg.Limits = slices.Clone(f.limits.ls)
		case s.Name == "targets":
			cfg.Targets = split(*f.targets)
		case s.Name == "allow_networks":
			cfg.AllowNetworks = split(*f.networks)
		}
	}
	f.keys.apply(fs, cfg)
}

// update is the change the command line asks for: the settings given, and
// only those.
func (f *configFlags) update(fs *pflag.FlagSet) api.ConfigUpdate {
	var cfg api.Config
	f.apply(fs, &cfg)
	u := cfg.Update()
	// zeros that are settings of their own
	if fs.Changed("burst") {
		u.Burst = &cfg.Burst
	}
	if fs.Changed("max-running") {
		u.MaxRunning = &cfg.MaxRunning
	}
	if fs.Changed("key-max-running") {
		u.KeyMaxRunning = &cfg.KeyMaxRunning
	}
	if fs.Changed("targets") {
		t := append([]string{}, cfg.Targets...)
		u.Targets = &t
	}
	if fs.Changed("allow-networks") {
		n := append([]string{}, cfg.AllowNetworks...)
		u.AllowNetworks = &n
	}
	return u
}

func queueRows(q api.Queue) func(io.Writer) {
	return func(w io.Writer) {
		clikit.Row(w, "queue", q.Name)
		configRows(w, q.Config)
		clikit.Row(w, "paused", paused(q.State))
		clikit.Row(w, "created", clikit.Time(q.CreatedAt))
	}
}

func newCreateCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create QUEUE",
		Short: "Create a queue",
		Long: "Creates QUEUE. Settings left out take the stack's defaults (its DefaultInterval or\n" +
			"DefaultLimit, DefaultSkew and AllowedTargets), then slotq's.\n" +
			"The queue's limit takes one form: --interval (one start per duration), --rate with\n" +
			"--burst (N starts per period on average, B more at once after an idle time), --window\n" +
			"(no span shorter than the period holds more than N starts), or --limit, repeated, to\n" +
			"keep up to 3 limits at once (docs/operations.md says which form fits which quota).\n" +
			"--key-interval, --key-rate with --key-burst, --key-window or --key-limit give every key of\n" +
			"the queue's jobs a limit of its own, kept beside the queue's ('slotq keys set' gives one key\n" +
			"another); --key-max-running 0 lets a key run any number of its jobs at once.",
		Example: "  $ slotq queues create emails --interval 2s --max-attempts 5 --targets 'https://hooks.example.com/*'\n" +
			"  $ slotq queues create crawls --rate 100/1m --burst 10\n" +
			"  $ slotq queues create reports --window 5000/1h\n" +
			"  $ slotq queues create api --limit 'rate 10/1s burst 2' --limit 'window 1000/1h'\n" +
			"  $ slotq queues create tenants --rate 200/1s --key-rate 5/1s --key-max-running 0",
		Args: nArgs(1, 1),
	}
	cn = stackFlags(cmd, cn)
	cf := newConfigFlags(cmd.Flags(), "(default: the stack's or slotq's)", skewDefault)
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		if err := cf.check("create", c.Flags, true); err != nil {
			return c.Fail(err)
		}
		var cfg api.Config
		cf.apply(c.Flags, &cfg)
		return clikit.Call(c.Cmd, ctx, (*client.Client).CreateQueue, &client.CreateQueueInput{Queue: pos[0], Config: &cfg}, func(out *client.CreateQueueOutput) (any, func(io.Writer)) {
			return out.Queue, queueRows(out.Queue)
		})
	})
	return cmd
}

func newConfigureCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "configure QUEUE",
		Short: "Change a queue's settings",
		Long: "Changes the settings of QUEUE given on the command line and keeps the others\n" +
			"(the admin function reads the configuration, then writes it whole: run one configure\n" +
			"of a queue at a time). A setting given as zero is refused unless zero is a setting\n" +
			"of its own (--max-running 0: no cap; --burst 0: none; --targets \"\": none).\n" +
			"Any of --interval, --rate, --window and --limit replaces the queue's limit whole;\n" +
			"--burst alone changes the burst of its rate. Any of --key-interval, --key-rate,\n" +
			"--key-window and --key-limit replaces the queue's key limits whole.\n" +
			"A new limit applies from the change on: jobs parked beyond the transport's reach move to\n" +
			"the slots it gives them ('moved' says how many, 'max shift' by how much at most), and\n" +
			"jobs already on their way start at their slot or where the new limit opens, if later.",
		Example: "  $ slotq queues configure emails --interval 1s --max-running 3\n" +
			"  $ slotq queues configure crawls --burst 20\n" +
			"  $ slotq queues configure api --limit 'rate 10/1s burst 2; window 1000/1h'\n" +
			"  $ slotq queues configure tenants --key-limit 'rate 5/1s burst 1; window 100/1h' --key-max-running 1",
		Args: nArgs(1, 1),
	}
	cn = stackFlags(cmd, cn)
	cf := newConfigFlags(cmd.Flags(), "(default: unchanged)", "(default: unchanged)")
	reset := cmd.Flags().Bool("reset", false, "start from the defaults instead of the queue's settings")
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		if err := cf.check("configure", c.Flags, *reset); err != nil {
			return c.Fail(err)
		}
		in := &client.ConfigureQueueInput{Queue: pos[0]}
		if *reset {
			cf.apply(c.Flags, &in.Config)
		} else {
			u := cf.update(c.Flags)
			in.Update = &u
		}
		return clikit.Call(c.Cmd, ctx, (*client.Client).ConfigureQueue, in, func(out *client.ConfigureQueueOutput) (any, func(io.Writer)) {
			rows := queueRows(out.Queue)
			return configured{Queue: out.Queue, Reslot: out.Reslot}, func(w io.Writer) {
				rows(w)
				clikit.Row(w, "moved", fmt.Sprintf("%d booked jobs", out.Reslot.Moved))
				clikit.Row(w, "max shift", (time.Duration(out.Reslot.MaxShiftMs) * time.Millisecond).String())
				if out.Reslot.Remaining > 0 {
					clikit.Row(w, "remaining", fmt.Sprintf("%d booked jobs, moved in the background by the resume function", out.Reslot.Remaining))
				}
			}
		})
	})
	return cmd
}

// configured is configure's answer in --json: the queue, and what the
// change did to the jobs already booked.
type configured struct {
	api.Queue
	Reslot api.Reslot `json:"reslot"`
}

func newStartsCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "starts QUEUE",
		Short: "List a queue's recent starts: each attempt's slot, start and lateness",
		Long: "Lists the starts of QUEUE since --since (default the last 15 minutes, at most an hour back),\n" +
			"oldest first, at most --limit: each attempt's ticket, slot, start and how late it started.\n" +
			"They are read from the worker's start lines: its log group on a stack (CloudWatch Logs), the\n" +
			"process on the local runtime. 'slotq timeline' draws them; so does 'slotq console'.",
		Example: "  $ slotq queues starts emails --since 5m\n" +
			"  $ slotq queues starts emails --since 30m --json   # or an RFC 3339 time, at most an hour back",
		Args: nArgs(1, 1),
	}
	cn = stackFlags(cmd, cn)
	since := cmd.Flags().String("since", "", "an RFC 3339 `time`, or how long ago (5m): the first start listed (default 15m)")
	limit := cmd.Flags().Int("limit", 200, "most starts to list, at most 1000")
	cmd.RunE = runE(func(cmd *cobra.Command, pos []string) int {
		c := newStackCmd(cmd, cn)
		in := &client.ListStartsInput{Queue: pos[0], Limit: *limit}
		if *since != "" {
			now := time.Now()
			if d, err := slot.ParseDuration(*since); err == nil && d > 0 {
				in.Since = now.Add(-d)
			} else if t, err := time.Parse(time.RFC3339Nano, *since); err == nil {
				in.Since = t
			} else {
				return c.Fail(clikit.Usagef("--since %q: want an RFC 3339 time or how long ago (5m)", *since))
			}
		}
		ctx := cmd.Context()
		return clikit.Call(c.Cmd, ctx, (*client.Client).ListStarts, in, func(out *client.ListStartsOutput) (any, func(io.Writer)) {
			res := startsJSON{More: out.More, StartsError: out.StartsError, Starts: make([]startJSON, len(out.Starts))}
			for i, s := range out.Starts {
				res.Starts[i] = startJSON{Start: s, LatenessMS: ms(s.StartedAt.Sub(s.SlotAt))}
			}
			return res, func(w io.Writer) {
				clikit.Row(w, "TICKET", "JOB ID", "ATTEMPT", "SLOT AT", "STARTED", "LATE")
				for _, s := range out.Starts {
					clikit.Row(w, s.Ticket, s.JobID, s.Attempt, clikit.Time(s.SlotAt), clikit.Time(s.StartedAt), clikit.Human(s.StartedAt.Sub(s.SlotAt)))
				}
				if out.More {
					fmt.Fprintf(w, "more: --since %s\n", lastStart(out.Starts).StartedAt.UTC().Format(time.RFC3339Nano))
				}
				if out.StartsError != "" {
					fmt.Fprintf(w, "starts not read: %s\n", out.StartsError)
				}
			}
		})
	})
	return cmd
}

// startsJSON is what queues starts --json prints: the starts, each with
// its exact lateness in milliseconds (the wire's lateness_ms is whole),
// as the table shows it.
type startsJSON struct {
	Starts      []startJSON `json:"starts"`
	More        bool        `json:"more"`
	StartsError string      `json:"starts_error,omitempty"`
}

type startJSON struct {
	api.Start
	LatenessMS float64 `json:"lateness_ms"`
}

// ms is d in milliseconds, to the nanosecond.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// lastStart is the last start of a list, or the zero start.
func lastStart(starts []api.Start) api.Start {
	if len(starts) == 0 {
		return api.Start{}
	}
	return starts[len(starts)-1]
}
