package job_test

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slotq/slotq/internal/job"
)

// The compact form stores read back the events as written, to the
// millisecond, and a job that runs without trouble stores its history in
// under 80 bytes.
func TestHistoryRoundTrip(t *testing.T) {
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var j job.Job
	j.EnqueuedAt = base
	for _, ev := range []job.Event{
		{At: base, Kind: job.Enqueued, Ticket: 7},
		{At: base.Add(1500 * time.Millisecond), Kind: job.ParkedEvent, Reason: "paused"},
		{At: base.Add(time.Minute), Kind: job.Reticketed, OldTicket: 7, Ticket: 12},
		{At: base.Add(time.Minute), Kind: job.Released},
		{At: base.Add(61 * time.Second), Kind: job.HandedBack, DelayMs: 880},
		{At: base.Add(61500 * time.Millisecond), Kind: job.SlotMissed, OldTicket: 12, Ticket: 14, Attempt: 1, LatenessMs: 31},
		{At: base.Add(62 * time.Second), Kind: job.Started, Attempt: 1, LatenessMs: -3},
		{At: base.Add(63 * time.Second), Kind: job.AttemptFailed, Attempt: 1, Error: "say \"no\", twice\nor ✓ thrice"},
		{At: base.Add(64 * time.Second), Kind: job.Retried, Attempt: 2, Ticket: 15},
		{At: base.Add(70 * time.Second), Kind: job.CancelledEvent},
	} {
		j.Record(ev)
	}
	s := job.EncodeHistory(j.History, j.EnqueuedAt)
	got, err := job.DecodeHistory(s, j.EnqueuedAt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, j.History) {
		t.Errorf("decoded\n%+v\nwant\n%+v\nfrom %s", got, j.History, s)
	}

	var ok job.Job
	ok.EnqueuedAt = base
	ok.Record(job.Event{At: base, Kind: job.Enqueued, Ticket: 123456})
	ok.Record(job.Event{At: base.Add(14*time.Minute + 59*time.Second), Kind: job.Started, Attempt: 1, LatenessMs: 12})
	ok.Record(job.Event{At: base.Add(15 * time.Minute), Kind: job.SucceededEvent, Attempt: 1})
	if s := job.EncodeHistory(ok.History, ok.EnqueuedAt); len(s) > 40 {
		t.Errorf("a plain job's history takes %d bytes: %s", len(s), s)
	}
}

// Record keeps the last MaxHistory events and cuts errors.
func TestRecordBound(t *testing.T) {
	var j job.Job
	long := strings.Repeat("é", job.MaxEventError)
	for i := range 25 {
		j.Record(job.Event{Kind: job.AttemptFailed, Attempt: i + 1, Error: long})
	}
	if len(j.History) != job.MaxHistory || j.HistoryDropped != 25-job.MaxHistory {
		t.Fatalf("%d kept, %d dropped", len(j.History), j.HistoryDropped)
	}
	if j.History[0].Attempt != 25-job.MaxHistory+1 || j.History[len(j.History)-1].Attempt != 25 {
		t.Errorf("kept attempts %d..%d", j.History[0].Attempt, j.History[len(j.History)-1].Attempt)
	}
	for _, ev := range j.History {
		if len(ev.Error) > job.MaxEventError+len("…") || !strings.HasSuffix(ev.Error, "…") {
			t.Errorf("error of %d bytes: %q", len(ev.Error), ev.Error)
		}
	}
	// A copy taken before a Record does not see it.
	c := j
	j.Record(job.Event{Kind: job.CancelledEvent})
	if c.History[len(c.History)-1].Kind == job.CancelledEvent {
		t.Error("Record changed a copy's history")
	}
}

// An event keeps up to 1 KiB of its error, whole when it
// fits, cut on a rune boundary when not: what the target answered stays
// readable text.
func TestRecordKeepsTheAnswer(t *testing.T) {
	const kib = 1024
	for _, tc := range []struct {
		name, err string
		whole     bool
	}{
		{"fits", strings.Repeat("x", kib), true},
		{"runes of 3 bytes", strings.Repeat("€", kib), false},
		{"runes of 2 bytes after one of 1", "a" + strings.Repeat("é", kib), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var j job.Job
			j.Record(job.Event{Kind: job.AttemptFailed, Error: tc.err})
			got := j.History[0].Error
			if tc.whole {
				if got != tc.err {
					t.Fatalf("an error of %d bytes kept as %d", len(tc.err), len(got))
				}
				return
			}
			kept, ok := strings.CutSuffix(got, "…")
			if !ok || !utf8.ValidString(kept) || !strings.HasPrefix(tc.err, kept) {
				t.Fatalf("kept %q…: not a cut of the answer on a rune boundary", kept[max(0, len(kept)-8):])
			}
			if len(kept) > kib || len(kept) < kib-utf8.UTFMax {
				t.Fatalf("kept %d bytes; want up to %d, cut on a rune boundary", len(kept), kib)
			}
			h, err := job.DecodeHistory(job.EncodeHistory(j.History, time.Time{}), time.Time{})
			if err != nil || h[0].Error != got {
				t.Fatalf("the stored form read back %d bytes, %v", len(h[0].Error), err)
			}
		})
	}
}
