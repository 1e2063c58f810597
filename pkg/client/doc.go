// Package client is the Go client other services import to use slotq: it
// enqueues jobs and runs the admin operations by invoking the stack's
// enqueue and admin functions through the Lambda Invoke API
// (aws-sdk-go-v2/service/lambda), on a deployed stack or on the local
// runtime (`slotq local`, pkg/local).
//
//	cfg, _ := config.LoadDefaultConfig(ctx)
//	c := client.NewFromConfig(cfg, client.WithStackOutputs(outputs)) // or set the function names
//	out, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "emails", Job: &api.Spec{Kind: "email.send"}})
//
// It is shaped like an aws-sdk-go-v2 service client: NewFromConfig takes
// an aws.Config and option functions (New takes Options whole), each
// operation is one method that takes (ctx, *XInput, ...func(*Options))
// and returns (*XOutput, error), and lists that page have paginators
// (NewListJobsPaginator, NewRetryFailedPaginator). Requests and answers
// are slotq's wire types (pkg/api): the client imports them and the SDK's
// Lambda client, nothing of the server.
//
// Errors come in three kinds:
//   - *Error (a smithy.APIError, fault client): the function refused the request as asked (bad input naming
//     its field, a queue or job that does not exist, a target the queue does
//     not allow). Nothing was written. Match the common ones with errors.Is
//     against ErrQueueNotFound, ErrJobNotFound, ErrNotAllowed,
//     ErrQueueExists and ErrNotWaiting.
//   - *FunctionError (a smithy.APIError, fault server): the function failed (a crash, a timeout, DynamoDB or
//     SQS unavailable). The request may or may not have been done; an
//     enqueue with job ids is safe to retry.
//   - any other error: the Invoke call itself failed (network, credentials,
//     a function name that does not exist), as the SDK reports it.
//
// Where it sits: cmd/slotq's commands and console call it; it invokes the
// stack's enqueue and admin functions.
package client
