// Command resume is the function the EventBridge schedule invokes once a
// minute: it lifts pauses whose time has come, re-tickets parked jobs in
// their old order, releases due ones to the slot queue, and recovers lost
// messages and attempts.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/slotq/slotq/internal/lambdafn"
	"github.com/slotq/slotq/internal/lambdafn/resume"
	"github.com/slotq/slotq/internal/tracing"
)

func main() {
	cfg, awsCfg, log := lambdafn.Init(lambdafn.Resume)
	tr := tracing.MustFromEnv(log)
	cfg.Tracer = tr.Provider()
	rec := cfg.Recorder(log)
	cfg.Observer = rec
	h := &resume.Handler{Engine: cfg.Engine(awsCfg, nil, log), Log: log, Metrics: rec}
	lambda.Start(tracing.Flushed(tr, h.Handle))
}
