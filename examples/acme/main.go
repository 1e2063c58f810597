// Command acme is a worker of one's own for slotq: two Go handlers
// (handlers.go) on a target.Mux, started as the stack's WorkerFunction on
// Lambda, or with the whole stack in this process for a local try:
//
//	go run . local     # the Invoke API on 127.0.0.1:3001, as `make run` in slotq
//
// Locally, without ACME_PARTNER_URL, partner.notify posts to a stand-in
// partner on loopback that prints what it gets.
//
// The stack deploys it beside slotq's own enqueue, resume and admin
// functions: `make template.yaml` writes the stack from stack.yaml and the
// slotq version go.mod requires. README.md goes from nothing to a
// deployed stack.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/slotq/slotq/pkg/local"
	"github.com/slotq/slotq/pkg/worker"
)

// EnvPartnerURL names the partner API's endpoint. The stack sets it from
// the PartnerUrl parameter (stack.yaml).
const EnvPartnerURL = "ACME_PARTNER_URL"

func main() {
	partner := os.Getenv(EnvPartnerURL)
	if len(os.Args) > 1 && os.Args[1] == "local" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if partner == "" {
			// No partner to call from a laptop: a stand-in on loopback
			// that prints what it gets.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
				fmt.Printf("partner (stand-in): %s %s\n", r.Header.Get("Idempotency-Key"), body)
			})}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			partner = "http://" + ln.Addr().String()
			fmt.Printf("acme: %s unset; partner.notify posts to a stand-in at %s\n", EnvPartnerURL, partner)
		}
		// Where to serve: the Invoke API and the console (`make run
		// ARGS='--addr … --console …'`; a test picks free ports).
		fs := flag.NewFlagSet("acme local", flag.ExitOnError)
		addr := fs.String("addr", local.DefaultAddr, "the Invoke API's address")
		console := fs.String("console", local.DefaultConsoleAddr, "the web console's address (empty: none)")
		_ = fs.Parse(os.Args[2:])
		o := local.Options{Mux: Handlers(partner, &http.Client{Timeout: 30 * time.Second}), Addr: *addr, Console: *console}
		// The stack's settings (event source, schedule, timeouts) from
		// the template `make template.yaml` writes, if it is there.
		if st, err := local.FromTemplate("template.yaml"); err == nil {
			o.Stack = st
		}
		if err := local.Run(ctx, o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	worker.Start(Handlers(partner, &http.Client{Timeout: 30 * time.Second}))
}
