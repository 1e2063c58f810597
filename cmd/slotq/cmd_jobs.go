package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// newJobsCmd is `slotq jobs VERB`.
func newJobsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "jobs <command>",
		Short:   "List a queue's parked or failed jobs; get, cancel or retry a job",
		Long:    "Work with a queue's jobs: list the parked or failed ones, get one's record, cancel one,\nrun failed ones again.",
		GroupID: groupOps,
		Example: "  $ slotq jobs list emails --status failed\n" +
			"  $ slotq jobs get emails welcome-42 --wait\n" +
			"  $ slotq jobs retry emails --failed",
	}
	cn := connFlags(cmd.PersistentFlags())
	return parent(cmd, newJobsListCmd(cn), newJobsGetCmd(cn), newJobsCancelCmd(cn), newJobsRetryCmd(cn))
}

func newJobsListCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list QUEUE",
		Short: "List a queue's parked or failed jobs (jobs that run without trouble are never listed)",
		Long: "Lists QUEUE's parked jobs (waiting for the resume function: far slot, paused queue;\n" +
			"or for their key, or a running place, which an attempt that ends hands them)\n" +
			"or its failed ones (dead letters), by ticket. Jobs that run without trouble are never listed:\n" +
			"get them by id.",
		Args: nArgs(1, 1),
	}
	status := cmd.Flags().String("status", string(api.Parked), "parked or failed")
	after := cmd.Flags().Int64("after", 0, "list tickets after this `ticket` (the next page)")
	limit := cmd.Flags().Int("limit", 100, "most jobs to list")
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		return clikit.Call(c.Cmd, ctx, (*client.Client).ListJobs, &client.ListJobsInput{Queue: pos[0], Status: api.Status(*status), After: *after, Limit: *limit}, func(out *client.ListJobsOutput) (any, func(io.Writer)) {
			res := struct {
				Jobs      []api.Job `json:"jobs"`
				NextAfter int64     `json:"next_after,omitempty"`
			}{out.Jobs, out.NextAfter}
			return res, func(w io.Writer) {
				clikit.Row(w, "JOB ID", "TICKET", "STATUS", "SLOT AT", "ATTEMPT", "WHAT", "WHY")
				for _, j := range out.Jobs {
					why := j.LastError
					if j.Status == api.Parked {
						why = parkedWhy(j)
					}
					clikit.Row(w, j.ID, j.Ticket, j.Status, clikit.Time(j.SlotAt), j.Attempt, j.What(), oneLine(why, 60))
				}
				if out.NextAfter != 0 {
					fmt.Fprintf(w, "more: --after %d\n", out.NextAfter)
				}
			}
		})
	})
	return cmd
}

// waitFlags are --wait and --timeout of enqueue and jobs get.
func waitFlags(cmd *cobra.Command) (wait *bool, timeout *time.Duration) {
	wait = cmd.Flags().Bool("wait", false, "wait for the job to end and print its record with its result (exit 3 if it failed or was cancelled, 4 at --timeout)")
	timeout = cmd.Flags().Duration("timeout", defaultWaitTimeout, "with --wait, how long to wait at most")
	return wait, timeout
}

// checkWait checks --wait and --timeout.
func (c *stackCmd) checkWait(wait bool, timeout time.Duration) error {
	if c.Given("timeout") && !wait {
		return clikit.Usagef("--timeout goes with --wait")
	}
	if timeout <= 0 {
		return clikit.Usagef("--timeout must be greater than 0")
	}
	return nil
}

func newJobsGetCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get QUEUE ID",
		Short: "Show a job's record by its id, with its result once it ended",
		Long: "Shows the record of job ID of QUEUE, whatever its status, with its result once it ended.\n" +
			"With --wait, waits for it to end first: " + waitExits,
		Example:     "  $ slotq jobs get emails welcome-42 --wait --timeout 1m",
		Args:        nArgs(2, 2),
		Annotations: map[string]string{"exit": clikit.ExitStatus + "\nWith --wait: 3 the job failed or was cancelled, 4 --timeout came first."},
	}
	wait, timeout := waitFlags(cmd)
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		if err := c.checkWait(*wait, *timeout); err != nil {
			return c.Fail(err)
		}
		if *wait {
			cl, err := c.Conn.Client(ctx)
			if err != nil {
				return c.Fail(err)
			}
			return c.waitJob(ctx, cl, pos[0], pos[1], *timeout)
		}
		return clikit.Call(c.Cmd, ctx, (*client.Client).GetJob, &client.GetJobInput{Queue: pos[0], JobID: pos[1]}, func(out *client.GetJobOutput) (any, func(io.Writer)) {
			return out.Job, jobRows(out.Job)
		})
	})
	return cmd
}

func newJobsCancelCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel QUEUE ID",
		Short: "Cancel a job that has not started",
		Long:  "Cancels job ID of QUEUE if it has not started (code not_waiting if it has).",
		Args:  nArgs(2, 2),
	}
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		return clikit.Call(c.Cmd, ctx, (*client.Client).CancelJob, &client.CancelJobInput{Queue: pos[0], JobID: pos[1]}, func(out *client.CancelJobOutput) (any, func(io.Writer)) {
			return out.Job, jobRows(out.Job)
		})
	})
	return cmd
}

func newJobsRetryCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "retry QUEUE [ID...]",
		Short: "Run failed or cancelled jobs again under their ids (--failed: every dead letter)",
		Long: "Runs failed or cancelled jobs of QUEUE again under their ids: each takes a new ticket\n" +
			"at the end of the line and goes through the gate like any job. Its attempts keep counting,\n" +
			"and the rerun has the queue's max_attempts of its own. Name the jobs (up to 100; one that is\n" +
			"not failed or cancelled refuses them all: not_retryable), or give --failed to run every\n" +
			"failed job again, a page of --limit at a time, one call each.",
		Example: "  $ slotq jobs retry flaky f1 --by ops\n" +
			"  $ slotq jobs retry flaky --failed --limit 50 --pages 1",
		Args: nArgs(1, -1),
	}
	failed := cmd.Flags().Bool("failed", false, "run every failed job (dead letter) of QUEUE again, in pages, instead of the IDs")
	limit := cmd.Flags().Int("limit", engine.DefaultRetryPage, "with --failed, jobs per page (one call each), at most 500")
	pages := cmd.Flags().Int("pages", 0, "with --failed, stop after this many pages and print where to go on (0: all)")
	after := cmd.Flags().Int64("after", 0, "with --failed, go on after this `ticket` (as a stopped run printed)")
	upTo := cmd.Flags().Int64("up-to", 0, "with --failed, only jobs whose ticket is at most this `ticket` (as a stopped run printed; 0: the queue's ticket now)")
	by := cmd.Flags().String("by", defaultBy(), "who asks, recorded in each job's history")
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		if *failed == (len(pos) > 1) {
			if *failed {
				return c.Fail(clikit.Usagef("give job ids or --failed, not both"))
			}
			return c.Fail(clikit.Usagef("name the jobs to run again, or give --failed"))
		}
		return c.Run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
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
							fmt.Fprintf(c.Stderr, "slotq %s: %d jobs run again in %d pages before the error; go on with --after %d --up-to %d\n",
								c.Name, len(res.Jobs), res.Pages, *after, res.UpTo)
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
				clikit.Row(w, "JOB ID", "TICKET", "SLOT AT", "POSITION", "STATUS")
				for _, a := range res.Jobs {
					clikit.Row(w, a.JobID, a.Ticket, clikit.Time(a.SlotAt), a.Position, a.Status)
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
	})
	return cmd
}

func newRedriveCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "redrive",
		Short: "Move the slot queue's dead-letter messages back, each checked against its job",
		Long: "Moves the messages SQS moved to the slot queue's dead-letter queue (a worker failed on them\n" +
			"five times without recording anything) back to the slot queue, each checked against its job:\n" +
			"one whose job still waits for it is sent again, one whose job ended or moved on is dropped,\n" +
			"a body that is no job envelope stays. Fix the cause first (the worker's logs).",
		Args: nArgs(0, 0),
	}
	cn = stackFlags(cmd, cn)
	limit := cmd.Flags().Int("limit", engine.DefaultRedrive, "most messages to receive in this call, at most 1000")
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, _ []string) int {
		return clikit.Call(c.Cmd, ctx, (*client.Client).Redrive, &client.RedriveInput{Limit: *limit}, func(out *client.RedriveOutput) (any, func(io.Writer)) {
			r := out.Report
			return r, func(w io.Writer) {
				clikit.Row(w, "received", r.Received)
				clikit.Row(w, "sent back", r.Redriven)
				clikit.Row(w, "dropped (job moved on)", r.Dropped)
				clikit.Row(w, "left (not a job envelope)", r.Undecodable)
				if r.More {
					clikit.Row(w, "more", "run it again: the limit was reached")
				}
			}
		})
	})
	return cmd
}

