// Command echo is a bootstrap for the host's tests: it answers its event,
// or fails, sleeps, exits, uses memory or reports its environment as the
// event asks.
package main

import (
	"context"
	"errors"
	"os"
	"runtime"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Say     string `json:"say"`
	Fail    string `json:"fail"`
	SleepMS int    `json:"sleep_ms"`
	Exit    bool   `json:"exit"`
	Env     string `json:"env"`
	AllocMB int    `json:"alloc_mb"`
}

type answer struct {
	Say        string `json:"say"`
	Env        string `json:"env,omitempty"`
	RequestID  string `json:"request_id"`
	ARN        string `json:"arn"`
	DeadlineIn int64  `json:"deadline_in_ms"`
}

func main() {
	if os.Getenv("ECHO_INIT_FAIL") != "" {
		os.Stderr.WriteString("ECHO_INIT_FAIL is set\n")
		os.Exit(3)
	}
	lambda.Start(func(ctx context.Context, e event) (answer, error) {
		if e.Exit {
			os.Exit(2)
		}
		if e.Fail != "" {
			return answer{}, errors.New(e.Fail)
		}
		mem := make([]byte, e.AllocMB<<20)
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1 // resident, not just reserved
		}
		time.Sleep(time.Duration(e.SleepMS) * time.Millisecond)
		runtime.KeepAlive(mem)
		lc, _ := lambdacontext.FromContext(ctx)
		dl, _ := ctx.Deadline()
		return answer{Say: e.Say, Env: os.Getenv(e.Env), RequestID: lc.AwsRequestID, ARN: lc.InvokedFunctionArn,
			DeadlineIn: time.Until(dl).Milliseconds()}, nil
	})
}
