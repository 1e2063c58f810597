package job

import (
	"encoding/json"
	"fmt"
	"time"
)

// EnvelopeVersion is the version of the wire envelope this build writes and
// reads.
const EnvelopeVersion = 1

// Envelope is the message the transport carries to the worker. It names the
// job and the ticket and attempt it was sent for; the worker drops an
// envelope that no longer matches the job record (a duplicate or a stale
// copy). The payload rides along so a worker can log and dispatch without a
// second read; the job record stays the source of truth.
type Envelope struct {
	V       int       `json:"v"`
	Queue   string    `json:"queue"`
	JobID   string    `json:"job_id"`
	Ticket  int64     `json:"ticket"`
	SlotAt  time.Time `json:"slot_at"`
	Attempt int       `json:"attempt"`
	// Gen is the job's queue generation (Job.Gen).
	Gen     int64           `json:"gen,omitempty"`
	Kind    string          `json:"kind,omitempty"`
	Target  string          `json:"target,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// SentAt is when the message was sent. The job's record is written
	// after its message, so a worker that finds the record behind a fresh
	// message waits for it a little (engine.Options.RecordGrace).
	SentAt time.Time `json:"sent_at,omitzero"`
}

// Envelope returns the envelope that carries j.
func (j *Job) Envelope() Envelope {
	return Envelope{
		V: EnvelopeVersion, Queue: j.Queue, JobID: j.ID, Ticket: j.Ticket,
		SlotAt: j.SlotAt, Attempt: j.Attempt, Gen: j.Gen, Kind: j.Kind, Target: j.Target, Payload: j.Payload,
	}
}

// Ref names the job the envelope carries.
func (e Envelope) Ref() Ref { return Ref{Queue: e.Queue, ID: e.JobID} }

// DecodeEnvelope parses a message body.
func DecodeEnvelope(body []byte) (Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(body, &e); err != nil {
		return e, fmt.Errorf("decode envelope: %w", err)
	}
	if e.V != EnvelopeVersion {
		return e, fmt.Errorf("decode envelope: unsupported version %d", e.V)
	}
	if e.Queue == "" || e.JobID == "" || e.Ticket < 1 || e.Attempt < 1 {
		return e, fmt.Errorf("decode envelope: missing queue, job_id, ticket or attempt")
	}
	return e, nil
}
