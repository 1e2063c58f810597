// Package costopt holds what `slotq costs` and `slotq-bench costs` take:
// the options of internal/bench/costs's Run, their flags and its time
// bound. It is a leaf: the slotq command registers the flags of `slotq
// costs` with it, and runs slotq-bench for the measurement, so that it
// links neither the measurement (internal/bench/costs, internal/bench/awssim,
// internal/dev/awsmeter) nor the emulators' launchers.
package costopt

import (
	"io"
	"time"

	"github.com/spf13/pflag"
)

// Options are what costs.Run measures and where it reports progress.
type Options struct {
	// Template is the SAM template to read the functions' MemorySize and
	// the stack's DefaultSkew from. Default "template.yaml".
	Template string
	// Runs is how many runs of each throughput measurement to make (the
	// median is shown). Default 3.
	Runs int
	// Progress gets a line per scenario as it starts. Default: nothing.
	Progress io.Writer
	// Calls, if set, gets each scenario's DynamoDB calls by function and
	// operation. Default: nothing.
	Calls io.Writer
	// Scenarios, if set, are the names of the scenarios to measure (such
	// as "a", "k"); the others are left out of the report. Default: all.
	Scenarios []string
}

// AddFlags registers the flags of `slotq costs` and `slotq-bench costs`
// on fs: o's fields, and -v, which sends each scenario's DynamoDB calls
// to Calls.
func (o *Options) AddFlags(fs *pflag.FlagSet) (verbose *bool) {
	fs.StringVar(&o.Template, "template", "template.yaml", "SAM template to read the functions' MemorySize and the stack's DefaultSkew from")
	fs.IntVar(&o.Runs, "runs", 3, "runs of each throughput measurement (the median is shown)")
	fs.StringSliceVar(&o.Scenarios, "scenarios", nil, "measure only these scenarios (such as a,k; default: all)")
	return fs.BoolP("verbose", "v", false, "print each scenario's DynamoDB calls by function and operation to stderr")
}

// Timeout bounds a whole costs.Run.
const Timeout = 10 * time.Minute
