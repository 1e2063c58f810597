// Package startlog reads a queue's recent starts back, for the admin
// function's starts operation (a console's live timeline of starts
// against their slots), without a write per job: each start is already
// one line of the worker's log (engine.Work logs "start" with the job's
// queue, ticket, job_id, slot_at, lateness_ms and attempt).
//
// ParseLine is the one reader of that line, in each form it is written
// (slog's JSON or text, lambdacontext's JSON in CloudWatch Logs): Logs
// reads with it, and so does slotq timeline --log. Its Start is api.Start.
//
// On the stack, Logs reads those lines from the worker's log group with
// CloudWatch Logs' FilterLogEvents. In the local runtime, Ring keeps the
// last starts of each queue in memory, fed by the engine's start events,
// as metrics.Tally answers stats' activity there.
//
// Where it sits: internal/lambdafn/admin (starts) → startlog → the
// worker's log lines, or engine events.
package startlog
