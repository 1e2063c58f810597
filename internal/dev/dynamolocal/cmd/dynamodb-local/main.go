// Command dynamodb-local fetches DynamoDB Local into slotq's cache folder
// and runs it on loopback until interrupted, printing the environment that
// points the AWS SDK and CLI at it (see internal/dev/dynamolocal).
//
//	go run ./internal/dev/dynamolocal/cmd/dynamodb-local -port 8000   # run it (make dynamodb-local)
//	go run ./internal/dev/dynamolocal/cmd/dynamodb-local -fetch       # only fetch it; print its folder
//
// CI fetches it once with -fetch before `make test`, so that test binaries
// starting at once do not each fetch it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/slotq/slotq/internal/dev/dynamolocal"
)

func main() {
	fetch := flag.Bool("fetch", false, "only make sure DynamoDB Local is in the cache folder, and print the folder")
	port := flag.Int("port", 0, "loopback port to serve on (0: a free one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *fetch, *port); err != nil {
		fmt.Fprintln(os.Stderr, "dynamodb-local:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, fetch bool, port int) error {
	if fetch {
		dir, err := dynamolocal.Install(ctx)
		if err != nil {
			return err
		}
		fmt.Println(dir)
		return nil
	}
	s, err := dynamolocal.StartOn(ctx, port)
	if err != nil {
		return err
	}
	defer s.Close()
	env := s.Env()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if env[k] != "" {
			fmt.Printf("export %s=%s\n", k, env[k])
		}
	}
	fmt.Fprintln(os.Stderr, "dynamodb-local: running; Ctrl-C stops it")
	<-ctx.Done()
	return nil
}
