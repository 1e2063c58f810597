// Package target is what a team writes its Go handlers with: a Mux maps
// job kinds to handlers, each given the job's record (api.Job) and a
// context bounded by its queue's target_timeout. A handler's error fails
// the attempt, which is retried with backoff (each retry a new ticket, so
// retries keep the queue's rate); SkipRetry ends the job now; RetryAfter
// slows the job's queue (or key) down for a while, not a failure, and
// runs the job again first after it; SetResult
// (or a ResultFunc) keeps a result on the job's record for its producer.
// A BatchHandler (HandleBatch, batch.go) takes the jobs of its kind that
// start together in one call and answers per job, SetBatchResult keeping
// each job's result.
//
// pkg/worker runs a Mux as the stack's worker function on Lambda, and
// pkg/local runs it with the whole stack in one process.
package target
