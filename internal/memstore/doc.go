// Package memstore is slotq's embedded backend: an in-process state store
// (Store, an engine.State) and an in-process transport (Transport, an
// engine.Transport). Together they stand in for DynamoDB and SQS in local
// runs (make run) and in tests.
//
// In slotq's flow (the README's architecture picture), Store holds what DynamoDB holds — one record
// per queue with its slot.State, and the job records — and applies internal/slot's
// rules under one mutex where internal/dynamostore uses conditional writes.
// Transport plays the slot queue: Send holds each envelope for its delay and
// Run hands due envelopes to worker goroutines, redelivering the ones whose
// handler failed after a visibility timeout, as SQS would.
//
// Transport waits with time.Timer and channels only, so it runs inside a
// testing/synctest bubble, where an hour of slots passes in milliseconds.
// Its fault injection (jitter, duplicate and dropped messages, failing
// sends) lets tests check the guarantees against an unkind transport.
package memstore
