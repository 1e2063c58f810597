// Command precision prints the precision model's table (internal/bench/precision):
// per place the worker runs and per lead, the share of starts given up
// and the mean wait of a worker for its slot. `make bench` writes it into
// docs/performance.md (table precision) through internal/bench/benchdoc:
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
	flag.Parse()
	if *jobs < 1 || *skew <= 0 {
		fmt.Fprintln(os.Stderr, "precision: -jobs must be at least 1 and -skew more than 0")
		os.Exit(2)
	}
	fmt.Print(precision.Table(*jobs, *skew))
}
