// Package dynamostore is slotq's state store on DynamoDB: a Store
// implements engine.State on one table, with conditional writes and
// transactions where internal/memstore uses a mutex. The enqueue function takes
// tickets here (Take), the worker passes the gate here (Gate) and claims
// the job (UpdateJob), the resume function reads what is due here
// (ListDue, ListHeld).
//
// # Table
//
// One table, on-demand, key pk (S) + sk (S). docs/dynamodb.md has the same
// schema for template.yaml; CreateTable makes it for tests and local runs.
//
//	item          pk                  sk       attributes
//	queue state   Q#<queue>           state    ticket, current, clock, last_start,
//	                                           purged, paused, paused_until,
//	                                           interval, take_clock, write_token,
//	                                           running (capped queues only),
//	                                           due_pk, due_sk (timed pause only),
//	                                           batch_ticket, batch_at, batch_fill
//	                                           (batch_max only)
//	queue config  Q#<queue>           config   queue, config (JSON), created_at,
//	                                           item_kind = "queue"
//	resume lease  Q#<queue>           resume   holder, lease_until, released_by,
//	                                           due_pk, due_sk, round_until
//	                                           (a release round due), ttl
//	lane          L#<queue>           K#<key>  queue, lane_key, gen, v, holder_ticket,
//	                                           holder_id, until, last, waiting,
//	                                           pending, ttl, write_token,
//	                                           due_pk, due_sk (while due),
//	                                           tail, tail_after, tail_dels
//	                                           (with a tail)
//	lane waiter   W#<queue>#<key>     W#<epoch>#<ticket>#<job id>
//	                                           v, ttl (a waiter of a lane's tail)
//	horizon head  W#<queue>           room     queue, gen, v, write_token,
//	                                           horizon (JSON, bookings inline)
//	                                           or room_head (JSON) and
//	                                           room_pages (bookings in pages),
//	                                           due_pk, due_sk (while due)
//	horizon page  W#<queue>           room#<n> bookings (JSON: numbers
//	                                           16n to 16n+15; room_pages.go)
//	schedule      S#<queue>           S#<name> schedule (JSON), schedule_v, write_token,
//	                                           due_pk, due_sk (while active;
//	                                           schedules.go)
//	debounce      D#<queue>           K#<debounce key>
//	                                           queue, debounce_key, gen, job_id,
//	                                           until, payload, closed
//	                                           (debounce.go)
//	job           J#<queue>#<job id>  job      queue, job_id, status, ticket, attempt,
//	                                           queue_status = "<queue>#<status>"
//	                                           (parked and failed jobs only;
//	                                           "<queue>#batch" while queued in a
//	                                           batch it joined, batched),
//	                                           the other job.Job fields,
//	                                           line_order, due_pk, due_sk
//	                                           (parked only), debounce_key
//	                                           (while its debounce runs),
//	                                           expires_at, ttl, write_token
//
// Indexes (by_status and queues project ALL, due keys only):
//
//   - by_status: queue_status (S) + ticket (N). Only parked and failed
//     job items carry queue_status (job.Status.Listed), so
//     ListJobs(queue, status) is one Query in ticket order and CountJobs a
//     Select COUNT on it, and other jobs cost no index write.
//   - queues: item_kind (S) + queue (S). Only config items carry
//     item_kind, so ListQueues is one Query in name order (and a
//     BatchGetItem of the state items).
//   - due: due_pk (S) + due_sk (N), the due index (due.go). An item the
//     resume function must act on at a time carries due_pk = D#00..D#15
//     (a hash of its key) and due_sk = the time, set by the write that
//     makes it due; ListDue queries the 16 partitions. A job a pause holds
//     carries due_pk = H#<queue>#<gen> and due_sk = its line order, which
//     ListHeld queries.
//
// A queue's own items share its partition key: its state, config and
// resume items (sort keys config to state, which GetQueue reads). Its
// lanes (K#<key>) share another, L#<queue>, which ListLanes reads as one
// range in key order: off the partition key of the hot state item (see
// below), so that lane writes and state writes do not share the write
// units of one partition.
//
// TTL is on ttl, epoch seconds, set on jobs with an ExpiresAt (rounded up,
// so DynamoDB never deletes a job early), on resume leases and on lanes.
// DynamoDB deletes expired items lazily, so GetJob, ListJobs and CountJobs
// also filter on expires_at with Options.Now.
//
// Times are numbers of epoch milliseconds (a decimal fraction keeps any
// sub-millisecond part, so times round-trip exactly); durations are numbers
// of milliseconds. The queue config is slot.Config's JSON.
//
// # The hot item
//
// Each queue's state item is the one every enqueue and every start
// writes; it holds counters and times only (about 250 bytes, one write
// unit), while the configuration, which may grow with its target list,
// sits in the cold config item. DynamoDB sustains about 1,000 write units
// per second on one item. An enqueue call is one Take write whatever its
// batch size (up to job.MaxBatch jobs), a start one Gate write, so a queue
// takes about 1,000 − starts/s enqueue calls per second. No transaction
// touches the state item on the hot path: a single-item write to an item
// that an in-flight TransactWriteItems holds fails with
// TransactionConflictException. Job items spread over partitions (one
// partition key per job). The 1,000 write units are a partition's as much
// as an item's, and the items of one partition key share a partition
// (until DynamoDB splits a hot one by sort key), so a queue's lanes, which
// its keyed jobs write several times each, have a partition key of their
// own (L#<queue>) rather than the state item's. The by_status index is sparse: only parked and
// failed jobs carry queue_status, so a job that runs without trouble
// writes no index entry at all.
//
// # Atomic steps
//
// Take is one UpdateItem: ticket (and line_ticket) moved by N, and the
// slot clock set by one of three conditional forms (line: clock + span;
// virtual: last_start + span; idle: now + (line−1)·interval). Gate is one UpdateItem on the state item
// (busy: last_start + interval; idle: now), its condition the gate itself.
// Each tries first the form the caller's last read of the queue
// (TakeRequest.Seen, GateRequest.Seen) points to, and on a conditional
// failure reads the right one from the item DynamoDB returns. The claim
// that follows a gate is an UpdateJob of the job item. Only CreateQueue,
// SetConfig and DeleteQueue use transactions on a queue's items (and
// lanes, off the hot item, to start one afresh or write its tail);
// Reconfigure makes its change with one conditional write of the state
// item (reslot.go). The method docs say why each is slot.Take, slot.Gate
// and slot.Started.
//
// # The running cap
//
// A queue with a MaxRunning keeps its running attempts on the hot item,
// in the map running (ticket → end of the attempt's lease), so the cap is
// checked in the gate's own write: under a cap, Gate's UpdateItem also
// sets running.<ticket> = until, removes the entries whose lease had
// ended in the state it read (each on condition that it still holds the
// value read), and requires size(running) < MaxRunning + the entries it
// removes; while the map does not exist yet it creates it whole instead
// (DynamoDB cannot set a path inside a missing map). A stale read only
// makes that condition stricter; the gate then decides on the item
// DynamoDB returns (slot.Full when every place is taken) and tries again.
// EndRun frees a place with one UpdateItem, REMOVE running.<ticket>, on
// condition that the entry still ends at the attempt's until (another
// start's place is left alone). So a capped queue writes its hot item
// once more per attempt; a queue without a cap never writes the map.
//
// # The resume lease
//
// Lease and ReleaseLease are one conditional UpdateItem each on the
// queue's resume lease item, never on the state item: Lease sets holder
// and lease_until if the item has no holder, has this holder, or its
// lease_until is not after now (returning the cursor, ALL_NEW); ReleaseLease
// removes holder and stores the cursor (a release round due: the item's
// due index entry and round_until) if holder is the caller. DeleteQueue
// deletes the item with the queue's others; the item's ttl, a day after
// lease_until, takes one a pass wrote back after the delete.
//
// # Lanes
//
// A lane (slot.Lane: the job that holds a key and the jobs waiting for
// it) is one small item of its own, never the hot state item, under the
// queue's lane partition key (L#<queue>), not the state item's: about 100
// bytes and up to 512 bytes of waiters, kept as one string
// ("ticket:id,ticket:id"); the waiters past those, its tail, are one item
// each under a partition key of the lane's own (lane_tail.go), so a lane
// write costs one write unit however many wait. The files are by part:
// lane.go (the item's key, ttl and seed; GetLane, ListLanes),
// lane_item.go (its encoding), lane_put.go (PutLane), lane_add.go
// (AddPending, a lane started afresh) and lane_tail.go (the tail: its
// layout, reads and writes). Every change but the pending count's is a
// compare-and-set on its version v: GetLane is a strongly consistent
// GetItem; PutLane an UpdateItem on condition v = from (no item for 0)
// that SETs the lane's fields and v and ADDs the caller's delta to
// pending, or, for a lane left idle whose count comes to 0, a DeleteItem
// on the same condition and pending <= -delta, so idle keys leave no
// items behind (the count as the caller read it picks which to try
// first, and a try refused for the count alone is followed by the
// other). AddPending needs no version and leaves it: one UpdateItem ADDs
// n to pending (and SETs v = if_not_exists(v, :seed), which only a lane
// it creates takes), on condition that
// the lane is of the caller's generation, so a stream of enqueues of one
// key never makes the workers' puts fail; a lane of another (a deleted
// queue's) is replaced by a fresh one with a PutItem on condition of the
// version read. A lane created (by PutLane from 0 or by
// AddPending) starts at the store's clock in microseconds + 1, not at 1:
// a deleted lane leaves nothing behind, and a lane of the same key
// created again must not take a version the deleted one had, or a write
// from a read of the old lane would land on the new one (laneSeed, in
// lane.go, says when the clock guarantees that). Lanes carry a ttl 30
// days past their last write or their holder's lease (laneKeep, in
// lane.go, says why): a deleted queue's lanes, and a lane whose pending
// count a crash left too high, go by themselves.
//
// # Errors and retries
//
// The SDK's retryer retries throttling (ProvisionedThroughputExceeded,
// ThrottlingException, RequestLimitExceeded, TransactionInProgress), 5xx
// answers and connection errors: 3 attempts by default, with jittered
// exponential backoff. Its error surfaces wrapped with the operation
// ("take ticket q: …"), so errors.As finds the SDK's type. The store itself
// retries what the SDK does not, up to 10 times with jittered backoff
// (below 10 ms, doubling to below 320 ms):
//
//   - a single-item write (PutItem, UpdateItem, DeleteItem: Take, Gate,
//     Pause, CreateJobs, UpdateJob, PutLane, …) refused with
//     TransactionConflictException.
//     DynamoDB refuses a write to an item that an in-flight
//     TransactWriteItems touches, and CreateQueue, SetConfig and
//     DeleteQueue write the hot state item in transactions, so any write
//     on it may meet one. The refused write did not happen; the same input
//     is sent again, write token and all (see below);
//   - a transaction cancelled for TransactionConflict or throttling, and
//     for no failed condition;
//   - BatchGetItem's unprocessed keys.
//
// A conflict that outlasts the retries surfaces wrapped, so errors.As finds
// *types.TransactionConflictException. Conditional failures become
// engine.ErrQueueNotFound, ErrQueueExists, ErrJobNotFound, ErrConflict,
// ErrLimitChanged or a *engine.GateError, read from the item DynamoDB
// returns with the failure (ReturnValuesOnConditionCheckFailure ALL_OLD),
// without another read. Every conditional write asks and reads that the
// same way, through updateIf, putIf or deleteIf (update.go); a take or a
// gate refused for a state that moved meanwhile is decided again on that
// item and sent again by one loop, writeState (take.go). A missing table
// is ErrTableNotFound.
//
// A write whose answer was lost (a connection reset) is sent again by the
// SDK. For transactions DynamoDB recognises the retry by its
// ClientRequestToken; for the rest, each write carries a random
// write_token and a retry that meets its own token knows it landed, so a
// CreateJobs, UpdateJob or PutLane is not mistaken for someone else's, and
// a Take, Gate or AddPending is not applied twice (a lane keeps the last
// add's token apart from the last put's, so neither hides the other's). The same holds when the store, not the
// SDK, sends a write again after a transaction conflict. One gap remains
// on the hot state item, which keeps only the last writer's token: when
// another write lands there between a Take and its retry, the retry
// applies again. Its first range of tickets then goes unused and its slots
// follow the second application (later by its span); no ticket is handed
// out twice. A Gate retried that way either fails its condition or moves
// last_start one interval further; neither starts anything early. Under a
// cap the retry recognises its own running place (its ticket and until)
// and answers that it passed. EndRun carries no token and leaves the
// item's alone: removing an entry twice removes it once. A PutLane that
// deletes a lane leaves no item to carry a token: a delete re-sent after
// it landed answers ErrConflict, and the caller's next read finds the
// lane gone, as it meant it to be.
//
// # Consistency
//
// GetQueue, GetJob, GetLane and ListLanes read strongly consistently (a
// lane's tail with a Query checked against the lane item read again:
// lane_tail.go). ListJobs, CountJobs and
// ListQueues read global secondary indexes, which are eventually
// consistent: a change of a moment ago may not show yet.
//
// # Cost
//
// docs/dynamodb.md counts the writes per enqueue and per start, and
// docs/costs.md what a job costs. The store meters nothing itself: the
// cost benchmark (internal/bench/costs, `slotq costs`) wraps the DynamoDBAPI it passes to New.
package dynamostore
