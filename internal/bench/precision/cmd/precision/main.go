// Command precision prints the precision model's tables (internal/bench/precision).
// The lead's (-table lead, the default): per place the worker runs and per
// lead, the share of starts given up and the mean wait of a worker for its
// slot. The batching window's (-table window): per rate of one queue and
// per window of the event source, sent a lead or a lead and the window
// ahead, the starts missed, their lateness, the jobs per invocation and
// what the worker costs. `make bench` writes each into docs/performance.md
// (tables precision and batching-window) through internal/bench/benchdoc:
//
//	go run ./internal/bench/precision/cmd/precision | go run ./internal/bench/benchdoc/cmd/benchdoc -doc docs/performance.md -table precision -format markdown -prefix '' -command 'go run ./internal/bench/precision/cmd/precision'
//
// The runs are seeded: the table is the same on every host.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/slotq/slotq/internal/bench/precision"
)

func main() {
	jobs := flag.Int("jobs", 200000, "jobs each cell runs")
	skew := flag.Duration("skew", 10*time.Millisecond, "the queue's skew (the stack's DefaultSkew)")
	table := flag.String("table", "lead", "which table: lead (per place the worker runs and lead) or window (per rate and batching window, at the stack's lead)")
	flag.Parse()
	if *jobs < 1 || *skew <= 0 {
		fmt.Fprintln(os.Stderr, "precision: -jobs must be at least 1 and -skew more than 0")
		os.Exit(2)
	}
	switch *table {
	case "lead":
		fmt.Print(precision.Table(*jobs, *skew))
	case "window":
		fmt.Print(precision.WindowTable(*jobs, *skew))
	default:
		fmt.Fprintf(os.Stderr, "precision: -table %q: want lead or window\n", *table)
		os.Exit(2)
	}
}
