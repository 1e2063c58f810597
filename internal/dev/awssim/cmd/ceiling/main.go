// Command ceiling is `slotq-bench ceiling` (internal/bench/benchcmd) under
// the path scripts have run it by:
//
//	go run ./internal/dev/awssim/cmd/ceiling -rates 50,100,200 -batches 1,10
//
// is `go run ./internal/bench/cmd/slotq-bench ceiling -rates 50,100,200 -batches 1,10`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/slotq/slotq/internal/bench/benchcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := benchcmd.Main(ctx, append([]string{"ceiling"}, os.Args[1:]...), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
