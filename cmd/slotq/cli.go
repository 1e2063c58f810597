package main

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// stdin is what --payload -, --ids - and the confirmations read; tests
// replace it.
var stdin io.Reader = os.Stdin

// stdinIsTerminal reports whether stdin is a terminal, where purge and
// delete may ask; tests replace it.
var stdinIsTerminal = func() bool {
	f, ok := stdin.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// stackCmd is one run of a command that talks to a stack (clikit.Cmd):
// the commands' own steps are its methods.
type stackCmd struct{ *clikit.Cmd }

// stackRunE is the RunE of a command on a stack: body gets the command
// as a stackCmd, its context and its arguments.
func stackRunE(cn *clikit.Conn, body func(c *stackCmd, ctx context.Context, pos []string) int) func(*cobra.Command, []string) error {
	return runE(func(cmd *cobra.Command, pos []string) int {
		return body(newStackCmd(cmd, cn), cmd.Context(), pos)
	})
}

func newStackCmd(cmd *cobra.Command, cn *clikit.Conn) *stackCmd {
	return &stackCmd{&clikit.Cmd{Name: cmdName(cmd), Flags: cmd.Flags(), Conn: cn, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
		Stdin: stdin, Terminal: stdinIsTerminal}}
}

// cmdName is a command's path without "slotq ": "queues pause".
func cmdName(cmd *cobra.Command) string {
	_, name, _ := strings.Cut(cmd.CommandPath(), " ")
	return name
}

// parseTime reads an RFC 3339 time, or a duration from now ("90s", "2h").
func parseTime(flagName, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := slot.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	return time.Time{}, clikit.Usagef("--%s %q: want an RFC 3339 time (2025-06-01T14:00:00Z) or a duration from now (90s)", flagName, s)
}

// durationValue is a flag holding a duration read as slotq reads every
// duration (slot.ParseDuration): with its unit, each unit once, the
// largest first ("1h30m", not "1h1h" or "90").
type durationValue time.Duration

func (d *durationValue) String() string {
	if *d == 0 {
		return "0" // help shows no default for it
	}
	return clikit.Setting(time.Duration(*d))
}

func (d *durationValue) Type() string { return "duration" }

func (d *durationValue) Set(s string) error {
	v, err := slot.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

// durationFlag defines a duration flag read by slot.ParseDuration.
func durationFlag(fs *pflag.FlagSet, name, usage string) *time.Duration {
	d := new(time.Duration)
	fs.Var((*durationValue)(d), name, usage)
	return d
}

// limitsValue is a repeatable flag holding limits in words
// (api.ParseLimits): each value one limit, or several separated by
// semicolons as a queue's limits are printed.
type limitsValue struct{ ls []api.Limit }

func (v *limitsValue) String() string { return slot.Limits(v.ls).String() }

func (v *limitsValue) Type() string { return "limit" }

func (v *limitsValue) Set(s string) error {
	ls, err := api.ParseLimits(s)
	if err != nil {
		return err
	}
	v.ls = append(v.ls, ls...)
	return nil
}

// limitFlag defines a repeatable flag of limits in words.
func limitFlag(fs *pflag.FlagSet, name, usage string) *limitsValue {
	v := new(limitsValue)
	fs.Var(v, name, usage)
	return v
}

// zeroSetting is the refusal of a queue setting given on the command line
// as zero where zero would be read as "the default" (slot.ZeroSetting): the
// error the admin function answers when a request gives it as zero, so
// the command line and the API agree. field is the setting's JSON name.
func zeroSetting(op, prefix, field string) error {
	if e := slot.ZeroSetting(field); e != nil {
		return &client.Error{Op: op, Code: e.Code, Field: prefix + e.Field, Message: e.Message}
	}
	return nil
}
