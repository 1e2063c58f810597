// Command worker is the function the slot queue's SQS event source
// invokes: it starts each delivered job at its slot, through the gate, and
// runs its target (an HTTP endpoint, another Lambda function, or a Go
// handler by job kind: here the built-in kinds only, echo, sleep and fail).
//
// A worker with Go handlers of your own is a main like this one that
// registers them on the mux first (pkg/worker; examples/acme).
package main

import (
	"github.com/slotq/slotq/pkg/target"
	"github.com/slotq/slotq/pkg/worker"
)

func main() {
	worker.Start(target.NewMux()) // the built-in kinds (echo, sleep, fail) only
}
