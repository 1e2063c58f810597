package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

func newEnqueueCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "enqueue QUEUE",
		Short: "Enqueue a job on a queue and print its ticket, slot and position",
		Long: "Enqueues one job (a kind, or a target) on QUEUE and prints its ticket, slot and position;\n" +
			"with --key, also how many jobs of its key are ahead of it (it starts after they end).\n" +
			"A queue that does not exist is created, with the limit --interval, --rate (with --burst) or --window\n" +
			"gives, or the stack's default limit; a queue that exists keeps its own limit (the command says so when\n" +
			"the flag differs from it; 'slotq queues configure' changes it).\n" +
			"With --count N or --from FILE, enqueues many jobs in calls of up to 500 and prints them (a summary\n" +
			"beyond 20), with its progress on a terminal.\n" +
			"With --wait, waits for the job to end and prints its record and result instead:\n" +
			waitExits,
		Example: "  $ slotq enqueue emails --kind echo --id welcome-42 --payload '{\"to\":\"ada@example.com\"}'\n" +
			"  $ slotq enqueue emails --kind echo --key ada@example.com\n" +
			"  $ slotq enqueue search --kind echo --debounce-key shop-7 --debounce 1s --payload '{\"shop\":7}'   # one start a second after a burst\n" +
			"  $ slotq queues create reports --interval 1s --targets 'https://hooks.example.com/*'   # a target the queue allows\n" +
			"  $ slotq enqueue reports --target https://hooks.example.com/report --payload @report.json --wait\n" +
			"  $ slotq enqueue emails --kind echo --count 1000 --id 'welcome-{n}' --payload '{\"n\":{n}}'\n" +
			"  $ slotq enqueue emails --kind echo --from jobs.jsonl   # one job a line: {\"id\":\"a-1\",\"key\":\"tenant-a\"}",
		Args:        nArgs(1, 1),
		Annotations: map[string]string{"exit": clikit.ExitStatus + "\nWith --wait: 3 the job failed or was cancelled, 4 --timeout came first."},
	}
	cn = stackFlags(cmd, cn)
	fs := cmd.Flags()
	var (
		kind      = fs.String("kind", "", "Go handler the worker runs (give --kind or --target)")
		target    = fs.String("target", "", "HTTP URL or Lambda function (lambda:NAME) the worker calls; the queue must allow it")
		payload   = fs.String("payload", "", "the job's JSON payload, @FILE to read it from a file, or - for stdin")
		id        = fs.String("id", "", "job id: enqueued once per queue however often it is sent (default: a random id)")
		notBefore = fs.String("not-before", "", "earliest start: an RFC 3339 `time` or a duration from now (10m)")
		key       = fs.String("key", "", "the job's key: jobs of the queue with the same key start in ticket order, at most the queue's key_max_running at once (1 unless it says otherwise), under its key limits if it has some (default: none)")
		debKey    = fs.String("debounce-key", "", "the job's debounce key, with --debounce: a job enqueued while another of the queue with this debounce key waits for its debounce to end joins it (answered debounced): that job takes the last payload, and starts --debounce after the last join (default: none)")
		debounce  = durationFlag(fs, "debounce", fmt.Sprintf("with --debounce-key: how long the job waits for later jobs of its debounce key, more than 0 and at most %s", api.MaxDebounce))
		priority  = fs.Int("priority", 0, fmt.Sprintf("the job's priority in the queue's waiting room (a queue with a book-ahead bound): %d is booked first, %d last (0 or left out: %d)", api.MinPriority, api.MaxPriority, api.DefaultPriority))
		interval  = durationFlag(fs, "interval", "the limit of the queue if this call creates it: one start per `duration`, at least 1ms (default: the stack's limit); a queue that exists keeps its own")
		rate      = new(api.Rate)
		burst     = fs.Int("burst", 0, fmt.Sprintf("with --rate: starts the rate lets through together after an idle time beyond the first, 0 to %d", slot.MaxBurst))
		window    = new(api.Rate)
	)
	count := fs.Int("count", 0, fmt.Sprintf("enqueue N jobs of the flags at once, in calls of up to %d: %s in --id and --payload becomes each job's number, 1 to N (such as --id 'welcome-%s', which a run again with the same flags does not enqueue twice)", api.MaxBatch, numbered, numbered))
	from := fs.String("from", "", fmt.Sprintf("enqueue the jobs of FILE (- for stdin): JSON lines, one job each as the enqueue function takes it ({\"kind\":\"echo\",\"id\":\"a-1\",\"payload\":{…}}), in calls of up to %d; a line without a kind or target takes --kind or --target, and --key and --priority where it has none", api.MaxBatch))
	fs.Var(rateFlag{rate}, "rate", "the limit of the queue if this call creates it as a rate `N/PERIOD` such as 100/1m (at most N starts per PERIOD on average), with --burst; a queue that exists keeps its own")
	fs.Var(rateFlag{window}, "window", "the limit of the queue if this call creates it as a window `N/PERIOD` such as 5000/1h (at most N starts in any PERIOD); a queue that exists keeps its own")
	wait, timeout := waitFlags(cmd)
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		if err := c.checkWait(*wait, *timeout); err != nil {
			return c.Fail(err)
		}
		many := c.Given("count") || c.Given("from")
		switch {
		case c.Given("count") && c.Given("from"):
			return c.Fail(clikit.Usagef("give one of --count and --from"))
		case many && *wait:
			return c.Fail(clikit.Usagef("--wait waits for one job: leave out --count and --from, or --wait"))
		case c.Given("from") && (c.Given("id") || c.Given("payload") || c.Given("not-before")):
			return c.Fail(clikit.Usagef("with --from each line gives its job's id, payload and not_before"))
		}
		if *kind == "" && *target == "" && !c.Given("from") {
			// The enqueue function's own refusal, said before the call.
			return c.Fail(&clikit.UsageError{Code: "no_target", Field: "job.kind", Msg: "give --kind (a Go handler) or --target (URL or lambda:NAME)"})
		}
		spec := api.Spec{ID: *id, Kind: *kind, Target: *target, Key: *key, Priority: *priority, DebounceKey: *debKey}
		if c.Given("debounce") {
			d := api.Duration(*debounce)
			spec.Debounce = &d
		}
		if *payload != "" {
			// With --count, a payload with the job's number in it is
			// JSON once the number is in (countedJobs checks each).
			template := c.Given("count") && strings.Contains(*payload, numbered)
			b, err := readPayload(*payload, !template)
			if err != nil {
				return c.Fail(err)
			}
			spec.Payload = b
		}
		if *notBefore != "" {
			t, err := parseTime("not-before", *notBefore, time.Now())
			if err != nil {
				return c.Fail(err)
			}
			spec.NotBefore = &t
		}
		in := &client.EnqueueInput{Queue: pos[0], Job: &spec}
		if err := c.createLimit(in, *interval, *rate, *burst, *window); err != nil {
			return c.Fail(err)
		}
		if many {
			jobs, err := c.manyJobs(spec, *count, *from)
			if err != nil {
				return c.Fail(err)
			}
			return c.enqueueMany(ctx, *in, jobs)
		}
		if *wait {
			cl, err := c.Conn.Client(ctx)
			if err != nil {
				return c.Fail(err)
			}
			c.noteKeptLimit(ctx, cl, in)
			out, err := cl.Enqueue(ctx, in)
			if err != nil {
				return c.Fail(c.Conn.Explain(err))
			}
			return c.waitJob(ctx, cl, out.Queue, startsAs(out.Jobs[0]), *timeout)
		}
		return c.Run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
			c.noteKeptLimit(ctx, cl, in)
			out, err := cl.Enqueue(ctx, in)
			if err != nil {
				return nil, nil, err
			}
			keyed := slices.ContainsFunc(out.Jobs, func(a api.Accepted) bool { return a.Key != "" })
			return out, func(w io.Writer) {
				if keyed {
					clikit.Row(w, "JOB ID", "TICKET", "SLOT AT", "POSITION", "KEY", "KEY AHEAD", "STATUS")
				} else {
					clikit.Row(w, "JOB ID", "TICKET", "SLOT AT", "POSITION", "STATUS")
				}
				for _, a := range out.Jobs {
					status := acceptedStatus(a)
					if !keyed {
						clikit.Row(w, a.JobID, a.Ticket, clikit.Time(a.SlotAt), a.Position, status)
						continue
					}
					ahead := "-" // a job enqueued before: not counted again
					if a.KeyAhead != nil {
						ahead = strconv.FormatInt(*a.KeyAhead, 10)
					}
					clikit.Row(w, a.JobID, a.Ticket, clikit.Time(a.SlotAt), a.Position, clikit.OrDash(a.Key), ahead, status)
				}
			}, nil
		})
	})
	return cmd
}

