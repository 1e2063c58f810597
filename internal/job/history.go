package job

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slotq/slotq/pkg/api"
)

// EventKind names an event of a job's history (api.EventKind, with its
// constants).
type EventKind = api.EventKind

// The events a job's history records (see api's for each one's fields).
const (
	Enqueued       = api.Enqueued
	ParkedEvent    = api.ParkedEvent
	Released       = api.Released
	Reticketed     = api.Reticketed
	SlotMissed     = api.SlotMissed
	HandedBack     = api.HandedBack
	Started        = api.Started
	AttemptFailed  = api.AttemptFailed
	Retried        = api.Retried
	Rerun          = api.Rerun
	SucceededEvent = api.SucceededEvent
	FailedEvent    = api.FailedEvent
	CancelledEvent = api.CancelledEvent
	SlowedDown     = api.SlowedDown
	BookedEvent    = api.BookedEvent
)

// History bounds: a record keeps its last MaxHistory events, each error
// (a failed attempt's, a target's "slow down" answer) cut to
// MaxEventError bytes on a rune boundary (the job's LastError keeps
// more), so a job's history stays about 10 KiB at most; a job that runs
// without trouble stores three events in about 30 bytes.
const (
	MaxHistory    = api.MaxHistory
	MaxEventError = 1 << 10
)

// Event is one thing that happened to a job (api.Event).
type Event = api.Event

// Record appends ev to the job's history, cutting its error to
// MaxEventError bytes and dropping the oldest events beyond MaxHistory
// (HistoryDropped counts them).
func (j *Job) Record(ev Event) {
	ev.Error = Cut(oneLine(ev.Error), MaxEventError)
	// Clipped: a copy of the record (a store's, another reader's) must
	// never see the append.
	j.History = append(slices.Clip(j.History), ev)
	if n := len(j.History) - MaxHistory; n > 0 {
		j.History = append(j.History[:0:0], j.History[n:]...)
		j.HistoryDropped += n
	}
}

// Cut returns s cut to at most n bytes on a rune boundary, marked "…"
// when cut: how a job's record bounds the texts it keeps (an event's
// error, the last error, a panic's value and stack).
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

var codes = map[EventKind]string{
	Enqueued: "q", ParkedEvent: "p", Released: "r", Reticketed: "t", HandedBack: "h", Started: "s", SlotMissed: "m",
	AttemptFailed: "x", Retried: "y", SucceededEvent: "d", FailedEvent: "f", CancelledEvent: "c",
	Rerun: "a", SlowedDown: "w",
}

var kinds = func() map[string]EventKind {
	m := map[string]EventKind{}
	for k, c := range codes {
		m[c] = k
	}
	return m
}()

// historyFields is how many comma-separated fields a stored event has at
// most: code, time, ticket, old ticket, attempt, lateness, delay, reason,
// error (last, so it may hold commas).
const historyFields = 9

// EncodeHistory returns h in the compact form stores keep ("" for none):
// one line per event, "code,ms after base,ticket,old ticket,attempt,
// lateness ms,delay ms,reason,error", zeros empty and trailing empties
// left out. A job that runs without trouble stores "q,0,7\ns,1003,,,1,3\n
// d,1050,,,1".
func EncodeHistory(h []Event, base time.Time) string {
	var b strings.Builder
	for i, ev := range h {
		if i > 0 {
			b.WriteByte('\n')
		}
		code := codes[ev.Kind]
		if code == "" {
			code = string(ev.Kind)
		}
		num := func(n int64) string {
			if n == 0 {
				return ""
			}
			return strconv.FormatInt(n, 10)
		}
		fields := []string{code, strconv.FormatInt(ev.At.Sub(base).Milliseconds(), 10), num(ev.Ticket), num(ev.OldTicket),
			num(int64(ev.Attempt)), num(ev.LatenessMs), num(ev.DelayMs), ev.Reason, oneLine(ev.Error)}
		for len(fields) > 2 && fields[len(fields)-1] == "" {
			fields = fields[:len(fields)-1]
		}
		b.WriteString(strings.Join(fields, ","))
	}
	return b.String()
}

// DecodeHistory reads what EncodeHistory wrote.
func DecodeHistory(s string, base time.Time) ([]Event, error) {
	if s == "" {
		return nil, nil
	}
	lines := strings.Split(s, "\n")
	h := make([]Event, len(lines))
	for i, line := range lines {
		f := strings.SplitN(line, ",", historyFields)
		f = append(f, make([]string, historyFields-len(f))...)
		var n [6]int64
		for k := range n {
			if f[k+1] == "" {
				continue
			}
			v, err := strconv.ParseInt(f[k+1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("decode history: event %d: %w", i, err)
			}
			n[k] = v
		}
		k, ok := kinds[f[0]]
		if !ok {
			k = EventKind(f[0])
		}
		h[i] = Event{At: base.Add(time.Duration(n[0]) * time.Millisecond).UTC(), Kind: k, Ticket: n[1], OldTicket: n[2],
			Attempt: int(n[3]), LatenessMs: n[4], DelayMs: n[5], Reason: f[7], Error: f[8]}
	}
	return h, nil
}

// lineBreaks turns line breaks into spaces (oneLine); built once, since
// a Replacer is costly to build and safe to share.
var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// oneLine is s with line breaks as spaces.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return lineBreaks.Replace(s)
}
