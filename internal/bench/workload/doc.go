// Package workload runs the workloads of `slotq demo` and `slotq bench`
// on the embedded backend, in this process, and prints what they show:
// producers enqueue through the engine while workers take the
// transport's deliveries, as that many Lambda invocations would, and each
// start is judged against the queue's limits at the gate and as the
// handler began.
//
// Its parts, a file each:
//
//   - backend.go: what every workload runs on: an engine over a memstore
//     and its transport, its queue, the workers and the resume function.
//   - demo.go: the demo workload (Config): producers, keys, a limit in
//     each form, hiccups of the store, and the model of DynamoDB
//     (--store dynamodb-model) with what its calls would cost.
//   - report.go: Demo, the run `slotq demo` shows: a line a start as it
//     happens (or a JSON record), its summary and its verdict.
//   - bench.go: Bench, the demo workload run after run (`slotq bench`),
//     its table, medians and the figures written into docs/ (benchdoc).
//   - lanes.go: keyed jobs that run for a while, and max_running
//     (`slotq bench lanes`).
//   - fair.go: a flood of one key, late keys and urgent jobs on a queue
//     with a waiting room (`slotq bench fair`).
//
// cmd/slotq holds the commands and their flags, and fills the configs
// from them (DefaultDemo, DefaultBench, DefaultLanes, DefaultFair are
// their defaults). It is internal: slotq's own measurements, not a
// promise to users.
package workload
