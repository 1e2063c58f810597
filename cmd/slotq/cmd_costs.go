package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/slotq/slotq/internal/dev/benchdoc"
	"github.com/slotq/slotq/internal/dev/costs"
)

// newCostsCmd measures what a job costs on AWS (internal/dev/costs) and
// prints the report docs/costs.md holds.
func newCostsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "costs",
		Short: "Measure what a job costs on AWS, on DynamoDB Local and moto (make bench's last step)",
		Long: "Measures what one job costs on AWS: runs the engine on its real adapters against DynamoDB\n" +
			"Local (Java 17) and moto_server on loopback, counts DynamoDB request units, SQS requests,\n" +
			"Lambda invocations and Lambda time per job for each scenario, prices them per million jobs\n" +
			"(us-east-1 on-demand list prices) and measures enqueue throughput. Prints Markdown tables\n" +
			"(docs/costs.md); progress goes to stderr. Takes a few minutes (at most " + human(costs.Timeout) + ").",
		Args: nArgs(0, 0),
	}
	var o costs.Options
	cmd.Flags().StringVar(&o.Template, "template", "template.yaml", "SAM template to read the functions' MemorySize and the stack's DefaultSkew from")
	cmd.Flags().IntVar(&o.Runs, "runs", 3, "runs of each throughput measurement (the median is shown)")
	cmd.Flags().StringSliceVar(&o.Scenarios, "scenarios", nil, "measure only these scenarios (such as a,k; default: all)")
	verbose := cmd.Flags().BoolP("verbose", "v", false, "print each scenario's DynamoDB calls by function and operation to stderr")
	doc := docFlags(cmd.Flags())
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) int {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		o.Progress = stderr
		out := doc.with(cmd)
		if code, ok := out.checkRuns("costs", o.Runs, stderr); !ok {
			return code
		}
		var report bytes.Buffer
		w := io.Writer(stdout)
		if out.Doc != "" {
			w = &report // printed below, as the doc holds it
		}
		if *verbose {
			o.Calls = stderr
		}
		if err := costs.Run(cmd.Context(), w, o); err != nil {
			fmt.Fprintf(stderr, "slotq costs: %v\n", err)
			return exitFail
		}
		return out.finish("costs", stdout, stderr, benchdoc.Table{Command: out.Command, Body: report.String()}, exitOK)
	})
	return cmd
}
