// Command emulators starts DynamoDB Local (internal/dev/dynamolocal; Java
// 17, the first run fetches it with npm) and moto_server for SQS
// (internal/dev/motoserver) on loopback, prints the environment that
// points the AWS SDK at them as `export NAME=value` lines and then a line
// `ready`, and runs until interrupted:
//
//	go run ./internal/dev/emulator/cmd/emulators -dynamodb -sqs
//
// `slotq sam` (internal/local/samrun) runs it for the services the
// environment gives no endpoint for, so that the slotq command links no
// emulator launcher.
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
	"github.com/slotq/slotq/internal/dev/motoserver"
)

func main() {
	dynamodb := flag.Bool("dynamodb", false, "start DynamoDB Local")
	sqs := flag.Bool("sqs", false, "start moto_server for SQS")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dynamodb, *sqs); err != nil {
		fmt.Fprintln(os.Stderr, "emulators:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dynamodb, sqs bool) error {
	env := map[string]string{}
	if dynamodb {
		db, err := dynamolocal.Start(ctx)
		if err != nil {
			return fmt.Errorf("DynamoDB Local did not start: %w", err)
		}
		defer db.Close()
		for k, v := range db.Env() {
			env[k] = v
		}
	}
	if sqs {
		moto, err := motoserver.Start()
		if err != nil {
			return fmt.Errorf("moto_server did not start: %w", err)
		}
		defer moto.Close()
		for k, v := range moto.Env() {
			env[k] = v
		}
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("export %s=%s\n", k, env[k])
	}
	fmt.Println("ready")
	<-ctx.Done()
	return nil
}
