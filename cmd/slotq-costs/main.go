// Command slotq-costs measures what one slotq job costs on AWS: it runs the
// engine on its real adapters (pkg/dynamostore, pkg/sqstransport) against
// DynamoDB Local and moto_server's SQS on loopback, counts DynamoDB request
// units, SQS requests, Lambda invocations and Lambda time per job for four
// kinds of job, turns them into dollars per million jobs with the prices in
// prices.go, and measures enqueue throughput. `make bench` runs it; docs/costs.md holds its
// output.
//
// Usage:
//
//	go run ./cmd/slotq-costs [-template template.yaml] [-runs 3]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/slotq/slotq/internal/dynamolocal"
	"github.com/slotq/slotq/internal/motoserver"
)

func main() {
	tmpl := flag.String("template", "template.yaml", "SAM template to read the functions' MemorySize from")
	runs := flag.Int("runs", 3, "runs of each throughput measurement (the median is shown)")
	flag.BoolVar(&verbose, "v", false, "print each scenario's DynamoDB calls by function and operation")
	flag.Parse()
	if err := run(os.Stdout, *tmpl, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "slotq-costs:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, tmpl string, runs int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	db, err := dynamolocal.Start(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	srv, err := motoserver.Start()
	if err != nil {
		return err
	}
	defer srv.Close()
	for _, env := range []map[string]string{db.Env(), srv.Env()} {
		for k, v := range env {
			os.Setenv(k, v)
		}
	}

	mem := memorySizes(tmpl)
	stackSkew = templateSkew(tmpl)
	b, err := newBench(ctx)
	if err != nil {
		return err
	}
	fixed, err := b.fixedResume(ctx)
	if err != nil {
		return fmt.Errorf("fixed resume cost: %w", err)
	}
	var results []result
	for _, sc := range scenarios {
		fmt.Fprintf(os.Stderr, "scenario %s …\n", sc.name)
		r, err := b.measure(ctx, sc)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sc.name, err)
		}
		results = append(results, r)
	}
	fmt.Fprintf(os.Stderr, "throughput …\n")
	tp, err := b.throughput(ctx, runs)
	if err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	report(w, mem, results, fixed, tp)
	return nil
}
