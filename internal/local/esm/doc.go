// Package esm plays, in one process, the two parts AWS plays for slotq's
// stack after deployment and `sam local start-lambda` does not: the SQS
// event source mapping that feeds the slot queue to the worker function
// (Mapping), and the EventBridge Scheduler schedule that invokes the
// resume function (Schedule). The local runtime (pkg/local, `make run`)
// puts them in front of the handlers it runs in process, and
// internal/local/samrun (`slotq sam start-lambda`, `make start-lambda`) in front of the real bootstraps.
//
// # The SQS event source mapping, as Lambda runs it
//
//   - Pollers long-poll the queue and invoke the function synchronously
//     with an events.SQSEvent of up to BatchSize messages; with a
//     MaximumBatchingWindowInSeconds above 0 a poller keeps receiving
//     until the batch is full or the window has passed. Several batches
//     are in flight at once, as Lambda scales its pollers and
//     invocations (Config.Concurrency caps them here).
//   - Receiving makes a message invisible for the queue's visibility
//     timeout and counts the receive (ApproximateReceiveCount).
//   - If the invocation succeeds, the mapping deletes the batch's
//     messages; with ReportBatchItemFailures it deletes all but those the
//     response lists in batchItemFailures. A response that names an empty
//     or unknown itemIdentifier, or a function error, fails the whole
//     batch: nothing is deleted.
//   - The mapping never changes a failed message's visibility: it comes
//     back when its visibility timeout ends. A message received more
//     often than the redrive policy's maxReceiveCount is moved to the
//     dead-letter queue by the queue itself (SQS does it on receive; the
//     embedded queue, memstore's pull side, does the same).
//
// # The schedule, as EventBridge Scheduler runs it
//
// A rate(N unit) schedule invokes its target every N units with the
// schedule's fixed Input, and retries a failed invocation up to
// MaximumRetryAttempts times with backoff. Here the first invocation comes
// at once rather than one period in, so a timed pause that ended while
// nothing ran is lifted on start.
//
// # The queue
//
// The mapping polls a Queue: an SQS queue through the SDK (NewSQS) or the
// embedded transport's pull side (NewMemory). Both deliver the
// events.SQSMessage values Lambda would.
//
// The package is internal: it is a tool of slotq's own local runtime and
// binaries, not a promise to users; pkg/local exposes the few settings a
// user's program needs (batch size, concurrency, the resume period).
package esm
