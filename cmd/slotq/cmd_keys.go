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

// limitFlags are the flags of one list of limits, in each form: the
// key's own on `slotq keys set` (--rate, --burst, --window, --interval,
// --limit), the queue's key_limits on create and configure (the same
// with the prefix key-).
type limitFlags struct {
	prefix string // of the flags' names: "" or "key-"
	// field is the path of the list in the admin's errors:
	// "config.key_limits" or "keys[0].limits".
	field    string
	interval *time.Duration
	rate     *api.Rate
	burst    *int
	window   *api.Rate
	limits   *limitsValue
}

func newLimitFlags(fs *pflag.FlagSet, prefix, field, whose, what string) *limitFlags {
	f := &limitFlags{prefix: prefix, field: field, rate: new(api.Rate), window: new(api.Rate)}
	f.interval = durationFlag(fs, prefix+"interval", "least time between two starts of "+whose+", a `duration` of at least 1ms "+what)
	fs.Var(rateFlag{f.rate}, prefix+"rate", "at most N starts of "+whose+" per period on average, a rate `N/PERIOD` such as 5/1s, with --"+prefix+"burst "+what)
	f.burst = fs.Int(prefix+"burst", 0, fmt.Sprintf("starts of %s a rate lets through together after an idle time beyond the first, 0 to %d; with --%srate", whose, slot.MaxBurst, prefix))
	fs.Var(rateFlag{f.window}, prefix+"window", "no span shorter than the period holds more than N starts of "+whose+", a window `N/PERIOD` such as 100/1h "+what)
	f.limits = limitFlag(fs, prefix+"limit", fmt.Sprintf("a limit of %s in `words`: 'interval 1s', 'rate 5/1s burst 1' or 'window 100/1h'; repeat it, or separate them with ';', to keep up to %d at once %s", whose, slot.MaxLimits, what))
	return f
}

// given reports whether the command line gives the list.
func (f *limitFlags) given(fs *pflag.FlagSet) bool {
	return slices.ContainsFunc([]string{"interval", "rate", "burst", "window", "limit"}, func(n string) bool { return fs.Changed(f.prefix + n) })
}

// list is the limits the command line gives.
func (f *limitFlags) list(fs *pflag.FlagSet) []api.Limit {
	switch {
	case fs.Changed(f.prefix + "interval"):
		return []api.Limit{{Interval: *f.interval}}
	case fs.Changed(f.prefix + "rate"):
		return []api.Limit{{Rate: *f.rate, Burst: *f.burst}}
	case fs.Changed(f.prefix + "window"):
		return []api.Limit{{Window: *f.window}}
	}
	return slices.Clone(f.limits.ls)
}

// check refuses what the admin function would refuse, naming the flag,
// before anything is sent: two forms at once or a burst without a rate
// (a bad command line), a limit out of range (the admin's typed error,
// on the path it would name).
func (f *limitFlags) check(op string, fs *pflag.FlagSet) error {
	var forms []string
	for _, n := range []string{"interval", "rate", "window", "limit"} {
		if fs.Changed(f.prefix + n) {
			forms = append(forms, "--"+f.prefix+n)
		}
	}
	p := "--" + f.prefix
	switch {
	case len(forms) > 1:
		return clikit.Usagef("give one of %sinterval, %srate (with %sburst), %swindow and %slimit, not %s: each gives the limits whole (repeat %slimit to keep several)",
			p, p, p, p, p, strings.Join(forms, " and "), p)
	case fs.Changed(f.prefix+"burst") && !fs.Changed(f.prefix+"rate"):
		return clikit.Usagef("%sburst goes with %srate, such as %srate 5/1s %sburst 1", p, p, p, p)
	case fs.Changed(f.prefix+"interval") && *f.interval <= 0:
		return f.bad(op, p+"interval "+f.interval.String(), input.Invalid("invalid_interval", "[0].interval", fmt.Sprintf("interval must be at least %s", slot.MinInterval)))
	}
	ls := f.list(fs)
	if len(ls) > slot.MaxLimits {
		return f.bad(op, p+"limit", input.Invalid("too_many_limits", "", fmt.Sprintf("%d limits; a key keeps at most %d at once", len(ls), slot.MaxLimits)))
	}
	for i, l := range ls {
		if err := slot.ValidateLimit(l, fmt.Sprintf("[%d].", i)); err != nil {
			flag := fmt.Sprintf("%slimit '%s'", p, l)
			switch {
			case fs.Changed(f.prefix+"burst") && strings.HasSuffix(fieldOf(err), "burst"):
				flag = fmt.Sprintf("%sburst %d", p, *f.burst)
			case !fs.Changed(f.prefix + "limit"):
				form, value, _ := strings.Cut(l.String(), " ")
				value, _, _ = strings.Cut(value, " ")
				flag = p + form + " " + value
			}
			return f.bad(op, flag, err)
		}
	}
	return nil
}

