// Package job defines a slotq job: its record (Job), its states and the
// legal transitions between them, its history (Event), the wire envelope
// that carries it through the transport (Envelope), and the enqueue
// request a producer sends (EnqueueRequest, Spec). A job is named by its
// queue and id (Ref); its Key, if any, is the key whose jobs run one at a
// time (JSON "key").
//
// A job's life (see docs/states.md for the diagram):
//
//	queued ──gate──▶ running ──▶ succeeded
//	  │  ▲              │ └────▶ failed (dead-letter record)
//	  ▼  │              │ retry: new ticket
//	parked ◀────────────┘
//	(queued and parked) ──cancel/purge──▶ cancelled
//
// Where it sits: a leaf of the runtime beside internal/slot. The engine,
// the stores and the transports speak in its types. Besides the standard
// library it imports pkg/api (the statuses, park reasons and request
// types it shares with clients), internal/input, for the typed input
// error, and internal/slot, for durations and queue names; never AWS.
package job
