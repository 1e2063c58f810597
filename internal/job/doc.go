// Package job defines a slotq job: its record, its states and the legal
// transitions between them, the wire envelope that carries it through the
// transport, and the enqueue request a producer sends.
//
// A job's life (see docs/states.md for the diagram):
//
//	queued ──gate──▶ running ──▶ succeeded
//	  │  ▲              │ └────▶ failed (dead-letter record)
//	  ▼  │              │ retry: new ticket
//	parked ◀────────────┘
//	(queued and parked) ──cancel/purge──▶ cancelled
//
// Besides the standard library it imports internal/input, for the typed input
// error, and internal/slot, for durations and queue names.
package job
