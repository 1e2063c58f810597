package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/cli/console"
)

func newConsoleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console: queues, a live timeline of starts against their slots, jobs",
		Long: "Serves the web console on loopback: the queues with their figures, a page per queue with a live\n" +
			"timeline of its starts against their slots, and a page per job with its record and history; it\n" +
			"pauses, resumes and purges queues and cancels and retries jobs, each after a confirmation.\n" +
			"It reads and acts through the admin function only, with the connection flags' credentials, so it\n" +
			"needs no permission its operator does not have. It has no login of its own: it refuses an address\n" +
			"other than loopback unless --allow-remote says so. `slotq local` (make run) serves it too.",
		Example: "  $ slotq console                                  # against the local runtime (make run)\n" +
			"  $ slotq console --stack slotq-prod --profile prod",
		Args: nArgs(0, 0),
	}
	cn := stackFlags(cmd, nil)
	fs := cmd.Flags()
	addr := fs.String("addr", console.DefaultAddr, "`address` to serve the console on (loopback unless --allow-remote)")
	refresh := fs.Duration("refresh", 5*time.Second, "how often an open page reads the stack again (at least 1s): each read is an admin invocation")
	remote := fs.Bool("allow-remote", false, "serve on an address other than loopback: anyone who reaches it can pause, cancel and purge")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		c := newStackCmd(cmd, cn)
		if *refresh < time.Second {
			return c.fail(usagef("--refresh must be at least 1s"))
		}
		ctx := cmd.Context()
		cl, err := cn.client(ctx)
		if err != nil {
			return c.fail(err)
		}
		name := cn.stack
		if name == "" {
			name = "local"
		}
		err = console.Run(ctx, console.FromClient(cl), *addr, console.Options{Name: name, Refresh: *refresh, AllowRemote: *remote},
			func(url string) { fmt.Fprintf(cmd.OutOrStdout(), "slotq console: %s (Ctrl-C stops it)\n", url) })
		if errors.Is(err, console.ErrRemote) {
			return c.fail(usagef("%s", strings.TrimPrefix(err.Error(), "console: ")))
		}
		if err != nil && ctx.Err() == nil {
			return c.fail(err)
		}
		return exitOK
	})
	return cmd
}
