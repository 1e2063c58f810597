// Package slot is the arithmetic at the heart of slotq: queue names and
// configuration, the per-queue state (ticket, current, slot clock, last
// start, pause, running places), how a range of tickets gets its slots,
// the gate decision taken when a job wants to start, and a key's lane
// (Lane: the job that holds a key and the jobs waiting for it).
//
// Everything here is pure: time is a parameter and nothing does I/O. It
// imports the standard library, internal/input (the typed error a bad
// configuration returns) and pkg/api (the wire types it shares with
// clients), and never AWS. The engine (internal/engine) asks a state
// implementation to apply these rules atomically; internal/memstore does
// so under a mutex and internal/dynamostore with conditional writes.
//
// The rules, in words (docs/algorithm.md has them with a worked example
// and a glossary):
//
//   - A queue hands out tickets 1, 2, 3, … in acceptance order.
//   - The slot clock is the slot of the last ticket that took a place in
//     the line. The next free slot is max(clock+interval, now).
//   - A job whose not_before lies after its line slot is "scheduled": it
//     gets a ticket but not a place in the line, so it does not hold up the
//     jobs behind it; its slot is its not_before.
//   - The gate lets ticket t start at time now only if the queue is not
//     paused, t > current (nobody started a later ticket), and
//     now ≥ last_start + interval − skew.
//   - A job that meets a gate whose current is ≥ its ticket has been
//     passed and takes a new ticket at the end of the line.
package slot
