package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/cli/clikit"
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
			"needs no permission its operator does not have. It serves loopback only; --allow-remote serves\n" +
			"the host names given with --allow-host, behind a login: basic authentication with\n" +
			"SLOTQ_CONSOLE_AUTH=user:password from the environment (over HTTPS: a TLS proxy in front), or\n" +
			"--auth-proxy when a proxy in front authenticates its users. `slotq local` (make run) serves it too.",
		Example: "  $ slotq console                                  # against the local runtime (make run)\n" +
			"  $ slotq console --stack slotq-prod --profile prod\n" +
			"  $ SLOTQ_CONSOLE_AUTH=ops:$(cat secret) slotq console --stack slotq-prod \\\n" +
			"      --addr 0.0.0.0:3002 --allow-remote --allow-host console.internal.example.com",
		Args: nArgs(0, 0),
	}
	cn := stackFlags(cmd, nil)
	fs := cmd.Flags()
	addr := fs.String("addr", console.DefaultAddr, "`address` to serve the console on (loopback unless --allow-remote)")
	refresh := fs.Duration("refresh", 5*time.Second, "how often an open page reads the stack again (at least 1s): each read is an admin invocation")
	remote := fs.Bool("allow-remote", false, "serve on an address other than loopback (needs --allow-host, and SLOTQ_CONSOLE_AUTH or --auth-proxy)")
	hosts := fs.StringSlice("allow-host", nil, "a host `name` the console serves besides loopback ones (repeat, or comma-separate)")
	proxy := fs.Bool("auth-proxy", false, "a proxy in front authenticates the console's users: no login of its own")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		c := newStackCmd(cmd, cn)
		if *refresh < time.Second {
			return c.Fail(clikit.Usagef("--refresh must be at least 1s"))
		}
		ctx := cmd.Context()
		cl, err := cn.Client(ctx)
		if err != nil {
			return c.Fail(err)
		}
		name := cn.Stack
		if name == "" {
			name = "local"
		}
		o := console.Options{Name: name, Refresh: *refresh, AllowRemote: *remote, AllowHosts: *hosts,
			Auth: os.Getenv("SLOTQ_CONSOLE_AUTH"), AuthProxy: *proxy}
		err = console.Run(ctx, console.FromClient(cl), *addr, o,
			func(url string) { fmt.Fprintf(cmd.OutOrStdout(), "slotq console: %s (Ctrl-C stops it)\n", url) })
		if errors.Is(err, console.ErrRemote) {
			return c.Fail(clikit.Usagef("%s: give --allow-remote (with --allow-host, and SLOTQ_CONSOLE_AUTH or --auth-proxy) to serve it",
				strings.TrimPrefix(err.Error(), "console: ")))
		}
		if errors.Is(err, console.ErrRemoteUnguarded) {
			return c.Fail(clikit.Usagef("%s", strings.TrimPrefix(err.Error(), "console: ")))
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			// make run (slotq local) serves its own console on the
			// same address: this one needs another.
			return c.Fail(fmt.Errorf("%w\nAnother program holds %s: slotq local (make run) serves its own console there, "+
				"at http://%s; to run this one beside it, give --addr another address (such as --addr 127.0.0.1:3003)", err, *addr, *addr))
		}
		if err != nil && ctx.Err() == nil {
			return c.Fail(err)
		}
		return clikit.ExitOK
	})
	return cmd
}
