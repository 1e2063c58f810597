package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/client"
)

// stdin is what --payload - and --ids - read; tests replace it.
var stdin io.Reader = os.Stdin

// cmdLine is one command's command line: its flags, its arguments and
// its help.
type cmdLine struct {
	name, args, desc string
	fs               *flag.FlagSet
	stdout, stderr   io.Writer
}

func newCmdLine(name, args, desc string, stdout, stderr io.Writer) *cmdLine {
	fs := flag.NewFlagSet("slotq "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	return &cmdLine{name: name, args: args, desc: desc, fs: fs, stdout: stdout, stderr: stderr}
}

// stackCmd is one command that talks to a stack: its command line, the
// connection flags, and how it prints.
type stackCmd struct {
	*cmdLine
	conn *conn
}

func newStackCmd(name, args, desc string, stdout, stderr io.Writer) *stackCmd {
	c := newCmdLine(name, args, desc, stdout, stderr)
	return &stackCmd{cmdLine: c, conn: connFlags(c.fs)}
}

// usage prints the command's help: usage line, description, flags with
// their defaults.
func (c *cmdLine) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n\nFlags:\n", strings.TrimSpace("slotq "+c.name+" [flags] "+c.args), c.desc)
	c.fs.SetOutput(w)
	c.fs.PrintDefaults()
	c.fs.SetOutput(c.stderr)
	fmt.Fprintf(w, "\nExit status: 0 done, 1 the operation failed, 2 bad command line.\n")
}

// parse parses flags anywhere among the arguments (slotq pause emails
// --for 1m) and checks the number of arguments. It returns the arguments,
// and an exit code when the command should stop now (-1 otherwise).
func (c *cmdLine) parse(args []string, min, max int) ([]string, int) {
	pos, err := parseAnywhere(c.fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.usage(c.stdout)
		return nil, exitOK
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "Run 'slotq %s --help' for usage.\n", c.name)
		return nil, exitUsage
	}
	if len(pos) < min || max >= 0 && len(pos) > max {
		if c.args == "" {
			fmt.Fprintf(c.stderr, "slotq %s: unexpected argument %q\n", c.name, pos[0])
		} else {
			fmt.Fprintf(c.stderr, "slotq %s: want arguments %s, got %d\n", c.name, c.args, len(pos))
		}
		fmt.Fprintf(c.stderr, "Run 'slotq %s --help' for usage.\n", c.name)
		return nil, exitUsage
	}
	return pos, -1
}

// parseAnywhere parses the flags of fs found anywhere among args, not
// only before the first argument, and returns the arguments; those after
// "--" are arguments whatever they look like.
func parseAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// fail reports err on stderr, with the answer's code and field, and
// returns its exit code.
func (c *stackCmd) fail(err error) int {
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(c.stderr, "slotq %s: %s\n", c.name, ue.msg)
		return exitUsage
	}
	if c.conn.json {
		var e *client.Error
		var fe *client.FunctionError
		var body any = map[string]any{"message": err.Error()}
		switch {
		case errors.As(err, &e):
			body = map[string]any{"code": e.Code, "field": e.Field, "message": e.Message}
		case errors.As(err, &fe):
			body = map[string]any{"code": "function_error", "function": fe.Function, "type": fe.Type, "message": fe.Message}
		}
		b, _ := json.Marshal(map[string]any{"error": body})
		fmt.Fprintln(c.stderr, string(b))
		return exitFail
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "slotq") {
		msg = "slotq " + c.name + ": " + msg
	}
	fmt.Fprintln(c.stderr, msg)
	return exitFail
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
		return c.fail(err)
	}
	if c.conn.json {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return c.fail(err)
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	print(tw)
	tw.Flush()
	return exitOK
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

func (d *durationValue) String() string { return time.Duration(*d).String() }

func (d *durationValue) Set(s string) error {
	v, err := slot.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

// durationFlag defines a duration flag read by slot.ParseDuration. Its
// usage must name its type in backquotes (a `duration` such as 1s), as
// flag.PrintDefaults lists it.
func durationFlag(fs *flag.FlagSet, name, usage string) *time.Duration {
	d := new(time.Duration)
	fs.Var((*durationValue)(d), name, usage)
	return d
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
