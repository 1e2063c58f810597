// Package worker is the entry point of a worker function of your own: your
// main registers Go handlers by job kind on a target.Mux and calls Start,
// which reads the environment the stack's worker function reads, builds
// the DynamoDB, SQS and Lambda clients once and starts the Lambda handler
// (SQS batches in, partial batch responses out):
//
//	func main() {
//		mux := target.NewMux()
//		mux.HandleFunc("email.send", sendEmail)
//		worker.Start(mux)
//	}
//
// Deploy that main as the stack's WorkerFunction, in place of slotq's
// functions/worker (examples/acme is such a project, with its own SAM
// template). The same mux runs under the local runtime with one call,
// local.Run(ctx, local.Options{Mux: mux}).
//
// Where it sits: slotq's own functions/worker is a user of Start, with the
// built-in kinds only. The handler itself is internal/lambdafn/worker's; the
// environment it reads is lambdafn.Worker's (SLOTQ_TABLE, SLOTQ_QUEUE_URL,
// SLOTQ_WORKER_TIMEOUT), as template.yaml sets it.
package worker
