// Package local is slotq's local runtime: the whole stack in one process,
// as `make run` (slotq local) starts it, or as a program of yours starts
// it with its own job handlers:
//
//	mux := target.NewMux()
//	mux.HandleFunc("email.send", sendEmail)
//	err := local.Run(ctx, local.Options{Mux: mux})
//
// It runs the four functions' handlers (internal/lambdafn/enqueue, worker,
// resume, admin: the code Lambda runs, nothing re-implemented) on the
// embedded backend (internal/memstore), or on DynamoDB and SQS when
// Options.AWS is set (endpoints from AWS_ENDPOINT_URL_DYNAMODB and
// AWS_ENDPOINT_URL_SQS: DynamoDB Local and moto, or AWS). It serves the
// Lambda Invoke API on loopback under the template's logical ids
// (EnqueueFunction, WorkerFunction, ResumeFunction, AdminFunction), so
// services and the AWS CLI call it as they would `sam local
// start-lambda`, and it plays what AWS plays after deployment
// (internal/local/esm): the SQS event source mapping that feeds the slot queue
// to the worker, and the schedule that invokes the resume function.
//
// What a person sees: the endpoints and commands to try on start, a line
// per start, failure, retry, park, hand-off of a key or running place and
// release, a resume run's figures (waiting, parked, lag; for a queue with
// keys or max_running, attempts running and keys held and waited for)
// while jobs wait, and a summary per queue when Run returns (Options.Out;
// JSON lines with Options.JSON). The figures and
// the summary are read from the functions' EMF lines (internal/metrics): they
// are the metrics the stack publishes (docs/operations.md).
//
// Where it sits: cmd/slotq's `local` command calls Run; the defaults
// (StackDefaults) are template.yaml's, and a test keeps them equal.
package local
