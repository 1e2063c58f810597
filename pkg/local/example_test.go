package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/local"
	"github.com/slotq/slotq/pkg/target"
)

// Run the stack in this process with a handler of your own, and enqueue
// a job through the Lambda Invoke API with the AWS SDK, as another
// service would; the emulated event source feeds it to the worker.
func ExampleRun() {
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan string, 1)
	mux := target.NewMux()
	mux.HandleFunc("greet", func(ctx context.Context, j *api.Job) error {
		ran <- string(j.Payload)
		return nil
	})
	ready := make(chan local.Endpoints, 1)
	done := make(chan error, 1)
	go func() {
		done <- local.Run(ctx, local.Options{
			Addr: "127.0.0.1:0", Mux: mux, Out: io.Discard,
			Ready: func(e local.Endpoints) { ready <- e },
		})
	}()
	ends := <-ready

	fn := lambda.New(lambda.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(ends.InvokeURL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	out, err := fn.Invoke(ctx, &lambda.InvokeInput{
		FunctionName: aws.String(local.EnqueueFunction),
		Payload:      []byte(`{"queue":"greetings","job":{"id":"hello-1","kind":"greet","payload":{"name":"Ada"}}}`),
	})
	if err != nil {
		panic(err)
	}
	var res struct {
		Jobs []struct {
			JobID  string `json:"job_id"`
			Ticket int64  `json:"ticket"`
			Status string `json:"status"`
		} `json:"jobs"`
	}
	_ = json.Unmarshal(out.Payload, &res)
	fmt.Println(res.Jobs[0].JobID, res.Jobs[0].Ticket, res.Jobs[0].Status)
	select {
	case p := <-ran:
		fmt.Println("greet ran with", p)
	case <-time.After(10 * time.Second):
		fmt.Println("greet did not run")
	}
	stop()
	fmt.Println(<-done)
	// Output:
	// hello-1 1 queued
	// greet ran with {"name":"Ada"}
	// <nil>
}
