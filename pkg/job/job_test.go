package job

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/slot"
)

var now = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

func TestTransitions(t *testing.T) {
	legal := []struct{ from, to Status }{
		{Queued, Running}, {Queued, Parked}, {Queued, Queued}, {Queued, Cancelled},
		{Parked, Queued}, {Parked, Parked}, {Parked, Cancelled},
		{Running, Succeeded}, {Running, Failed}, {Running, Queued}, {Running, Parked},
	}
	for _, tt := range legal {
		if !CanMove(tt.from, tt.to) {
			t.Errorf("%s -> %s should be legal", tt.from, tt.to)
		}
	}
	illegal := []struct{ from, to Status }{
		{Queued, Succeeded}, {Parked, Running}, {Running, Cancelled}, {Running, Running},
		{Succeeded, Queued}, {Failed, Queued}, {Cancelled, Queued},
	}
	for _, tt := range illegal {
		if CanMove(tt.from, tt.to) {
			t.Errorf("%s -> %s should be illegal", tt.from, tt.to)
		}
	}
	for _, s := range Statuses {
		if s.Final() && s.Waiting() {
			t.Errorf("%s is both final and waiting", s)
		}
	}
}

func TestDecodeEnqueue(t *testing.T) {
	big := `"` + strings.Repeat("x", MaxPayload) + `"`
	many := `{"queue":"q","jobs":[` + strings.TrimSuffix(strings.Repeat(`{"kind":"k"},`, MaxBatch+1), ",") + `]}`
	tests := []struct {
		name  string
		body  string
		code  string
		field string
	}{
		{"malformed JSON", `{"queue":`, "malformed_json", "body"},
		{"empty body", ``, "malformed_json", "body"},
		{"unknown field", `{"queue":"q","job":{"kind":"k"},"colour":1}`, "unknown_field", "colour"},
		{"unknown job field", `{"queue":"q","job":{"kind":"k","priority":1}}`, "unknown_field", "priority"},
		{"bad queue name", `{"queue":"a b","job":{"kind":"k"}}`, "invalid_queue", "queue"},
		{"missing queue", `{"job":{"kind":"k"}}`, "invalid_queue", "queue"},
		{"zero interval", `{"queue":"q","interval":"0s","job":{"kind":"k"}}`, "invalid_interval", "interval"},
		{"negative interval", `{"queue":"q","interval":"-1s","job":{"kind":"k"}}`, "invalid_interval", "interval"},
		{"no jobs", `{"queue":"q"}`, "no_jobs", "jobs"},
		{"empty batch", `{"queue":"q","jobs":[]}`, "no_jobs", "jobs"},
		{"too many jobs", many, "too_many_jobs", "jobs"},
		{"payload over the limit", `{"queue":"q","job":{"kind":"k","payload":` + big + `}}`, "payload_too_large", "job.payload"},
		{"no kind or target", `{"queue":"q","jobs":[{"kind":"k"},{"payload":1}]}`, "no_target", "jobs[1].kind"},
		{"bad target", `{"queue":"q","job":{"target":"ftp://x"}}`, "invalid_target", "job.target"},
		{"not_before too far", `{"queue":"q","job":{"kind":"k","not_before":"2028-01-01T00:00:00Z"}}`, "invalid_not_before", "job.not_before"},
		{"not_before not a time", `{"queue":"q","job":{"kind":"k","not_before":"tomorrow"}}`, "malformed_json", "body"},
		{"duplicate ids", `{"queue":"q","jobs":[{"id":"a","kind":"k"},{"id":"a","kind":"k"}]}`, "duplicate_id", "jobs[1].id"},
		{"wrong type", `{"queue":7,"job":{"kind":"k"}}`, "invalid_type", "queue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeEnqueue([]byte(tt.body), now)
			var ie *slot.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an InputError", err)
			}
			if ie.Code != tt.code || ie.Field != tt.field {
				t.Fatalf("err = %s/%s (%s), want %s/%s", ie.Code, ie.Field, ie.Message, tt.code, tt.field)
			}
		})
	}
}

func TestDecodeEnqueueGood(t *testing.T) {
	r, err := DecodeEnqueue([]byte(`{"queue":"emails","interval":"250ms","jobs":[
		{"id":"welcome-42","kind":"email.send","payload":{"to":"a@example.com"}},
		{"target":"https://hooks.example.com/x","not_before":"2026-11-21T15:00:00Z"}]}`), now)
	if err != nil {
		t.Fatal(err)
	}
	specs := r.Specs()
	if len(specs) != 2 || specs[0].ID != "welcome-42" || string(specs[0].Payload) != `{"to":"a@example.com"}` {
		t.Fatalf("specs = %+v", specs)
	}
	if time.Duration(*r.Interval) != 250*time.Millisecond || !specs[1].NotBefore.Equal(now.Add(time.Hour)) {
		t.Fatalf("interval %v not_before %v", *r.Interval, specs[1].NotBefore)
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	j := Job{Queue: "q", ID: "x", Kind: "k", Ticket: 7, Attempt: 2, SlotAt: now, Payload: json.RawMessage(`{"a":1}`)}
	b, _ := json.Marshal(j.Envelope())
	env, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if env.Key() != (Key{"q", "x"}) || env.Ticket != 7 || env.Attempt != 2 || !env.SlotAt.Equal(now) {
		t.Fatalf("envelope = %+v", env)
	}
	for _, bad := range []string{`{}`, `{"v":2,"queue":"q","job_id":"x","ticket":1,"attempt":1}`, `not json`} {
		if _, err := DecodeEnvelope([]byte(bad)); err == nil {
			t.Errorf("DecodeEnvelope(%s) accepted it", bad)
		}
	}
}

// FuzzDecodeEnqueue: any body decodes or fails with an *slot.InputError
// naming a field; it never panics.
func FuzzDecodeEnqueue(f *testing.F) {
	f.Add([]byte(`{"queue":"q","job":{"kind":"k"}}`))
	f.Add([]byte(`{"queue":"q","jobs":[{"id":"a","target":"https://x/y","payload":[1,2],"not_before":"2026-11-21T15:00:00Z"}]}`))
	f.Add([]byte(`{"queue":"q","interval":"-5ms","job":{}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeEnqueue(body, now)
		if err != nil {
			var ie *slot.InputError
			if !errors.As(err, &ie) || ie.Field == "" || ie.Code == "" {
				t.Fatalf("error %v (%T) is not an InputError naming a field", err, err)
			}
			return
		}
		if len(r.Specs()) == 0 || len(r.Specs()) > MaxBatch {
			t.Fatalf("accepted %d jobs", len(r.Specs()))
		}
	})
}
