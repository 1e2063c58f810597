// Command worker is the function the slot queue's SQS event source
// invokes: it starts each delivered job at its slot, through the gate, and
// runs its target (an HTTP endpoint, another Lambda function, or a Go
// handler registered in pkg/lambdafn/worker/kinds.go: the built-in
// echo, and your own).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"
	lambdasvc "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/pkg/lambdafn"
	"github.com/slotq/slotq/pkg/lambdafn/worker"
	"github.com/slotq/slotq/pkg/target"
)

func main() {
	cfg, awsCfg, log := lambdafn.Init(lambdafn.Worker)
	runner := &target.Dispatcher{
		Mux:    worker.Kinds(log),
		Lambda: &target.Lambda{API: lambdasvc.NewFromConfig(awsCfg)},
	}
	h := &worker.Handler{Engine: cfg.Engine(awsCfg, runner, log), Log: log}
	lambda.Start(h.Handle)
}