// bad is err, a refusal of the list's value at a path relative to it,
// as the admin function's typed error on the full path.
func (f *limitFlags) bad(op, flag string, err error) error {
	var e *input.Error
	if !errors.As(err, &e) {
		return err
	}
	return &client.Error{Op: op, Code: e.Code, Field: f.field + e.Field, Message: flag + ": " + e.Message}
}

func fieldOf(err error) string {
	var e *input.Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// keyConfigFlags are the keyed settings of create and configure: the
// limits every key keeps (key_limits) and how many jobs of a key run at
// once (key_max_running).
type keyConfigFlags struct {
	limits     *limitFlags
	maxRunning *int
}

// newKeyConfigFlags defines the keyed flags of create, or of configure
// (change), whose settings left out stay unchanged.
func newKeyConfigFlags(fs *pflag.FlagSet, change bool) *keyConfigFlags {
	limitsWhat, capWhat := "default: none", "default: 1"
	if change {
		limitsWhat, capWhat = "default: unchanged", "default: unchanged"
	}
	return &keyConfigFlags{
		limits:     newLimitFlags(fs, "key-", "config.key_limits", "each key", "(key_limits, kept beside the queue's limit; "+limitsWhat+")"),
		maxRunning: fs.Int("key-max-running", 0, fmt.Sprintf("how many jobs of one key run at once: 1 (one at a time) to %d, or 0 (no cap: the key's limits alone space its jobs; needs key limits) (%s)", slot.MaxKeyRunning, capWhat)),
	}
}

func (f *keyConfigFlags) check(op string, fs *pflag.FlagSet) error {
	if err := f.limits.check(op, fs); err != nil {
		return err
	}
	if fs.Changed("key-max-running") && (*f.maxRunning < 0 || *f.maxRunning > slot.MaxKeyRunning) {
		return &client.Error{Op: op, Code: "invalid_key_max_running", Field: "config.key_max_running",
			Message: fmt.Sprintf("--key-max-running %d: key_max_running must be 1 to %d jobs of a key at once (1 is the default) or 0 (no cap)", *f.maxRunning, slot.MaxKeyRunning)}
	}
	return nil
}

// apply sets on cfg the keyed settings given on the command line.
func (f *keyConfigFlags) apply(fs *pflag.FlagSet, cfg *api.Config) {
	if f.limits.given(fs) {
		cfg.KeyLimits = f.limits.list(fs)
	}
	if fs.Changed("key-max-running") {
		cfg.KeyMaxRunning = keyCap(*f.maxRunning)
	}
}

// keyCap is --key-max-running as api.Config holds it: 0 is no cap.
func keyCap(n int) int {
	if n == 0 {
		return api.NoKeyCap
	}
	return n
}

// keyLimits prints a queue's key_limits: "-" for none.
func keyLimits(c api.Config) string {
	if len(c.KeyLimits) == 0 {
		return "-"
	}
	return slot.Limits(c.KeyLimits).String()
}

// keyMaxRunning prints a queue's key_max_running.
func keyMaxRunning(c api.Config) string {
	if c.KeyMaxRunning == api.NoKeyCap {
		return "- (no cap)"
	}
	return strconv.Itoa(max(1, c.KeyMaxRunning))
}

// newKeysCmd is `slotq keys VERB`.
func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys <command>",
		Short: "List a queue's busy keys; show one; give a key limits of its own or clear them",
		Long: "Work with the keys of a queue that keeps a limit per key (key_limits, set by\n" +
			"'slotq queues create|configure --key-rate ...'): list the keys with jobs waiting or\n" +
			"running, show one, give one limits of its own in place of the queue's, clear them.",
		GroupID: groupOps,
		Example: "  $ slotq queues configure tenants --key-rate 5/1s\n" +
			"  $ slotq keys list tenants\n" +
			"  $ slotq keys set tenants acme --rate 20/1s --burst 5\n" +
			"  $ slotq keys clear tenants acme",
	}
	cn := connFlags(cmd.PersistentFlags())
	return parent(cmd, newKeysListCmd(cn), newKeysGetCmd(cn), newKeysSetCmd(cn), newKeysClearCmd(cn))
}

func newKeysListCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list QUEUE",
		Short: "List a queue's keys with jobs waiting or running, busiest first",
		Long: "Lists QUEUE's keys with jobs waiting or running (and those with limits of their own),\n" +
			"busiest first, at most 1000: each key's limits (own: set for the key; else the queue's\n" +
			"key_limits), its jobs pending (accepted, not ended), waiting on the key and held (one\n" +
			"runs, or is about to), when its limits let its next job start, and whether it is at its\n" +
			"limit (its next start lies ahead while jobs wait).",
		Args: nArgs(1, 1),
	}
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		return clikit.Call(c.Cmd, ctx, (*client.Client).ListKeys, &client.ListKeysInput{Queue: pos[0]}, func(out *client.ListKeysOutput) (any, func(io.Writer)) {
			keys := out.Keys
			if keys == nil {
				keys = []api.KeyInfo{}
			}
			now := time.Now()
			return keys, func(w io.Writer) {
				clikit.Row(w, "KEY", "LIMIT", "PENDING", "WAITING", "HELD", "NEXT START", "AT LIMIT")
				for _, k := range keys {
					clikit.Row(w, k.Key, keyLimit(k), k.Pending, k.Waiting, yesNo(k.Held), nextStart(laterOf(k.NextStart, slowedTo(k.SlowUntil, now)), now), yesNo(k.AtLimit))
				}
			}
		})
	})
	return cmd
}

// keyLimit prints a key's limits, its own marked.
func keyLimit(k api.KeyInfo) string {
	if len(k.Limits) == 0 {
		return "-"
	}
	s := slot.Limits(k.Limits).String()
	if k.Own {
		s += " (own)"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// nextStart prints when a key's next start may come, from now: "now"
// when its limits hold nothing back.
func nextStart(t, now time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return "in " + clikit.Human(t.Sub(now))
}

// keyRows prints one key, a line each.
func keyRows(queue string, k api.KeyInfo) func(io.Writer) {
	return func(w io.Writer) {
		now := time.Now()
		clikit.Row(w, "queue", queue)
		clikit.Row(w, "key", k.Key)
		clikit.Row(w, "limits", keyLimit(k))
		clikit.Row(w, "pending", k.Pending)
		clikit.Row(w, "waiting", k.Waiting)
		clikit.Row(w, "held", yesNo(k.Held))
		clikit.Row(w, "next start", nextStart(k.NextStart, now))
		clikit.Row(w, "at limit", yesNo(k.AtLimit))
		clikit.Row(w, "last start", clikit.Time(k.LastStart))
		clikit.Row(w, "slowed", slowed(k.SlowUntil, k.SlowDowns, now))
		if k.Weight > 0 {
			clikit.Row(w, "weight", k.Weight)
		}
	}
}

func newKeysGetCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get QUEUE KEY",
		Short: "Show one key of a queue: its limits, jobs and next start",
		Long:  "Shows KEY of QUEUE, also when it has no jobs: its limits, jobs and next start.",
		Args:  nArgs(2, 2),
	}
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		return clikit.Call(c.Cmd, ctx, (*client.Client).GetKey, &client.GetKeyInput{Queue: pos[0], Key: pos[1]}, func(out *client.GetKeyOutput) (any, func(io.Writer)) {
			return out.Key, keyRows(pos[0], out.Key)
		})
	})
	return cmd
}

func newKeysSetCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set QUEUE KEY",
		Short: "Give a key limits of its own, in place of the queue's key limits",
		Long: "Gives KEY of QUEUE limits of its own, in one form: --interval, --rate with --burst,\n" +
			"--window, or --limit (repeated, or separated by ';', up to 3 at once). They replace the\n" +
			"queue's key_limits for this key; the queue's own limit still holds over all keys. The\n" +
			"key's starts already made count against its new limits. The queue must keep limits per\n" +
			"key ('slotq queues configure QUEUE --key-rate ...').",
		Example: "  $ slotq keys set tenants acme --rate 20/1s --burst 5\n" +
			"  $ slotq keys set tenants acme --limit 'rate 20/1s; window 10000/24h'",
		Args: nArgs(2, 2),
	}
	lf := newLimitFlags(cmd.Flags(), "", "keys[0].limits", "the key", "(one form of --interval, --rate, --window and --limit)")
	weight := cmd.Flags().Int("weight", 0, fmt.Sprintf("the key's weight in the queue's waiting room: its bookings each round of the round-robin across keys, 1 to %d (default 1); alone, it keeps the key's limits", api.MaxWeight))
	cmd.RunE = stackRunE(cn, func(c *stackCmd, ctx context.Context, pos []string) int {
		kl := api.KeyLimit{Key: pos[1]}
		if c.Flags.Changed("weight") {
			kl.Weight = weight
		}
		if !lf.given(c.Flags) && kl.Weight == nil {
			return c.Fail(clikit.Usagef("give the key's limits: --interval, --rate (with --burst), --window or --limit ('slotq keys clear' takes them away), or its --weight"))
		}
		if lf.given(c.Flags) {
			if err := lf.check("keys set", c.Flags); err != nil {
				return c.Fail(err)
			}
			kl.Limits = lf.list(c.Flags)
		}
		return setKey(c, ctx, cn, pos[0], kl)
	})
	return cmd
}

func newKeysClearCmd(cn *clikit.Conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clear QUEUE KEY",
		Short: "Take a key's own limits away: it keeps the queue's key limits again",
		Long:  "Takes the limits of its own away from KEY of QUEUE: it keeps the queue's key_limits again.",
		Args:  nArgs(2, 2),
	}
	cmd.RunE = runE(func(cmd *cobra.Command, pos []string) int {
		c := newStackCmd(cmd, cn)
		return setKey(c, cmd.Context(), cn, pos[0], api.KeyLimit{Key: pos[1]})
	})
	return cmd
}

// setKey gives one key its limits, or clears them (nil), and prints the
// key as set.
func setKey(c *stackCmd, ctx context.Context, _ *clikit.Conn, queue string, kl api.KeyLimit) int {
	return clikit.Call(c.Cmd, ctx, (*client.Client).SetKeyLimits, &client.SetKeyLimitsInput{Queue: queue, Keys: []api.KeyLimit{kl}}, func(out *client.SetKeyLimitsOutput) (any, func(io.Writer)) {
		var k api.KeyInfo
		if len(out.Keys) > 0 {
			k = out.Keys[0]
		}
		return k, keyRows(queue, k)
	})
}
