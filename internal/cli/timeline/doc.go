// Package timeline is the record of a queue's starts, one line per start,
// and the arithmetic over it: spacing between consecutive starts, lateness
// against the slot, order inversions, makespan.
//
// It sits at the end of the flow (the README's architecture picture): the worker's handler writes
// a Start as it begins a job; `slotq demo --json` prints them as JSON lines,
// and Summarize checks them against the guarantees of docs/guarantees.md —
// spacing (3) and order (1, 8) — as the demo, its tests and `slotq bench`
// report them. It imports only the standard library.
//
// It is internal: only slotq's own commands (demo, bench, slotq timeline)
// and tests use it; no public package returns or takes its types.
package timeline
