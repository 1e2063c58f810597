// Package client is the Go client other services import to use slotq: it
// enqueues jobs and runs the admin operations by invoking the stack's
// enqueue and admin functions through the Lambda Invoke API
// (aws-sdk-go-v2/service/lambda), on a deployed stack or on the local
// runtime (`slotq local`, pkg/local).
//
//	cfg, _ := config.LoadDefaultConfig(ctx)
//	c := client.New(cfg, client.WithStackOutputs(outputs)) // or set the function names
//	out, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Job: &job.Spec{Kind: "email.send"}})
//
// It is shaped like an aws-sdk-go-v2 service client: New takes an
// aws.Config and option functions, and each operation is one method that
// takes (ctx, *XInput) and returns (*XOutput, error). Requests and answers
// are the functions' own types (job.EnqueueRequest, admin.Request and
// admin.Response, engine.Accepted, engine.Stats, job.Job), so the client
// and the functions cannot disagree on the wire format.
//
// Errors come in three kinds:
//   - *Error: the function refused the request as asked (bad input naming
//     its field, a queue or job that does not exist, a target the queue does
//     not allow). Nothing was written. Match the common ones with errors.Is
//     against ErrQueueNotFound, ErrJobNotFound, ErrNotAllowed,
//     ErrQueueExists and ErrNotWaiting.
//   - *FunctionError: the function failed (a crash, a timeout, DynamoDB or
//     SQS unavailable). The request may or may not have been done; an
//     enqueue with job ids is safe to retry.
//   - any other error: the Invoke call itself failed (network, credentials,
//     a function name that does not exist), as the SDK reports it.
//
// Where it sits: cmd/slotq's commands for people call it; the functions it
// invokes are pkg/lambdafn/enqueue and pkg/lambdafn/admin.
package client