// parkedWhy says why a job is parked and when the resume function
// releases it; a job waiting on a lane is released by a hand-off instead.
func parkedWhy(j api.Job) string {
	switch {
	case j.ParkReason == api.WaitKey:
		return "waiting for key " + j.Key
	case j.ParkReason == api.WaitPlace:
		return "waiting for a running place"
	case j.ParkReason == api.Room:
		return "in the waiting room, for its booking"
	case j.ParkReason == api.WaitGate && !j.DueAt.IsZero():
		return "waiting for its gate to open, released " + clikit.Time(j.DueAt)
	case j.DueAt.IsZero():
		return string(j.ParkReason)
	}
	return fmt.Sprintf("%s, due %s", j.ParkReason, clikit.Time(j.DueAt))
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return clikit.OrDash(s)
}

func jobRows(j api.Job) func(io.Writer) {
	return func(w io.Writer) {
		clikit.Row(w, "queue", j.Queue)
		clikit.Row(w, "job id", j.ID)
		clikit.Row(w, "what", j.What())
		if j.Key != "" {
			clikit.Row(w, "key", j.Key)
		}
		clikit.Row(w, "status", j.Status)
		if j.Room != nil {
			clikit.Row(w, "waiting", roomLine(*j.Room, time.Now()))
		}
		clikit.Row(w, "ticket", j.Ticket)
		clikit.Row(w, "slot at", clikit.Time(j.SlotAt))
		clikit.Row(w, "attempt", j.Attempt)
		if j.Retickets > 0 {
			clikit.Row(w, "retickets", j.Retickets)
		}
		if j.Reruns > 0 {
			clikit.Row(w, "reruns", fmt.Sprintf("%d (this run from attempt %d)", j.Reruns, j.RerunFrom+1))
		}
		if !j.NotBefore.IsZero() {
			clikit.Row(w, "not before", clikit.Time(j.NotBefore))
		}
		if j.ParkReason != "" {
			clikit.Row(w, "parked", parkedWhy(j))
		}
		clikit.Row(w, "enqueued", clikit.Time(j.EnqueuedAt))
		clikit.Row(w, "started", clikit.Time(j.StartedAt))
		if !j.StartedAt.IsZero() {
			clikit.Row(w, "late", clikit.Human(j.StartedAt.Sub(j.SlotAt)))
		}
		clikit.Row(w, "finished", clikit.Time(j.FinishedAt))
		if j.TraceParent != "" {
			clikit.Row(w, "traceparent", j.TraceParent)
		}
		if j.TraceState != "" {
			clikit.Row(w, "tracestate", j.TraceState)
		}
		if j.AttemptSpan != "" {
			clikit.Row(w, "attempt span", j.AttemptSpan)
		}
		if j.LastError != "" {
			clikit.Row(w, "last error", oneLine(j.LastError, 200))
		}
		if len(j.Payload) > 0 {
			clikit.Row(w, "payload", oneLine(string(j.Payload), 200))
		}
		if len(j.Result) > 0 {
			clikit.Row(w, "result", oneLine(string(j.Result), 200))
		}
		if j.ResultDropped > 0 {
			clikit.Row(w, "result", fmt.Sprintf("not kept: %d bytes, over the %d-byte bound", j.ResultDropped, api.MaxResult))
		}
		for i, ev := range j.History {
			label := ""
			if i == 0 {
				label = "history"
				if j.HistoryDropped > 0 {
					label = fmt.Sprintf("history (%d older not kept)", j.HistoryDropped)
				}
			}
			clikit.Row(w, label, clikit.Time(ev.At)+"  "+eventText(ev))
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
	code := clikit.ExitOK
	var je *client.JobError
	switch {
	case err == nil:
	case errors.As(err, &je):
		code = exitJobFailed
		fmt.Fprintf(c.Stderr, "slotq %s: %s\n", c.Name, clikit.Message(err))
	case wctx.Err() != nil && ctx.Err() == nil && out.Polls > 0:
		code = exitTimedOut
		fmt.Fprintf(c.Stderr, "slotq %s: job %s is still %s after %s; wait again with: slotq jobs get %s %s --wait\n",
			c.Name, id, out.Job.Status, clikit.Human(timeout), queue, id)
	default:
		return c.Fail(c.Conn.Explain(err))
	}
	c.Print(out.Job, jobRows(out.Job))
	return code
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
