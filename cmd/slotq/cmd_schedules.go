package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// newSchedulesCmd is `slotq schedules VERB`: a queue's recurring
// schedules (docs/schedules.md).
func newSchedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules <command>",
		Short: "Create, list, pause, resume or delete a queue's recurring schedules",
		Long: "Work with a queue's schedules: each occurrence of a schedule (every a period, or a cron\n" +
			"expression in a time zone) becomes one job, released ahead so that it starts on its time\n" +
			"through the queue's limit.",
		GroupID: groupOps,
		Example: "  $ slotq schedules create emails heartbeat --every 1s --kind echo\n" +
			"  $ slotq schedules create reports morning --cron '0 8 * * *' --tz Europe/Paris --kind echo   # your worker's kind on a stack, such as send-report\n" +
			"  $ slotq schedules list reports\n" +
			"  $ slotq schedules pause reports morning",
	}
	cn := connFlags(cmd.PersistentFlags())
	return parent(cmd, newScheduleCreateCmd(cn), newSchedulesListCmd(cn),
		newScheduleOpCmd(cn, "get", "Show a schedule: its rule, next occurrence and what it made", (*client.Client).GetSchedule),
		newScheduleOpCmd(cn, "pause", "Pause a schedule (and cancel the occurrences it made ahead)", (*client.Client).PauseSchedule),
		newScheduleOpCmd(cn, "resume", "Resume a schedule (missed occurrences follow its --missed policy)", (*client.Client).ResumeSchedule),
		newScheduleOpCmd(cn, "delete", "Delete a schedule (and cancel the occurrences it made ahead)", (*client.Client).DeleteSchedule))
}

func newScheduleCreateCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create QUEUE NAME",
		Short: "Create a schedule: --every a period or --cron an expression (--tz its zone), and the job",
		Long: "Creates schedule NAME on QUEUE. Give --every (1s or more) or --cron (5 fields, or 6 with\n" +
			"seconds first; read in --tz, default UTC), and the job: --kind or --target, with --payload and\n" +
			"--key. Each occurrence becomes one job, id NAME:TIME, not_before its time.",
		Args: nArgs(2, 2),
	}
	fs := cmd.Flags()
	every := durationFlag(fs, "every", "a fixed period, 1s or more (occurrences on whole multiples of it since the Unix epoch, or from --start)")
	var (
		cronExpr = fs.String("cron", "", "a cron expression: 'minute hour day month weekday', or six fields with seconds first")
		tz       = fs.String("tz", "", "the IANA time zone --cron is read in, such as Europe/Paris (default UTC)")
		start    = fs.String("start", "", "the first time an occurrence may have (RFC 3339, or a duration from now)")
		end      = fs.String("end", "", "the last time an occurrence may have (RFC 3339, or a duration from now)")
		missed   = fs.String("missed", "", "what to do with occurrences missed while paused or down: none, latest (default) or all (up to 100)")
		kind     = fs.String("kind", "", "the job's Go handler")
		target   = fs.String("target", "", "the job's HTTP URL or Lambda function (lambda:NAME)")
		payload  = fs.String("payload", "", "the job's JSON payload, @FILE to read it from a file, or - for stdin")
		key      = fs.String("key", "", "the job's key: occurrences of one key run as jobs of that key do (key_max_running at once, 1 by default; key limits)")
	)
	cn = stackFlags(cmd, cn)
	cmd.RunE = runE(func(cmd *cobra.Command, pos []string) int {
		c := newStackCmd(cmd, cn)
		spec := api.ScheduleSpec{Cron: *cronExpr, TZ: *tz, Missed: *missed, Job: api.ScheduleJob{Kind: *kind, Target: *target, Key: *key}}
		if c.Given("every") {
			d := api.Duration(*every)
			spec.Every = &d
		}
		if c.Given("every") == c.Given("cron") {
			return c.Fail(&clikit.UsageError{Code: "no_rule", Field: "schedule.every", Msg: "give --every or --cron, one of them"})
		}
		now := time.Now()
		for _, t := range []struct {
			name, v string
			to      **time.Time
		}{{"start", *start, &spec.Start}, {"end", *end, &spec.End}} {
			if t.v == "" {
				continue
			}
			at, err := parseTime(t.name, t.v, now)
			if err != nil {
				return c.Fail(err)
			}
			*t.to = &at
		}
		if *payload != "" {
			b, err := readPayload(*payload, true)
			if err != nil {
				return c.Fail(err)
			}
			spec.Job.Payload = b
		}
		ctx := cmd.Context()
		return clikit.Call(c.Cmd, ctx, (*client.Client).CreateSchedule, &client.CreateScheduleInput{Queue: pos[0], Name: pos[1], Spec: spec}, func(out *client.ScheduleOutput) (any, func(io.Writer)) {
			return out.Schedule, scheduleRows(out.Schedule)
		})
	})
	return cmd
}

func newSchedulesListCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list QUEUE",
		Short: "List a queue's schedules with their next occurrences",
		Args:  nArgs(1, 1),
	}
	cn = stackFlags(cmd, cn)
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		return clikit.Call(c.Cmd, ctx, (*client.Client).ListSchedules, &client.ListSchedulesInput{Queue: pos[0]}, func(out *client.ListSchedulesOutput) (any, func(io.Writer)) {
			return out.Schedules, func(w io.Writer) {
				clikit.Row(w, "SCHEDULE", "RULE", "JOB", "PAUSED", "NEXT", "LAST", "MADE", "SKIPPED")
				for _, s := range out.Schedules {
					clikit.Row(w, s.Name, rule(s.Spec), scheduleJob(s.Spec.Job), yesNo(s.Paused), clikit.Time(s.Next), clikit.Time(s.Last), s.Made, s.Skipped)
				}
			}
		})
	})
	return cmd
}

// newScheduleOpCmd is `slotq schedules VERB QUEUE NAME` for the calls on
// one schedule.
func newScheduleOpCmd(cn *clikit.Conn, verb, short string, op func(*client.Client, context.Context, *client.ScheduleInput, ...func(*client.Options)) (*client.ScheduleOutput, error)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   verb + " QUEUE NAME",
		Short: short,
		Args:  nArgs(2, 2),
	}
	cn = stackFlags(cmd, cn)
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		return clikit.Call(c.Cmd, ctx, op, &client.ScheduleInput{Queue: pos[0], Name: pos[1]}, func(out *client.ScheduleOutput) (any, func(io.Writer)) {
			if verb == "delete" {
				res := map[string]any{"queue": pos[0], "schedule": pos[1], "cancelled": out.Cancelled}
				return res, func(w io.Writer) {
					clikit.Row(w, "deleted", pos[1])
					clikit.Row(w, "cancelled", out.Cancelled)
				}
			}
			print := scheduleRows(out.Schedule)
			if verb == "pause" {
				res := map[string]any{"schedule": out.Schedule, "cancelled": out.Cancelled}
				return res, func(w io.Writer) {
					print(w)
					clikit.Row(w, "cancelled", out.Cancelled)
				}
			}
			return out.Schedule, print
		})
	})
	return cmd
}

// scheduleRows prints one schedule.
func scheduleRows(s api.Schedule) func(io.Writer) {
	return func(w io.Writer) {
		clikit.Row(w, "queue", s.Queue)
		clikit.Row(w, "schedule", s.Name)
		clikit.Row(w, "rule", rule(s.Spec))
		if s.Spec.Start != nil {
			clikit.Row(w, "start", clikit.Time(*s.Spec.Start))
		}
		if s.Spec.End != nil {
			clikit.Row(w, "end", clikit.Time(*s.Spec.End))
		}
		clikit.Row(w, "missed", cmp.Or(s.Spec.Missed, api.MissedLatest)) // the default, as the engine reads it
		clikit.Row(w, "job", scheduleJob(s.Spec.Job))
		clikit.Row(w, "paused", yesNo(s.Paused))
		clikit.Row(w, "next", clikit.Time(s.Next))
		clikit.Row(w, "last", clikit.Time(s.Last))
		clikit.Row(w, "made", s.Made)
		clikit.Row(w, "skipped", s.Skipped)
		if s.Error != "" {
			clikit.Row(w, "error", s.Error)
		}
	}
}

// rule is a schedule's rule in words: "every 1s", "cron 0 8 * * * Europe/Paris".
func rule(s api.ScheduleSpec) string {
	if s.Every != nil {
		return "every " + clikit.Setting(time.Duration(*s.Every))
	}
	tz := s.TZ
	if tz == "" {
		tz = "UTC"
	}
	return fmt.Sprintf("cron %s %s", s.Cron, tz)
}

func scheduleJob(j api.ScheduleJob) string {
	s := "kind " + j.Kind
	if j.Target != "" {
		s = "target " + j.Target
	}
	if j.Key != "" {
		s += " key " + j.Key
	}
	return s
}
