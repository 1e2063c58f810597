package lambdafn_test

import (
	"fmt"

	"github.com/slotq/slotq/internal/lambdafn"
)

// Load reads and checks a function's variables; its error names the bad
// one. A function's main passes os.Getenv (lambdafn.Init does).
func ExampleLoad() {
	env := map[string]string{
		lambdafn.EnvTable:           "slotq-Table",
		lambdafn.EnvQueueURL:        "https://sqs.us-east-1.amazonaws.com/123456789012/slotq-SlotQueue",
		lambdafn.EnvWorkerTimeout:   "120",
		lambdafn.EnvDefaultInterval: "2s",
		lambdafn.EnvAllowedTargets:  "https://hooks.example.com/*, lambda:send-*",
	}
	cfg, err := lambdafn.Load(lambdafn.Enqueue, func(k string) string { return env[k] })
	fmt.Println(cfg.Table, cfg.WorkerTimeout, cfg.Defaults.Interval, cfg.Defaults.Targets, err)

	env[lambdafn.EnvWorkerTimeout] = "2m"
	_, err = lambdafn.Load(lambdafn.Worker, func(k string) string { return env[k] })
	fmt.Println(err)
	// Output:
	// slotq-Table 2m0s 2s [https://hooks.example.com/* lambda:send-*] <nil>
	// SLOTQ_WORKER_TIMEOUT must be the worker function's timeout in whole seconds, between 37 and 900, got "2m"
}
