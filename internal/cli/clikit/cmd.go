package clikit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/slotq/slotq/pkg/client"
)

// ErrNotConfirmed is the answer "no" to a confirmation: nothing was done.
var ErrNotConfirmed = errors.New("not confirmed: nothing done")

// Cmd is one run of a command that talks to a stack: the command as
// typed, its flags, the connection flags, and where it reads and prints.
type Cmd struct {
	Name           string // the command as typed, "queues pause"
	Flags          *pflag.FlagSet
	Conn           *Conn
	Stdout, Stderr io.Writer
	// Stdin is what Confirm reads its answer from; Terminal says whether
	// it is a terminal, where Confirm may ask.
	Stdin    io.Reader
	Terminal func() bool
}

// Given reports whether the command line set the flag name.
func (c *Cmd) Given(name string) bool { return c.Flags.Changed(name) }

// Fail reports err on stderr, with the answer's code and field, and
// returns its exit code: 2 for a bad command line, else 1. The message
// starts with the command as typed, whatever operation the client names.
func (c *Cmd) Fail(err error) int {
	code := ExitFail
	var ue *UsageError
	var e *client.Error
	var fe *client.FunctionError
	body := map[string]any{"message": Message(err)}
	switch {
	case errors.Is(err, ErrNotConfirmed):
		code = ExitUsage
	case errors.As(err, &ue):
		code = ExitUsage
		if ue.Code != "" {
			body = map[string]any{"code": ue.Code, "field": ue.Field, "message": ue.Msg}
		}
	case errors.As(err, &e):
		body = map[string]any{"code": e.Code, "field": e.Field, "message": e.Message}
	case errors.As(err, &fe):
		body = map[string]any{"code": "function_error", "function": fe.Function, "type": fe.Type, "message": fe.Message}
	}
	if c.Conn != nil && c.Conn.JSON {
		b, _ := json.Marshal(map[string]any{"error": body})
		fmt.Fprintln(c.Stderr, string(b))
		return code
	}
	fmt.Fprintf(c.Stderr, "slotq %s: %s\n", c.Name, Message(err))
	if h := hint(err); h != "" {
		fmt.Fprintln(c.Stderr, h)
	}
	if ue != nil {
		fmt.Fprintf(c.Stderr, "Run 'slotq %s --help' for usage.\n", c.Name)
	}
	return code
}

// Message is err for people, without the operation names the client
// puts first ("slotq list: "): the command as typed goes there instead.
func Message(err error) string {
	var ue *UsageError
	var e *client.Error
	var dial *unreachable
	switch {
	case errors.As(err, &ue):
		if ue.Code != "" {
			return fmt.Sprintf("%s (%s): %s", ue.Code, ue.Field, ue.Msg)
		}
		return ue.Msg
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

// Run builds the client, calls do, and prints its result: JSON with
// --json, else the table print writes.
func (c *Cmd) Run(ctx context.Context, do func(cl *client.Client) (result any, print func(w io.Writer), err error)) int {
	cl, err := c.Conn.Client(ctx)
	if err != nil {
		return c.Fail(err)
	}
	res, print, err := do(cl)
	if err != nil {
		return c.Fail(c.Conn.Explain(err))
	}
	c.Print(res, print)
	return ExitOK
}

// Call runs op, one call of the client such as (*client.Client).GetJob,
// with in, as Run does: show gives what to print of its answer, the
// --json answer and the table.
func Call[I, O any](c *Cmd, ctx context.Context, op func(*client.Client, context.Context, *I, ...func(*client.Options)) (*O, error),
	in *I, show func(out *O) (result any, print func(w io.Writer))) int {
	return c.Run(ctx, func(cl *client.Client) (any, func(io.Writer), error) {
		out, err := op(cl, ctx, in)
		if err != nil {
			return nil, nil, err
		}
		res, print := show(out)
		return res, print, nil
	})
}

// Print writes res as JSON with --json, else the table print writes,
// its Rows aligned.
func (c *Cmd) Print(res any, print func(w io.Writer)) {
	if c.Conn.JSON {
		enc := json.NewEncoder(c.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return
	}
	tw := tabwriter.NewWriter(c.Stdout, 0, 0, 2, ' ', 0)
	print(tw)
	tw.Flush()
}

// Confirm asks on the terminal before what cannot be undone, unless
// --yes was given. Off a terminal it refuses: a script must say --yes.
func (c *Cmd) Confirm(yes bool, what string) error {
	if yes {
		return nil
	}
	if c.Terminal == nil || !c.Terminal() {
		return Usagef("%s: give --yes to confirm (stdin is not a terminal, so slotq cannot ask)", what)
	}
	fmt.Fprintf(c.Stderr, "? %s? [y/N] ", capitalize(what))
	answer, _ := bufio.NewReader(c.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return ErrNotConfirmed
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
