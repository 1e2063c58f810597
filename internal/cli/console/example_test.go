package console_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/slotq/slotq/internal/cli/console"
	"github.com/slotq/slotq/pkg/client"
)

// Run the console against the local runtime (`make run`) until Ctrl-C, as
// `slotq console --endpoint-url http://127.0.0.1:3001` does: loopback
// only, the address printed once it listens.
func ExampleRun() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	c := client.NewFromConfig(cfg, client.WithEndpoint("http://127.0.0.1:3001"))
	err = console.Run(ctx, console.FromClient(c), "127.0.0.1:3002", console.Options{Name: "local"},
		func(url string) { fmt.Println("console on", url) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // console: listen on 0.0.0.0:3002: … loopback addresses only …
	}
}