// manyJobs are the jobs of --count (spec, count times) or --from (the
// lines of its file, spec giving what they leave out).
func (c *stackCmd) manyJobs(spec api.Spec, count int, from string) ([]api.Spec, error) {
	if c.Given("count") {
		return countedJobs(spec, count)
	}
	r, closeIt, err := readFrom(from)
	if err != nil {
		return nil, err
	}
	defer closeIt()
	name := from
	if from == "-" {
		name = "stdin"
	}
	return linedJobs(r, name, spec)
}

// createLimit puts on in the limit --interval, --rate (with --burst) or
// --window gives the queue if the call creates it, refusing before the
// call what the enqueue function would refuse (two forms, a burst without
// a rate, a value out of range), with its code and field.
func (c *stackCmd) createLimit(in *client.EnqueueInput, interval time.Duration, rate api.Rate, burst int, window api.Rate) error {
	var forms []string
	for _, name := range []string{"interval", "rate", "window"} {
		if c.Given(name) {
			forms = append(forms, "--"+name)
		}
	}
	switch {
	case len(forms) > 1:
		return clikit.Usagef("give one of --interval, --rate (with --burst) and --window, not %s: each gives the limit of the queue the call creates", strings.Join(forms, " and "))
	case c.Given("burst") && !c.Given("rate"):
		return clikit.Usagef("--burst goes with --rate, such as --rate 100/1m --burst 10")
	case c.Given("interval") && interval == 0:
		return zeroSetting("enqueue", "", "interval")
	}
	var l api.Limit
	flag := ""
	switch {
	case c.Given("interval"):
		l.Interval, flag = interval, "--interval "+interval.String()
		d := api.Duration(interval)
		in.Interval = &d
	case c.Given("rate"):
		l.Rate, l.Burst, flag = rate, burst, "--rate "+rate.String()
		in.Rate = &rate
		if c.Given("burst") {
			in.Burst = &burst
		}
	case c.Given("window"):
		l.Window, flag = window, "--window "+window.String()
		in.Window = &window
	default:
		return nil
	}
	if err := slot.ValidateLimit(l, ""); err != nil {
		var e *input.Error
		if !errors.As(err, &e) {
			return err
		}
		if e.Field == "burst" {
			flag = fmt.Sprintf("--burst %d", burst)
		}
		return &client.Error{Op: "enqueue", Code: e.Code, Field: e.Field, Message: flag + ": " + e.Message}
	}
	return nil
}

