package startlog

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Line is one of the functions' log lines read back by ParseLine: its
// message and, for the worker's "start" line (engine.Work logs it with
// the job's queue, ticket, job_id, slot_at, gate_at, lateness_ms,
// attempt and key), the start it tells of.
type Line struct {
	Message string
	Queue   string
	// Start is the start a "start" line tells of; its StartedAt is the
	// line's time, zero for a line without one.
	Start Start
	// HasLateness says the line gave lateness_ms (Start.LatenessMS).
	HasLateness bool
}

// ParseLine reads one log line: the JSON of slog's JSON handler ("msg",
// "time") or of lambdacontext's ("message", "timestamp"), after any
// CloudWatch Logs prefix (timestamp, stream), or a line of slog's text
// handler:
//
//	time=2025-06-01T14:00:00.004Z level=INFO msg=start queue=emails ticket=1 job_id=a slot_at=… gate_at=… lateness_ms=4 attempt=1
//
// ok is false for a line that is neither. It is the one reader of the
// worker's start line: Logs reads CloudWatch Logs' with it, slotq
// timeline --log a file's.
func ParseLine(text string) (l Line, ok bool) {
	if i := strings.IndexByte(text, '{'); i >= 0 && !strings.HasPrefix(text, "time=") {
		return parseJSON(text[i:])
	}
	kv, ok := textAttrs(text)
	if !ok {
		return Line{}, false
	}
	l = Line{Message: kv["msg"], Queue: kv["queue"],
		Start: Start{JobID: kv["job_id"], Key: kv["key"]}}
	s := &l.Start
	s.StartedAt, _ = time.Parse(time.RFC3339Nano, kv["time"])
	s.SlotAt, _ = time.Parse(time.RFC3339Nano, kv["slot_at"])
	s.GateAt, _ = time.Parse(time.RFC3339Nano, kv["gate_at"])
	s.Ticket, _ = strconv.ParseInt(kv["ticket"], 10, 64)
	s.Attempt, _ = strconv.Atoi(kv["attempt"])
	if n, err := strconv.ParseInt(kv["lateness_ms"], 10, 64); err == nil {
		s.LatenessMS, l.HasLateness = n, true
	}
	return l, true
}

// parseJSON reads a JSON log line: the start's attributes are Start's
// own JSON names, beside the handler's message and time.
func parseJSON(text string) (Line, bool) {
	var j struct {
		Start
		// slog's JSON handler writes msg and time, lambdacontext's
		// message and timestamp: the fields' own names.
		Msg, Message    string
		Time, Timestamp time.Time
		Queue           string `json:"queue"`
		// LatenessMS, given, says so (Line.HasLateness).
		LatenessMS *int64 `json:"lateness_ms"`
	}
	if json.Unmarshal([]byte(text), &j) != nil {
		return Line{}, false
	}
	l := Line{Message: cmp.Or(j.Msg, j.Message), Queue: j.Queue, HasLateness: j.LatenessMS != nil, Start: j.Start}
	l.Start.StartedAt = cmp.Or(j.Time, j.Timestamp)
	if j.LatenessMS != nil {
		l.Start.LatenessMS = *j.LatenessMS
	}
	return l, true
}

// textAttrs splits a line of slog's text handler into its attributes:
// key=value, the value quoted (Go syntax) when it holds spaces or quotes.
// A line that is not such a line (no time= and msg=) gives false.
func textAttrs(line string) (map[string]string, bool) {
	kv := map[string]string{}
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimLeft(line, " ") {
		k, rest, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \"") {
			return nil, false
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, false
			}
			v, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
			rest = " " + rest
		}
		kv[k] = v
		line = rest
	}
	_, hasTime := kv["time"]
	_, hasMsg := kv["msg"]
	return kv, hasTime && hasMsg
}
