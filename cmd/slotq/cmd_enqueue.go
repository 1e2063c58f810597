package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

func newEnqueueCmd(cn *conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "enqueue QUEUE",
		Short: "Enqueue a job on a queue and print its ticket, slot and position",
		Long: "Enqueues one job (a kind, or a target) on QUEUE and prints its ticket, slot and position;\n" +
			"with --key, also how many jobs of its key are ahead of it (it starts after they end).\n" +
			"A queue that does not exist is created (with --interval, or the stack's default).\n" +
			"With --wait, waits for the job to end and prints its record and result instead:\n" +
			waitExits,
		Example: "  $ slotq enqueue emails --kind echo --id welcome-42 --payload '{\"to\":\"ada@example.com\"}'\n" +
			"  $ slotq enqueue emails --kind echo --key ada@example.com\n" +
			"  $ slotq queues create reports --interval 1s --targets 'https://hooks.example.com/*'   # a target the queue allows\n" +
			"  $ slotq enqueue reports --target https://hooks.example.com/report --payload @report.json --wait",
		Args:        nArgs(1, 1),
		Annotations: map[string]string{"exit": exitStatus + "\nWith --wait: 3 the job failed or was cancelled, 4 --timeout came first."},
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
		priority  = fs.Int("priority", 0, fmt.Sprintf("the job's priority in the queue's waiting room (a queue with a book-ahead bound): %d is booked first, %d last (default %d)", api.MinPriority, api.MaxPriority, api.DefaultPriority))
		interval  = durationFlag(fs, "interval", "interval of the queue if this call creates it, a `duration` of at least 1ms (default: the stack's); a queue that exists keeps its limit (queues create sets a rate or a window, queues configure changes it)")
	)
	wait, timeout := waitFlags(cmd)
	cmd.RunE = runE(func(cmd *cobra.Command, pos []string) int {
		c := newStackCmd(cmd, cn)
		ctx := cmd.Context()
		if err := c.checkWait(*wait, *timeout); err != nil {
			return c.fail(err)
		}
		if *kind == "" && *target == "" {
			// The enqueue function's own refusal, said before the call.
			return c.fail(&usageError{code: "no_target", field: "job.kind", msg: "give --kind (a Go handler) or --target (URL or lambda:NAME)"})
		}
		spec := api.Spec{ID: *id, Kind: *kind, Target: *target, Key: *key, Priority: *priority}
		if c.given("priority") && *priority == 0 {
			return c.fail(&usageError{code: "invalid_priority", field: "job.priority", msg: fmt.Sprintf("priority must be %d to %d; leave --priority out for %d", api.MinPriority, api.MaxPriority, api.DefaultPriority)})
		}
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
		if c.given("interval") {
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
			c.noteKeptLimit(ctx, cl, in)
			out, err := cl.Enqueue(ctx, in)
			if err != nil {
				return c.fail(c.conn.explain(err))
			}
			return c.waitJob(ctx, cl, out.Queue, out.Jobs[0].JobID, *timeout)
		}
		return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
			c.noteKeptLimit(ctx, cl, in)
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
	})
	return cmd
}

// noteKeptLimit says, on stderr, that --interval will do nothing: the
// queue exists under another limit, which an enqueue never changes (the
// interval is the limit of a queue the call creates). It asks the stack
// first; a queue that does not exist yet, or any error, says nothing.
func (c *stackCmd) noteKeptLimit(ctx context.Context, cl *client.Client, in *client.EnqueueInput) {
	if in.Interval == nil {
		return
	}
	st, err := cl.GetStats(ctx, &client.GetStatsInput{Queue: in.Queue, NoActivity: true})
	if err != nil {
		return
	}
	cfg := st.Stats.Config
	if have, want := limits(cfg), limits(api.Config{Interval: time.Duration(*in.Interval)}); have != want {
		fmt.Fprintf(c.stderr, "slotq %s: queue %s exists, and keeps its limit (%s): --interval sets the limit of a queue the call creates only; change it with 'slotq queues configure %s --interval %s'\n",
			c.name, in.Queue, have, in.Queue, time.Duration(*in.Interval))
	}
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
