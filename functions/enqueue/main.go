// Command enqueue is the function other services invoke to put jobs on a
// queue: one job or a batch, answered with each job's ticket, slot and
// position. docs/deploy.md shows the request and the response.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/slotq/slotq/internal/lambdafn"
	"github.com/slotq/slotq/internal/lambdafn/enqueue"
	"github.com/slotq/slotq/internal/tracing"
)

func main() {
	cfg, awsCfg, log := lambdafn.Init(lambdafn.Enqueue)
	tr := tracing.MustFromEnv(log)
	cfg.Tracer = tr.Provider()
	// Enqueue runs no targets. Without a runner it accepts every job kind:
	// the worker's handlers are not known here.
	h := &enqueue.Handler{Engine: cfg.Engine(awsCfg, nil, log), Metrics: cfg.Recorder(log)}
	lambda.Start(tracing.Flushed(tr, h.Handle))
}
