// Package dynamomodel is a model of DynamoDB to measure slotq's engine at
// AWS's speed: the embedded store's semantics (internal/memstore, which
// internal/dev/storetest holds equal to internal/dynamostore's) behind
// DynamoDB's latencies and per-partition limits.
//
// Each engine.State call is made as internal/dynamostore makes it on
// DynamoDB: on the partition and item it writes or reads there. A call
// takes a latency drawn from a seeded distribution (Latency: AWS's is
// 5 ms at the median, 15 ms at the p99, about 1 call in 1,000 near
// 100 ms), half of it before the store applies it atomically and half
// after, so that concurrent callers see each other's writes as they
// would on DynamoDB. Each partition takes 1,000 write units and 3,000
// read units a second (a token bucket holding one second's units); a call
// beyond them is throttled and sent again after the AWS SDK's own backoff
// (retry.ExponentialJitterBackoff), up to the standard retryer's attempts,
// then fails with ErrThrottled. Every call is billed as DynamoDB bills it
// (Units): a write unit a KB of the item, a read unit per 4 KB read
// strongly (half for an index's eventually consistent query), and a
// refused condition as the write it would have been.
//
// The take and the gate write DynamoDB in a conditional form picked from
// the caller's read (internal/dynamostore: an update expression cannot
// take a maximum); a form the read no longer holds is refused, billed,
// and sent again after a round trip. The model bills them so, by the
// store's own dynamostore.StaleTake and StaleGate, checked on the state
// each write meets. What it does not show: TransactionConflictException
// and lost answers; those are tested on DynamoDB Local and by injection
// in internal/dynamostore. Item sizes are those of the records as JSON, a
// close stand-in for DynamoDB's attribute names and values.
//
// `slotq demo --store dynamodb-model` and `slotq bench --store
// dynamodb-model` run their workloads on it.
package dynamomodel
