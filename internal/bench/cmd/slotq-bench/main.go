// Command slotq-bench runs the measurements that need DynamoDB Local and
// moto_server, which it starts on loopback (internal/bench/benchcmd):
//
//	go run ./internal/bench/cmd/slotq-bench costs --scenarios a,e   # what `slotq costs` runs
//	go run ./internal/bench/cmd/slotq-bench ceiling -rates 50,100 -batches 1,10
//
// `make bench` runs both and writes their tables into docs/costs.md and
// docs/performance.md. It lives apart from the slotq command so that the
// binary operators install links no emulator launcher.
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
	code := benchcmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
