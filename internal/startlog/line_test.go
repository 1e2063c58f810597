package startlog

import (
	"testing"
	"time"
)

// One reader takes the worker's start line in each form it is written:
// slog's JSON (slotq local --json), lambdacontext's JSON (CloudWatch
// Logs, with or without the console's prefix) and slog's text.
func TestParseLine(t *testing.T) {
	at := time.Date(2025, 6, 1, 14, 0, 0, 4_000_000, time.UTC)
	slotAt, gateAt := at.Add(-4*time.Millisecond), at.Add(-time.Millisecond)
	want := Start{JobID: "a", Ticket: 7, Attempt: 2, SlotAt: slotAt, StartedAt: at, GateAt: gateAt, LatenessMS: 4, Key: "k"}
	const attrs = `"queue":"emails","ticket":7,"job_id":"a","slot_at":"2025-06-01T14:00:00Z","gate_at":"2025-06-01T14:00:00.003Z","lateness_ms":4,"attempt":2,"key":"k"`
	tests := []struct{ name, line string }{
		{"slog JSON", `{"time":"2025-06-01T14:00:00.004Z","level":"INFO","msg":"start",` + attrs + `}`},
		{"lambdacontext JSON", `{"timestamp":"2025-06-01T14:00:00.004Z","level":"INFO","message":"start",` + attrs + `}`},
		{"CloudWatch prefix", `2025-06-01T14:00:00.004Z 2025/06/01/[$LATEST]abc {"timestamp":"2025-06-01T14:00:00.004Z","message":"start",` + attrs + `}`},
		{"slog text", `time=2025-06-01T14:00:00.004Z level=INFO msg=start queue=emails ticket=7 job_id=a slot_at=2025-06-01T14:00:00Z gate_at=2025-06-01T14:00:00.003Z lateness_ms=4 attempt=2 key=k`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := ParseLine(tt.line)
			if !ok || l.Message != "start" || l.Queue != "emails" || !l.HasLateness || l.Start != want {
				t.Errorf("ParseLine = %+v, %v; want start of emails %+v", l, ok, want)
			}
		})
	}
	if l, ok := ParseLine(`{"msg":"start","queue":"q","job_id":"b"}`); !ok || l.HasLateness {
		t.Errorf("a line without lateness_ms: %+v, %v", l, ok)
	}
	for _, line := range []string{"not a log", "14:00:00.004  start     emails  #1", `{"msg":`} {
		if _, ok := ParseLine(line); ok {
			t.Errorf("ParseLine(%q) read it as a log line", line)
		}
	}
}

func TestTextAttrs(t *testing.T) {
	kv, ok := textAttrs(`time=2025-06-01T14:00:00.004Z level=INFO msg="attempt failed; retrying" queue=emails error="upstream \"503\"" n=1`)
	if !ok || kv["msg"] != "attempt failed; retrying" || kv["error"] != `upstream "503"` || kv["queue"] != "emails" || kv["n"] != "1" {
		t.Errorf("textAttrs: %v, %v", kv, ok)
	}
	for _, line := range []string{"not a log", `{"msg":"start"}`, "a=1 b=2", `time=x msg="unterminated`} {
		if _, ok := textAttrs(line); ok {
			t.Errorf("textAttrs(%q) read it as a text log line", line)
		}
	}
}
