// Package engine holds slotq's use cases: enqueue, work, resume and the
// admin operations. It is plain Go over two small interfaces it declares,
// State (internal/memstore, internal/dynamostore) and Transport (internal/memstore,
// internal/sqstransport), plus a Runner that runs a job's target (internal/dispatch).
// Time comes from Options.Now, so tests can run an hour of slots in a
// testing/synctest bubble.
//
// The flow of one job:
//
//	Enqueue ─ Take tickets+slots ─ CreateJobs ─ Send (delay) or park
//	Work    ─ a delivery's steps (work.go): read the record ─ wait for the
//	          gate and pass it (reserving the start) ─ claim ─ sleep to
//	          the start ─ run ─ record the outcome, or retry or dead-letter
//	Resume  ─ ListDue (the due index: what is due by now, any queue) ─
//	          per queue with something due, under its lease: lift a timed
//	          pause ─ re-ticket held jobs in line order (a bounded round
//	          per run) ─ release due jobs ─ hand on keys past their lease;
//	          per schedule due (schedules.go): enqueue its occurrences up
//	          to a lead ahead ─ advance it by compare-and-set
//
// Every function in functions/ (through internal/lambdafn) and the local
// runtime is a thin shell around one of these methods.
//
// With Options.Tracer, each of these makes OpenTelemetry spans (trace.go):
// an enqueue call, each attempt from the gate to its outcome, the
// target's call, a resume run and its release rounds; a job's W3C trace
// context rides in its record (job.Job.TraceParent) from its producer to
// its target either way.
//
// Where it sits: in the middle of slotq's runtime, the packages at the
// top of internal/ that the functions link. It imports internal/slot (the
// gate's arithmetic, pure), internal/job, internal/attempt, internal/clock,
// internal/schedule (a schedule's occurrences, pure) and internal/input,
// and no AWS package; the stores and transports
// (internal/memstore, internal/dynamostore, internal/sqstransport) import
// it for its interfaces. Nothing under internal/dev (emulators, SAM
// tooling, cost meters, test rigs) or internal/cli (console, timeline) is
// imported by it. docs/algorithm.md explains the rules, with a glossary.
package engine