// createFlags are the flags that give in's limit, as the user writes them.
func createFlags(in *client.EnqueueInput) string {
	switch {
	case in.Interval != nil:
		return "--interval " + time.Duration(*in.Interval).String()
	case in.Rate != nil && in.Burst != nil:
		return fmt.Sprintf("--rate %s --burst %d", in.Rate, *in.Burst)
	case in.Rate != nil:
		return "--rate " + in.Rate.String()
	case in.Window != nil:
		return "--window " + in.Window.String()
	}
	return ""
}

// noteKeptLimit says, on stderr, that --interval, --rate or --window will
// do nothing: the queue exists under another limit, which an enqueue
// never changes (the flag is the limit of a queue the call creates). It
// asks the stack first; a queue that does not exist yet, or any error,
// says nothing.
func (c *stackCmd) noteKeptLimit(ctx context.Context, cl *client.Client, in *client.EnqueueInput) {
	flags := createFlags(in)
	if flags == "" {
		return
	}
	st, err := cl.GetStats(ctx, &client.GetStatsInput{Queue: in.Queue, NoActivity: true})
	if err != nil {
		return
	}
	want := api.Config{Rate: deref(in.Rate), Window: deref(in.Window), Burst: deref(in.Burst)}
	if in.Interval != nil {
		want.Interval = time.Duration(*in.Interval)
	}
	if have, want := limits(st.Stats.Config), limits(want); have != want {
		flag, _, _ := strings.Cut(strings.TrimPrefix(flags, "--"), " ")
		fmt.Fprintf(c.Stderr, "slotq %s: queue %s exists, and keeps its limit (%s): --%s sets the limit of a queue the call creates only; change it with 'slotq queues configure %s %s'\n",
			c.Name, in.Queue, have, flag, in.Queue, flags)
	}
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// readPayload reads --payload (readArg), which must be JSON.
func readPayload(v string, check bool) (json.RawMessage, error) {
	b, err := readArg(v)
	if err != nil {
		return nil, clikit.Usagef("--payload: %v", err)
	}
	if check && !json.Valid(b) {
		return nil, clikit.Usagef("--payload is not JSON")
	}
	return b, nil
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
