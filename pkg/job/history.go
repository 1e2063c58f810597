package job

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// EventKind names an event of a job's history.
type EventKind string

// The events a job's history records.
const (
	// Enqueued: accepted, with its first Ticket.
	Enqueued EventKind = "enqueued"
	// ParkedEvent: parked, for Reason (ParkReason).
	ParkedEvent EventKind = "parked"
	// Released: sent to the transport by the resume function.
	Released EventKind = "released"
	// Reticketed: took Ticket at the end of the line instead of OldTicket
	// (passed at the gate, or stale when resume looked at it).
	Reticketed EventKind = "reticketed"
	// HandedBack: its message was sent again, DelayMs before its slot:
	// the slot lay past the worker invocation's deadline.
	HandedBack EventKind = "handed_back"
	// Started: Attempt started, LatenessMs after its slot.
	Started EventKind = "started"
	// AttemptFailed: Attempt failed with Error.
	AttemptFailed EventKind = "attempt_failed"
	// Retried: the next Attempt took Ticket, after its backoff.
	Retried EventKind = "retried"
	// SucceededEvent, FailedEvent, CancelledEvent: the job's end.
	SucceededEvent EventKind = "succeeded"
	FailedEvent    EventKind = "failed"
	CancelledEvent EventKind = "cancelled"
)

// History bounds: a record keeps its last MaxHistory events, each error
// cut to MaxEventError bytes (the job's LastError keeps more), so a
// job's history stays a few hundred bytes at most; a job that runs
// without trouble has three events of about 20 bytes each as stored.
const (
	MaxHistory    = 10
	MaxEventError = 64
)

// Event is one thing that happened to a job. Fields other than At and
// Kind are set by kind (see EventKind); absent means zero.
type Event struct {
	At         time.Time `json:"at"`
	Kind       EventKind `json:"event"`
	Ticket     int64     `json:"ticket,omitempty"`
	OldTicket  int64     `json:"old_ticket,omitempty"`
	Attempt    int       `json:"attempt,omitempty"`
	LatenessMs int64     `json:"lateness_ms,omitempty"`
	DelayMs    int64     `json:"delay_ms,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// Record appends ev to the job's history, cutting its error to
// MaxEventError bytes and dropping the oldest events beyond MaxHistory
// (HistoryDropped counts them).
func (j *Job) Record(ev Event) {
	ev.Error = cutString(ev.Error, MaxEventError)
	// Clipped: a copy of the record (a store's, another reader's) must
	// never see the append.
	j.History = append(slices.Clip(j.History), ev)
	if n := len(j.History) - MaxHistory; n > 0 {
		j.History = append(j.History[:0:0], j.History[n:]...)
		j.HistoryDropped += n
	}
}

// cutString returns s cut to at most n bytes on a rune boundary, marked
// "…" when cut.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// compactEvent is an event as stored: one-letter keys, the time in
// milliseconds after a base (the job's EnqueuedAt).
type compactEvent struct {
	K string `json:"k"`
	T int64  `json:"t"`
	N int64  `json:"n,omitempty"`
	O int64  `json:"o,omitempty"`
	A int    `json:"a,omitempty"`
	L int64  `json:"l,omitempty"`
	D int64  `json:"d,omitempty"`
	R string `json:"r,omitempty"`
	E string `json:"e,omitempty"`
}

var codes = map[EventKind]string{
	Enqueued: "q", ParkedEvent: "p", Released: "r", Reticketed: "t", HandedBack: "h", Started: "s",
	AttemptFailed: "x", Retried: "y", SucceededEvent: "d", FailedEvent: "f", CancelledEvent: "c",
}

var kinds = func() map[string]EventKind {
	m := map[string]EventKind{}
	for k, c := range codes {
		m[c] = k
	}
	return m
}()

// EncodeHistory returns h in the compact form stores keep ("" for none),
// times as milliseconds after base.
func EncodeHistory(h []Event, base time.Time) string {
	if len(h) == 0 {
		return ""
	}
	cs := make([]compactEvent, len(h))
	for i, ev := range h {
		cs[i] = compactEvent{K: codes[ev.Kind], T: ev.At.Sub(base).Milliseconds(), N: ev.Ticket, O: ev.OldTicket,
			A: ev.Attempt, L: ev.LatenessMs, D: ev.DelayMs, R: ev.Reason, E: ev.Error}
		if cs[i].K == "" {
			cs[i].K = string(ev.Kind)
		}
	}
	b, _ := json.Marshal(cs) // plain fields: cannot fail
	return string(b)
}

// DecodeHistory reads what EncodeHistory wrote.
func DecodeHistory(s string, base time.Time) ([]Event, error) {
	if s == "" {
		return nil, nil
	}
	var cs []compactEvent
	if err := json.Unmarshal([]byte(s), &cs); err != nil {
		return nil, fmt.Errorf("decode history: %w", err)
	}
	h := make([]Event, len(cs))
	for i, c := range cs {
		k, ok := kinds[c.K]
		if !ok {
			k = EventKind(c.K)
		}
		h[i] = Event{At: base.Add(time.Duration(c.T) * time.Millisecond).UTC(), Kind: k, Ticket: c.N, OldTicket: c.O,
			Attempt: c.A, LatenessMs: c.L, DelayMs: c.D, Reason: c.R, Error: c.E}
	}
	return h, nil
}
