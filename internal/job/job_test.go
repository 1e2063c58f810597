package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/input"
	"github.com/slotq/slotq/internal/slot"
)

var now = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

func TestTransitions(t *testing.T) {
	legal := []struct{ from, to Status }{
		{Queued, Running}, {Queued, Parked}, {Queued, Queued}, {Queued, Cancelled},
		{Parked, Queued}, {Parked, Parked}, {Parked, Cancelled},
		{Running, Succeeded}, {Running, Failed}, {Running, Queued}, {Running, Parked},
		// A retry (run again on request) of a dead letter or a cancelled job.
		{Failed, Queued}, {Failed, Parked}, {Cancelled, Queued}, {Cancelled, Parked},
	}
	for _, tt := range legal {
		if !CanMove(tt.from, tt.to) {
			t.Errorf("%s -> %s should be legal", tt.from, tt.to)
		}
	}
	illegal := []struct{ from, to Status }{
		{Queued, Succeeded}, {Parked, Running}, {Running, Cancelled}, {Running, Running},
		{Succeeded, Queued}, {Succeeded, Parked}, {Failed, Running}, {Cancelled, Running},
		{Failed, Succeeded}, {Cancelled, Failed},
	}
	for _, tt := range illegal {
		if CanMove(tt.from, tt.to) {
			t.Errorf("%s -> %s should be illegal", tt.from, tt.to)
		}
	}
	for _, from := range Statuses {
		for _, to := range Statuses {
			err := CheckMove(from, to)
			if CanMove(from, to) != (err == nil) {
				t.Errorf("CheckMove(%s, %s) = %v, CanMove %v", from, to, err, CanMove(from, to))
			}
			if err != nil && (!errors.Is(err, ErrIllegalMove) || !strings.Contains(err.Error(), string(from)+" to "+string(to))) {
				t.Errorf("CheckMove(%s, %s) = %v, want ErrIllegalMove naming both", from, to, err)
			}
			// A final job moves only when it is run again on request
			// (a retry), to a waiting status; a succeeded one never.
			if from.Final() && err == nil && (from == Succeeded || !to.Waiting()) {
				t.Errorf("%s is final but may move to %s", from, to)
			}
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
		{"unknown job field", `{"queue":"q","job":{"kind":"k","urgency":1}}`, "unknown_field", "job.urgency"},
		{"unknown field in a batch job", `{"queue":"q","jobs":[{"kind":"k"},{"kind":"k"},{"kind":"k","urgency":1}]}`, "unknown_field", "jobs[2].urgency"},
		{"key in upper case", `{"QUEUE":"q","job":{"kind":"k"}}`, "unknown_field", "QUEUE"},
		{"job key in another case", `{"queue":"q","Job":{"kind":"k"}}`, "unknown_field", "Job"},
		{"nested key in upper case", `{"queue":"q","job":{"KIND":"k"}}`, "unknown_field", "job.KIND"},
		{"key given twice", `{"queue":"q","queue":"r","job":{"kind":"k"}}`, "duplicate_field", "queue"},
		{"interval a boolean", `{"queue":"q","interval":true,"job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval overflows float", `{"queue":"q","interval":1e309,"job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval overflows duration", `{"queue":"q","interval":"9999999999h","job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval a number", `{"queue":"q","interval":5,"job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval repeats a unit", `{"queue":"q","interval":"1h1h","job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval below the floor", `{"queue":"q","interval":"1ns","job":{"kind":"k"}}`, "invalid_interval", "interval"},
		{"not_before a number", `{"queue":"q","job":{"kind":"k","not_before":1767225600}}`, "invalid_type", "job.not_before"},
		{"not_before no such day", `{"queue":"q","jobs":[{"kind":"k"},{"kind":"k","not_before":"2027-02-30T00:00:00Z"}]}`, "invalid_time", "jobs[1].not_before"},
		{"not_before without offset", `{"queue":"q","job":{"kind":"k","not_before":"2026-11-21T15:00:00"}}`, "invalid_time", "job.not_before"},
		{"not_before offset +99:99", `{"queue":"q","job":{"kind":"k","not_before":"2026-11-21T15:00:00+99:99"}}`, "invalid_time", "job.not_before"},
		{"not_before offset +24:00", `{"queue":"q","job":{"kind":"k","not_before":"2026-11-21T15:00:00+24:00"}}`, "invalid_time", "job.not_before"},
		{"not_before year 1", `{"queue":"q","job":{"kind":"k","not_before":"0001-01-01T00:00:00Z"}}`, "invalid_time", "job.not_before"},
		{"id wrong type", `{"queue":"q","jobs":[{"kind":"k"},{"kind":"k"},{"kind":"k"},{"id":5,"kind":"k"}]}`, "invalid_type", "jobs[3].id"},
		{"bad id", `{"queue":"q","jobs":[{"kind":"k"},{"id":"a/b","kind":"k"}]}`, "invalid_id", "jobs[1].id"},
		{"a schedule's occurrence's id", `{"queue":"q","jobs":[{"kind":"k"},{"id":"beat:2026-11-25T07:00:00.000Z","kind":"k"}]}`, "reserved_id", "jobs[1].id"},
		{"an occurrence's id, one job", `{"queue":"q","job":{"id":"morning_v2.eu:2026-01-01T08:00:00.123Z","kind":"k"}}`, "reserved_id", "job.id"},
		{"the occurrence id field", `{"queue":"q","occurrences":true,"job":{"id":"beat:2026-11-25T07:00:00.000Z","kind":"k"}}`, "unknown_field", "occurrences"},
		{"job null and jobs empty", `{"queue":"q","job":null,"jobs":[]}`, "no_jobs", "jobs"},
		{"queue null", `{"queue":null,"job":{"kind":"k"}}`, "invalid_type", "queue"},
		{"body an array", `[]`, "invalid_type", "body"},
		{"trailing data", `{"queue":"q","job":{"kind":"k"}} {}`, "malformed_json", "body"},
		{"target too long", `{"queue":"q","job":{"target":"https://x/` + strings.Repeat("a", slot.MaxTargetLen) + `"}}`, "invalid_target", "job.target"},
		{"target with user info", `{"queue":"q","job":{"target":"https://hooks.example.com@169.254.169.254/"}}`, "invalid_target", "job.target"},
		{"target decimal IPv4", `{"queue":"q","job":{"target":"http://2852039166/latest"}}`, "invalid_target", "job.target"},
		{"lambda star", `{"queue":"q","job":{"target":"lambda:*"}}`, "invalid_target", "job.target"},
		{"lambda traversal", `{"queue":"q","job":{"target":"lambda:../../x"}}`, "invalid_target", "job.target"},
		{"bare lambda arn", `{"queue":"q","job":{"target":"arn:aws:lambda:"}}`, "invalid_target", "job.target"},
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
		{"not_before not a time", `{"queue":"q","job":{"kind":"k","not_before":"tomorrow"}}`, "invalid_time", "job.not_before"},
		{"duplicate ids", `{"queue":"q","jobs":[{"id":"a","kind":"k"},{"id":"a","kind":"k"}]}`, "duplicate_id", "jobs[1].id"},
		{"wrong type", `{"queue":7,"job":{"kind":"k"}}`, "invalid_type", "queue"},
		{"traceparent short", `{"queue":"q","job":{"kind":"k","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"}}`, "invalid_traceparent", "job.traceparent"},
		{"traceparent upper case", `{"queue":"q","job":{"kind":"k","traceparent":"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}}`, "invalid_traceparent", "job.traceparent"},
		{"traceparent zero trace id", `{"queue":"q","jobs":[{"kind":"k"},{"kind":"k"},{"kind":"k"},{"kind":"k","traceparent":"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}]}`, "invalid_traceparent", "jobs[3].traceparent"},
		{"traceparent zero span id", `{"queue":"q","job":{"kind":"k","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"}}`, "invalid_traceparent", "job.traceparent"},
		{"traceparent version ff", `{"queue":"q","job":{"kind":"k","traceparent":"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`, "invalid_traceparent", "job.traceparent"},
		{"traceparent 00 with more", `{"queue":"q","job":{"kind":"k","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"}}`, "invalid_traceparent", "job.traceparent"},
		{"traceparent later version glued", `{"queue":"q","job":{"kind":"k","traceparent":"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"}}`, "invalid_traceparent", "job.traceparent"},
		{"traceparent wrong type", `{"queue":"q","job":{"kind":"k","traceparent":7}}`, "invalid_type", "job.traceparent"},
		{"tracestate alone", `{"queue":"q","job":{"kind":"k","tracestate":"rojo=1"}}`, "invalid_tracestate", "job.tracestate"},
		{"tracestate malformed", `{"queue":"q","jobs":[{"kind":"k"},{"kind":"k","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"no equals"}]}`, "invalid_tracestate", "jobs[1].tracestate"},
		{"priority over", `{"queue":"q","jobs":[{"kind":"k"},{"kind":"k"},{"kind":"k","priority":6}]}`, "invalid_priority", "jobs[2].priority"},
		{"priority negative", `{"queue":"q","job":{"kind":"k","priority":-1}}`, "invalid_priority", "job.priority"},
		{"priority a string", `{"queue":"q","job":{"kind":"k","priority":"high"}}`, "invalid_type", "job.priority"},
		{"traceparent in another case", `{"queue":"q","job":{"kind":"k","TraceParent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`, "unknown_field", "job.TraceParent"},
		{"debounce without a key", `{"queue":"q","job":{"kind":"k","debounce":"1s"}}`, "invalid_debounce", "job.debounce_key"},
		{"debounce key without a debounce", `{"queue":"q","jobs":[{"kind":"k"},{"kind":"k"},{"kind":"k"},{"kind":"k","debounce_key":"k"}]}`, "invalid_debounce", "jobs[3].debounce"},
		{"debounce zero", `{"queue":"q","job":{"kind":"k","debounce_key":"k","debounce":"0s"}}`, "invalid_debounce", "job.debounce"},
		{"debounce negative", `{"queue":"q","job":{"kind":"k","debounce_key":"k","debounce":"-1s"}}`, "invalid_debounce", "job.debounce"},
		{"debounce over an hour", `{"queue":"q","jobs":[{"kind":"k"},{"kind":"k","debounce_key":"k","debounce":"1h0m1s"}]}`, "invalid_debounce", "jobs[1].debounce"},
		{"debounce a number", `{"queue":"q","job":{"kind":"k","debounce_key":"k","debounce":5}}`, "invalid_value", "job.debounce"},
		{"debounce key malformed", `{"queue":"q","jobs":[{"kind":"k"},{"kind":"k"},{"kind":"k"},{"kind":"k","debounce_key":"a b","debounce":"1s"}]}`, "invalid_key", "jobs[3].debounce_key"},
		{"debounce with not_before", `{"queue":"q","job":{"kind":"k","debounce_key":"k","debounce":"1s","not_before":"2026-11-21T16:00:00Z"}}`, "invalid_debounce", "job.not_before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeEnqueue([]byte(tt.body), now)
			var ie *input.Error
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an InputError", err)
			}
			if ie.Code != tt.code || ie.Field != tt.field {
				t.Fatalf("err = %s/%s (%s), want %s/%s", ie.Code, ie.Field, ie.Message, tt.code, tt.field)
			}
		})
	}
}

// TestDecodeDebounce: a debounced spec's fields, at the longest
// debounce.
func TestDecodeDebounce(t *testing.T) {
	r, err := DecodeEnqueue([]byte(`{"queue":"q","job":{"kind":"k","debounce_key":"user:42","debounce":"1h"}}`), now)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Specs()[0]; s.DebounceKey != "user:42" || s.DebounceFor() != time.Hour {
		t.Fatalf("spec %+v", s)
	}
}

func TestDecodeEnqueueGood(t *testing.T) {
	r, err := DecodeEnqueue([]byte(`{"queue":"emails","interval":"250ms","jobs":[
		{"id":"welcome-42","kind":"email.send","payload":{"to":"a@example.com"}},
		{"target":"https://hooks.example.com/x","not_before":"2026-11-21t16:00:00z"}]}`), now)
	if err != nil {
		t.Fatal(err)
	}
	specs := r.Specs()
	if len(specs) != 2 || specs[0].ID != "welcome-42" || string(specs[0].Payload) != `{"to":"a@example.com"}` {
		t.Fatalf("specs = %+v", specs)
	}
	if time.Duration(*r.Interval) != 250*time.Millisecond || !specs[1].NotBefore.Equal(now.Add(2*time.Hour)) {
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
	if env.Ref() != (Ref{"q", "x"}) || env.Ticket != 7 || env.Attempt != 2 || !env.SlotAt.Equal(now) {
		t.Fatalf("envelope = %+v", env)
	}
	for _, bad := range []string{`{}`, `{"v":2,"queue":"q","job_id":"x","ticket":1,"attempt":1}`, `not json`} {
		if _, err := DecodeEnvelope([]byte(bad)); err == nil {
			t.Errorf("DecodeEnvelope(%s) accepted it", bad)
		}
	}
}

// FuzzDecodeEnqueue: any body decodes, or fails with an *input.Error
// whose field is the full path of the bad value: "body", or a path that
// reads one way (a.b[2]["x"]), whose every step but the last exists in the
// input, and whose last step exists too unless the error is about a
// required value that is missing. Keys along the path are the request's
// own, in their exact letter case.
func FuzzDecodeEnqueue(f *testing.F) {
	f.Add([]byte(`{"queue":"q","job":{"kind":"k"}}`))
	f.Add([]byte(`{"queue":"q","jobs":[{"id":"a","target":"https://x/y","payload":[1,2],"not_before":"2026-11-21T15:00:00Z"}]}`))
	f.Add([]byte(`{"queue":"q","interval":"-5ms","job":{}}`))
	f.Add([]byte(`{"queue":"q","jobs":[{"kind":"k"},{"KIND":"k"}]}`))
	f.Add([]byte(`{"queue":"q","job":{"kind":"k","not_before":"2027-02-30T00:00:00+24:00"}}`))
	f.Add([]byte(`{"queue":"q","interval":1e309,"job":{"kind":"k","x.y":1}}`))
	f.Add([]byte(`{"queue":"q","interval":5,"job":{"kind":"k"}}`))
	f.Add([]byte(`{"queue":"q","interval":"1h1h","jobs":[{"kind":"k"}]}`))
	f.Add([]byte(`{"queue":"q","interval":"1ns","job":{"kind":"k"}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"queue":"q","job":{"kind":"k","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"rojo=00f067aa0ba902b7"}}`))
	f.Add([]byte(`{"queue":"q","jobs":[{"kind":"k","traceparent":"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"},{"kind":"k","tracestate":"a=b"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeEnqueue(body, now)
		if err != nil {
			var ie *input.Error
			if !errors.As(err, &ie) || ie.Field == "" || ie.Code == "" || ie.Message == "" {
				t.Fatalf("error %v (%T) is not an InputError naming a field", err, err)
			}
			if err := checkFieldPath(body, ie); err != nil {
				t.Fatalf("%s: %s (%s): %v", body, ie.Field, ie.Code, err)
			}
			return
		}
		if len(r.Specs()) == 0 || len(r.Specs()) > MaxBatch {
			t.Fatalf("accepted %d jobs", len(r.Specs()))
		}
	})
}

var requestKeys = map[string]bool{
	"queue": true, "interval": true, "job": true, "jobs": true,
	"id": true, "kind": true, "target": true, "payload": true, "not_before": true, "key": true,
	"traceparent": true, "tracestate": true,
}

// missingCodes are the errors whose field may name a value the input left
// out: a required one.
var missingCodes = map[string]bool{"no_jobs": true, "no_target": true, "invalid_queue": true}

func checkFieldPath(body []byte, ie *input.Error) error {
	if ie.Field == "body" {
		return nil
	}
	steps, err := parsePath(ie.Field)
	if err != nil {
		return err
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("a field was named for input that is not JSON: %v", err)
	}
	for i, step := range steps {
		last := i == len(steps)-1
		if key, ok := step.(string); ok && !requestKeys[key] && !(last && ie.Code == "unknown_field") {
			return fmt.Errorf("step %q is not a request key", key)
		}
		var next any
		var found bool
		switch v := doc.(type) {
		case map[string]any:
			key, ok := step.(string)
			if !ok {
				return fmt.Errorf("index %v into an object", step)
			}
			next, found = v[key]
		case []any:
			n, ok := step.(int)
			if !ok {
				return fmt.Errorf("key %v into an array", step)
			}
			found = n < len(v)
			if found {
				next = v[n]
			}
		default:
			return fmt.Errorf("step %v into a scalar", step)
		}
		if !found {
			if last && missingCodes[ie.Code] {
				return nil
			}
			return fmt.Errorf("step %v does not exist in the input", step)
		}
		doc = next
	}
	return nil
}

// parsePath splits a.b[2]["x.y"] into "a", "b", 2, "x.y".
func parsePath(p string) ([]any, error) {
	var steps []any
	for i := 0; i < len(p); {
		switch {
		case p[i] == '[' && i+1 < len(p) && p[i+1] == '"':
			q, err := strconv.QuotedPrefix(p[i+1:])
			if err != nil || !strings.HasPrefix(p[i+1+len(q):], "]") {
				return nil, fmt.Errorf("bad quoted step in %q", p)
			}
			key, _ := strconv.Unquote(q)
			steps = append(steps, key)
			i += 1 + len(q) + 1
		case p[i] == '[':
			end := strings.IndexByte(p[i:], ']')
			n, err := strconv.Atoi(p[i+1 : i+max(end, 1)])
			if end < 0 || err != nil || n < 0 {
				return nil, fmt.Errorf("bad index in %q", p)
			}
			steps = append(steps, n)
			i += end + 1
		default:
			if p[i] == '.' {
				if len(steps) == 0 {
					return nil, fmt.Errorf("leading dot in %q", p)
				}
				i++
			} else if len(steps) > 0 {
				return nil, fmt.Errorf("missing dot in %q", p)
			}
			end := strings.IndexAny(p[i:], ".[")
			if end < 0 {
				end = len(p) - i
			}
			if end == 0 {
				return nil, fmt.Errorf("empty step in %q", p)
			}
			steps = append(steps, p[i:i+end])
			i += end
		}
	}
	return steps, nil
}

// TestTraceContextAccepted holds the forms W3C Trace Context allows:
// version 00, a later version with more after a dash, and a tracestate
// beside a traceparent. The request keeps them as given.
func TestTraceContextAccepted(t *testing.T) {
	for _, tt := range []struct{ parent, state string }{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"},
		{"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds", ""},
	} {
		body := fmt.Sprintf(`{"queue":"q","job":{"kind":"k","traceparent":%q,"tracestate":%q}}`, tt.parent, tt.state)
		r, err := DecodeEnqueue([]byte(body), now)
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if r.Job.TraceParent != tt.parent || r.Job.TraceState != tt.state {
			t.Errorf("%s: kept %q, %q", body, r.Job.TraceParent, r.Job.TraceState)
		}
	}
}

// Ids close to an occurrence's form but not of it stay a producer's; the
// form itself is a schedule's own enqueue's (Occurrences).
func TestOccurrenceIDsReserved(t *testing.T) {
	for _, id := range []string{"beat:2026-11-25", "beat:2026-11-25T07:00:00Z", "beat:2026-11-25T07:00:00.000Z:x", "order-2026-11-25T07:00:00.000Z", "beat:2026-11-25T07:00:00.000-0100"} {
		r := EnqueueRequest{Queue: "q", Job: &Spec{ID: id, Kind: "k"}}
		if IsOccurrenceID(id) {
			t.Errorf("%s taken for an occurrence's id", id)
		}
		if err := r.Validate(now); err != nil {
			t.Errorf("%s refused: %v", id, err)
		}
	}
	own := EnqueueRequest{Queue: "q", Jobs: []Spec{{ID: "beat:2026-11-25T07:00:00.000Z", Kind: "k"}}, Occurrences: true}
	if err := own.Validate(now); err != nil {
		t.Errorf("a schedule's own enqueue refused: %v", err)
	}
}
