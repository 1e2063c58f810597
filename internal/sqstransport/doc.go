// Package sqstransport is the engine's transport on Amazon SQS: it carries
// job envelopes to the worker with a per-message delay, so each job reaches
// the worker at (or just before) its slot.
//
// Where it sits in the flow:
//
//	enqueue / resume ──engine.Transport.Send──▶ SendMessageBatch (DelaySeconds 0–900)
//	                                                 │
//	                          SQS slot queue ◀───────┘ ──redrive (5 receives)──▶ dead-letter queue
//	                                │
//	        Lambda event source ────┴──── (*Transport).Receive in the local runtime and tests
//	                                │
//	                                ▼
//	                 worker handler: []events.SQSMessage → events.SQSEventResponse
//
// In AWS the SQS event source of the worker function receives and deletes
// messages; Receive does the same in one process, so the local runtime and
// the tests feed the worker handler exactly the events.SQSMessage values and
// partial batch responses it gets in Lambda.
//
// # Envelope format
//
// A message body is the JSON encoding of a job.Envelope, versioned by its
// "v" field (job.EnvelopeVersion):
//
//	{"v":1,"queue":"emails","job_id":"j-42","ticket":17,
//	 "slot_at":"2025-06-01T14:00:02Z","attempt":1,"kind":"send-email",
//	 "payload":{"to":"a@example.com"}}
//
// Each message also carries the String message attributes slotq_queue and
// slotq_job_id, for filtering and debugging; the worker reads only the body
// (see EnvelopeOf). The body and attributes together must fit SQS's 256 KiB
// message limit; CheckSize tells the enqueue path before it writes anything.
//
// # Delays
//
// SQS delays whole seconds up to 15 minutes. Send rounds a delay down to the
// second and clamps it to 0–900 s, so a message never arrives late because
// of rounding; the worker sleeps out the remainder before its slot.
package sqstransport
