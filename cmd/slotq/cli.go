package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

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

// errNotConfirmed is the answer "no" to a confirmation: nothing was done.
var errNotConfirmed = errors.New("not confirmed: nothing done")

// stackCmd is one run of a command that talks to a stack: the command as
// typed, the connection flags, and where it prints.
type stackCmd struct {
	name           string // the command as typed, "queues pause"
	flags          *pflag.FlagSet
	conn           *conn
	stdout, stderr io.Writer
}

// stackRunE is the RunE of a command on a stack: body gets the command
// as a stackCmd, its context and its arguments.
func stackRunE(cn *conn, body func(c *stackCmd, ctx context.Context, pos []string) int) func(*cobra.Command, []string) error {
	return runE(func(cmd *cobra.Command, pos []string) int {
		return body(newStackCmd(cmd, cn), cmd.Context(), pos)
	})
}

func newStackCmd(cmd *cobra.Command, cn *conn) *stackCmd {
	return &stackCmd{name: cmdName(cmd), flags: cmd.Flags(), conn: cn, stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
}

// cmdName is a command's path without "slotq ": "queues pause".
func cmdName(cmd *cobra.Command) string {
	_, name, _ := strings.Cut(cmd.CommandPath(), " ")
	return name
}

// given reports whether the command line set the flag name.
func (c *stackCmd) given(name string) bool { return c.flags.Changed(name) }

// fail reports err on stderr, with the answer's code and field, and
// returns its exit code: 2 for a bad command line, else 1. The message
// starts with the command as typed, whatever operation the client names.
func (c *stackCmd) fail(err error) int {
	code := exitFail
	var ue *usageError
	var e *client.Error
	var fe *client.FunctionError
	body := map[string]any{"message": message(err)}
	switch {
	case errors.Is(err, errNotConfirmed):
		code = exitUsage
	case errors.As(err, &ue):
		code = exitUsage
		if ue.code != "" {
			body = map[string]any{"code": ue.code, "field": ue.field, "message": ue.msg}
		}
	case errors.As(err, &e):
		body = map[string]any{"code": e.Code, "field": e.Field, "message": e.Message}
	case errors.As(err, &fe):
		body = map[string]any{"code": "function_error", "function": fe.Function, "type": fe.Type, "message": fe.Message}
	}
	if c.conn != nil && c.conn.json {
		b, _ := json.Marshal(map[string]any{"error": body})
		fmt.Fprintln(c.stderr, string(b))
		return code
	}
	fmt.Fprintf(c.stderr, "slotq %s: %s\n", c.name, message(err))
	if h := hint(err); h != "" {
		fmt.Fprintln(c.stderr, h)
	}
	if ue != nil {
		fmt.Fprintf(c.stderr, "Run 'slotq %s --help' for usage.\n", c.name)
	}
	return code
}

// message is err for people, without the operation names the client
// puts first ("slotq list: "): the command as typed goes there instead.
func message(err error) string {
	var ue *usageError
	var e *client.Error
	var dial *unreachable
	switch {
	case errors.As(err, &ue):
		if ue.code != "" {
			return fmt.Sprintf("%s (%s): %s", ue.code, ue.field, ue.msg)
		}
		return ue.msg
	case errors.As(err, &e):
		if e.Field == "" {
			return fmt.Sprintf("%s: %s", e.Code, e.Message)
		}
		return fmt.Sprintf("%s (%s): %s", e.Code, e.Field, e.Message)
	case errors.As(err, &dial):
		return dial.Error()
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "slotq"); ok {
		// "slotq: …" or "slotq OP: …"
		if op, after, ok := strings.Cut(rest, ": "); ok && !strings.Contains(strings.TrimPrefix(op, " "), " ") {
			msg = after
		}
	}
	return msg
}

// run builds the client, calls do, and prints its result: JSON with
// --json, else the table print writes.
func (c *stackCmd) run(ctx context.Context, do func(cl *client.Client) (result any, print func(w io.Writer), err error)) int {
	cl, err := c.conn.client(ctx)
	if err != nil {
		return c.fail(err)
	}
	res, print, err := do(cl)
	if err != nil {
		return c.fail(c.conn.explain(err))
	}
	c.print(res, print)
	return exitOK
}

// call runs op, one call of the client such as (*client.Client).GetJob,
// with in, as run does: show gives what to print of its answer, the
// --json answer and the table.
func call[I, O any](c *stackCmd, ctx context.Context, op func(*client.Client, context.Context, *I, ...func(*client.Options)) (*O, error),
	in *I, show func(out *O) (result any, print func(w io.Writer))) int {
	return c.run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := op(cl, ctx, in)
		if err != nil {
			return nil, nil, err
		}
		res, print := show(out)
		return res, print, nil
	})
}

// print writes res as JSON with --json, else the table print writes.
func (c *stackCmd) print(res any, print func(w io.Writer)) {
	if c.conn.json {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	print(tw)
	tw.Flush()
}

// confirm asks on the terminal before what cannot be undone, unless
// --yes was given. Off a terminal it refuses: a script must say --yes.
func (c *stackCmd) confirm(yes bool, what string) error {
	if yes {
		return nil
	}
	if !stdinIsTerminal() {
		return usagef("%s: give --yes to confirm (stdin is not a terminal, so slotq cannot ask)", what)
	}
	fmt.Fprintf(c.stderr, "? %s? [y/N] ", capitalize(what))
	answer, _ := bufio.NewReader(stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return errNotConfirmed
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// row writes one tab-separated line.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	fmt.Fprintln(w)
}

// ts formats a time for the tables: UTC, milliseconds; "-" for none.
func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// usageError is an error of the command line (exit code 2). One the
// stack would refuse the same way carries its code and field.
type usageError struct{ code, field, msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// parseTime reads an RFC 3339 time, or a duration from now ("90s", "2h").
func parseTime(flagName, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := slot.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	return time.Time{}, usagef("--%s %q: want an RFC 3339 time (2025-06-01T14:00:00Z) or a duration from now (90s)", flagName, s)
}

// durationValue is a flag holding a duration read as slotq reads every
// duration (slot.ParseDuration): with its unit, each unit once, the
// largest first ("1h30m", not "1h1h" or "90").
type durationValue time.Duration

func (d *durationValue) String() string {
	if *d == 0 {
		return "0" // help shows no default for it
	}
	return shortDuration(time.Duration(*d))
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
