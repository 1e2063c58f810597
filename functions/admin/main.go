// Command admin is the function operators (and the CLI) invoke to manage
// queues and jobs: create, configure, pause [until], resume, purge,
// delete, stats, starts; get, cancel, list and retry jobs; redrive the
// dead-letter queue.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/slotq/slotq/internal/lambdafn"
	"github.com/slotq/slotq/internal/lambdafn/admin"
)

func main() {
	cfg, awsCfg, log := lambdafn.Init(lambdafn.Admin)
	h := &admin.Handler{Engine: cfg.Engine(awsCfg, nil, log), Defaults: cfg.Defaults, Activity: cfg.Activity(awsCfg),
		DeadLetters: cfg.DeadLetters(awsCfg), Starts: cfg.Starts(awsCfg)}
	lambda.Start(h.Handle)
}
