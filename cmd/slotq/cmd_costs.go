package main

import (
	"context"
	"fmt"
	"io"

	"github.com/slotq/slotq/internal/costs"
)

// costsCmd measures what a job costs on AWS (internal/costs) and prints
// the report docs/costs.md holds.
func costsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCmdLine("costs", "", "Measures what one job costs on AWS: runs the engine on its real adapters against DynamoDB\n"+
		"Local (Java 17) and moto_server on loopback, counts DynamoDB request units, SQS requests,\n"+
		"Lambda invocations and Lambda time per job for each scenario, prices them per million jobs\n"+
		"(us-east-1 on-demand list prices) and measures enqueue throughput. Prints Markdown tables\n"+
		"(docs/costs.md); progress goes to stderr. Takes a few minutes (at most "+costs.Timeout.String()+").", stdout, stderr)
	o := costs.Options{Progress: stderr}
	c.fs.StringVar(&o.Template, "template", "template.yaml", "SAM template to read the functions' MemorySize and the stack's DefaultSkew from")
	c.fs.IntVar(&o.Runs, "runs", 3, "runs of each throughput measurement (the median is shown)")
	verbose := c.fs.Bool("v", false, "print each scenario's DynamoDB calls by function and operation to stderr")
	if _, code := c.parse(args, 0, 0); code >= 0 {
		return code
	}
	if o.Runs < 1 {
		fmt.Fprintf(stderr, "slotq costs: --runs must be at least 1\n")
		return exitUsage
	}
	if *verbose {
		o.Calls = stderr
	}
	if err := costs.Run(ctx, stdout, o); err != nil {
		fmt.Fprintf(stderr, "slotq costs: %v\n", err)
		return exitFail
	}
	return exitOK
}
