// Package dynamostore is slotq's state store on DynamoDB: a Store
// implements engine.State on one table, with conditional writes and
// transactions where pkg/memstore uses a mutex. The enqueue function takes
// tickets here (Take), the worker passes the gate here (Start), the resume
// function lists parked jobs here (ListJobs).
//
// # Table
//
// One table, on-demand, key pk (S) + sk (S). docs/dynamodb.md has the same
// schema for template.yaml; CreateTable makes it for tests and local runs.
//
//	item          pk                  sk       attributes
//	queue state   Q#<queue>           state    ticket, current, clock, last_start,
//	                                           paused, paused_until, interval,
//	                                           take_clock, write_token
//	queue config  Q#<queue>           config   queue, config (JSON), created_at,
//	                                           item_kind = "queue"
//	resume lease  Q#<queue>           resume   holder, lease_until, released_by,
//	                                           cursor_after, cursor_wake, ttl
//	job           J#<queue>#<job id>  job      queue, job_id, status, ticket, attempt,
//	                                           queue_status = "<queue>#<status>",
//	                                           the other job.Job fields,
//	                                           expires_at, ttl, write_token
//
// Indexes (both project ALL):
//
//   - by_status: queue_status (S) + ticket (N). Only job items carry
//     queue_status, so ListJobs(queue, status) is one Query in ticket
//     order and CountJobs a Select COUNT on it.
//   - queues: item_kind (S) + queue (S). Only config items carry
//     item_kind, so ListQueues is one Query in name order (and a
//     BatchGetItem of the state items).
//
// TTL is on ttl, epoch seconds, set on jobs with an ExpiresAt (rounded up,
// so DynamoDB never deletes a job early). DynamoDB deletes expired items
// lazily, so GetJob, ListJobs and CountJobs also filter on expires_at with
// Options.Now.
//
// Times are numbers of epoch milliseconds (a decimal fraction keeps any
// sub-millisecond part, so times round-trip exactly); durations are numbers
// of milliseconds. The queue config is slot.Config's JSON.
//
// # The hot item
//
// Each queue's state item is the one every enqueue and every start
// writes; it holds counters and times only (about 200 bytes, one write
// unit), while the configuration, which may grow with its target list,
// sits in the cold config item. DynamoDB sustains about 1,000 write units
// per second on one item. An enqueue call is one Take write whatever its
// batch size (up to job.MaxBatch jobs); a start writes the item in a
// transaction (2 units) and raises the clock (1 unit). So one queue takes
// about 1,000 − 3·(starts per second) enqueue calls per second, and,
// since starts are at most one per interval, an interval of 10 ms still
// leaves 700 enqueue calls per second. Job items spread over partitions
// (one partition key per job); the by_status index puts a queue's jobs of
// one status under one key, which caps job writes at about 1,000 per second
// per queue and status.
//
// # Atomic steps
//
// Take is one UpdateItem: ADD ticket, and the slot clock set by one of two
// conditional forms (busy: clock + span; idle: now + (line−1)·interval),
// retried in the other form on a conditional failure. Start is one
// TransactWriteItems of the job item (queued at the expected version →
// running) and the state item (the gate as a condition), followed by a
// conditional clock raise. The method docs say why each is slot.Take,
// slot.Gate and slot.Started.
//
// # The resume lease
//
// Lease and ReleaseLease are one conditional UpdateItem each on the
// queue's resume lease item, never on the state item: Lease sets holder
// and lease_until if the item has no holder, has this holder, or its
// lease_until is not after now (returning the cursor, ALL_NEW); ReleaseLease
// removes holder and stores the cursor if holder is the caller. The item's
// ttl lies a day after lease_until, so a deleted queue's lease item goes.
//
// # Errors and retries
//
// The SDK's retryer retries throttling (ProvisionedThroughputExceeded,
// ThrottlingException, RequestLimitExceeded, TransactionInProgress), 5xx
// answers and connection errors: 3 attempts by default, with jittered
// exponential backoff. Its error surfaces wrapped with the operation
// ("take ticket q: …"), so errors.As finds the SDK's type. The store itself
// retries what the SDK does not: transactions cancelled for
// TransactionConflict or throttling (up to 6 times, 10–320 ms apart) and
// BatchGetItem's unprocessed keys. Conditional failures become
// engine.ErrQueueNotFound, ErrQueueExists, ErrJobNotFound, ErrConflict,
// ErrIntervalChanged or a *engine.GateError, read from the item DynamoDB
// returns with the failure (ReturnValuesOnConditionCheckFailure ALL_OLD),
// without another read. A missing table is ErrTableNotFound.
//
// A write whose answer was lost (a connection reset) is sent again by the
// SDK. For transactions DynamoDB recognises the retry by its
// ClientRequestToken; for the rest, each write carries a random
// write_token and a retry that meets its own token knows it landed, so a
// Take is never applied twice and a CreateJobs, Start or UpdateJob is not
// mistaken for someone else's.
//
// # Consistency
//
// GetQueue and GetJob read strongly consistently. ListJobs, CountJobs and
// ListQueues read global secondary indexes, which are eventually
// consistent: a change of a moment ago may not show yet.
//
// # Cost
//
// Every call asks for ReturnConsumedCapacity TOTAL and Store.Usage adds it
// up by operation kind, for a benchmark's cost per job.
package dynamostore
