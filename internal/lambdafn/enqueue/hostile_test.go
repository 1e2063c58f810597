package enqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
)

// A hostile battery through the handler and its real decoding: every
// request is refused with a typed error naming the full path of the bad
// value, and nothing is written: no ticket, no queue, no job, no message
// (docs/guarantees.md §10, §11).
func TestHostileEnqueueWritesNothing(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	tr := memstore.NewTransport(memstore.TransportOptions{})
	eng := engine.New(engine.Options{State: st, Transport: tr})
	h := &Handler{Engine: eng}
	for name, targets := range map[string][]string{
		"strict": {"https://hooks.example.com/*", "lambda:send-*"},
		"open":   {"http://*", "https://*"},
	} {
		if _, err := eng.CreateQueue(ctx, name, slot.Config{Interval: time.Second, Targets: targets}); err != nil {
			t.Fatal(err)
		}
	}
	// v6 lets its targets reach any IPv6 address: not IPv4 addresses in
	// IPv6 form, which are judged by their IPv4 part.
	if _, err := eng.CreateQueue(ctx, "v6", slot.Config{Interval: time.Second, Targets: []string{"http://*:*"}, AllowNetworks: []string{"::/0"}}); err != nil {
		t.Fatal(err)
	}
	// A job each, so the queues have tickets a refused call could move.
	for _, q := range []string{"strict", "open", "v6"} {
		if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: q, Job: &job.Spec{ID: "seed", Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
	}

	long := strings.Repeat("a", slot.MaxTargetLen)
	big := `"` + strings.Repeat("x", job.MaxPayload) + `"`
	many := `[` + strings.TrimSuffix(strings.Repeat(`{"kind":"k"},`, job.MaxBatch+1), ",") + `]`
	ok := `{"kind":"k"}`
	in := func(q, jobJSON string) string { return fmt.Sprintf(`{"queue":%q,"job":%s}`, q, jobJSON) }
	target := func(q, t string) string { return in(q, fmt.Sprintf(`{"target":%q}`, t)) }
	batch := func(q string, jobs ...string) string {
		return fmt.Sprintf(`{"queue":%q,"jobs":[%s]}`, q, strings.Join(jobs, ","))
	}

	tests := []struct {
		name, body, code, field string
	}{
		// The document itself.
		{"empty", ``, "malformed_json", "body"},
		{"not JSON", `queue=strict`, "malformed_json", "body"},
		{"truncated", `{"queue":"strict","job":{"kind":`, "malformed_json", "body"},
		{"an array", `[{"queue":"strict"}]`, "invalid_type", "body"},
		{"a string", `"strict"`, "invalid_type", "body"},
		{"null", `null`, "invalid_type", "body"},
		{"trailing object", in("strict", ok) + `{}`, "malformed_json", "body"},
		// Keys: unknown, other letter case, twice.
		{"unknown top-level", `{"queue":"strict","job":{"kind":"k"},"priority":1}`, "unknown_field", "priority"},
		{"QUEUE and KIND", `{"QUEUE":"fresh","Job":{"KIND":"k"}}`, "unknown_field", "QUEUE"},
		{"Job", `{"queue":"fresh","Job":{"kind":"k"}}`, "unknown_field", "Job"},
		{"job.KIND", in("fresh", `{"KIND":"k"}`), "unknown_field", "job.KIND"},
		{"jobs[2].Payload", batch("strict", ok, ok, `{"kind":"k","Payload":1}`), "unknown_field", "jobs[2].Payload"},
		{"jobs[1].priority", batch("strict", ok, `{"kind":"k","priority":9}`), "invalid_priority", "jobs[1].priority"},
		{"key with a dot", in("strict", `{"kind":"k","a.b":1}`), "unknown_field", `job["a.b"]`},
		{"queue twice", `{"queue":"strict","queue":"other","job":{"kind":"k"}}`, "duplicate_field", "queue"},
		{"kind twice", in("strict", `{"kind":"k","kind":"j"}`), "duplicate_field", "job.kind"},
		// Wrong types.
		{"queue a number", `{"queue":7,"job":{"kind":"k"}}`, "invalid_type", "queue"},
		{"queue null", `{"queue":null,"job":{"kind":"k"}}`, "invalid_type", "queue"},
		{"job a string", `{"queue":"strict","job":"k"}`, "invalid_type", "job"},
		{"jobs an object", `{"queue":"strict","jobs":{"kind":"k"}}`, "invalid_type", "jobs"},
		{"jobs[3].id a number", batch("strict", ok, ok, ok, `{"id":3,"kind":"k"}`), "invalid_type", "jobs[3].id"},
		{"kind an array", in("strict", `{"kind":["k"]}`), "invalid_type", "job.kind"},
		{"target an object", in("strict", `{"target":{"url":"https://hooks.example.com/"}}`), "invalid_type", "job.target"},
		// Durations.
		{"interval true", `{"queue":"fresh","interval":true,"job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval 1e309", `{"queue":"fresh","interval":1e309,"job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval 1e30 ms", `{"queue":"fresh","interval":1e30,"job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval 9999999999h", `{"queue":"fresh","interval":"9999999999h","job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval words", `{"queue":"fresh","interval":"soon","job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval an object", `{"queue":"fresh","interval":{},"job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval zero", `{"queue":"fresh","interval":"0s","job":{"kind":"k"}}`, "invalid_interval", "interval"},
		{"interval over a day", `{"queue":"fresh","interval":"25h","job":{"kind":"k"}}`, "invalid_interval", "interval"},
		{"interval a number", `{"queue":"fresh","interval":1000,"job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval 1h1h", `{"queue":"fresh","interval":"1h1h","job":{"kind":"k"}}`, "invalid_duration", "interval"},
		{"interval 1ns", `{"queue":"fresh","interval":"1ns","job":{"kind":"k"}}`, "invalid_interval", "interval"},
		{"interval 999us on a batch", `{"queue":"fresh","interval":"999us","jobs":[{"kind":"k"}]}`, "invalid_interval", "interval"},
		// The limit of a queue the call creates: one form, in range.
		{"rate words", `{"queue":"fresh","rate":"fast","job":{"kind":"k"}}`, "invalid_rate", "rate"},
		{"rate a number", `{"queue":"fresh","rate":100,"job":{"kind":"k"}}`, "invalid_rate", "rate"},
		{"rate 0/1s", `{"queue":"fresh","rate":"0/1s","job":{"kind":"k"}}`, "invalid_rate", "rate"},
		{"rate 1h1h", `{"queue":"fresh","rate":"100/1h1h","job":{"kind":"k"}}`, "invalid_rate", "rate"},
		{"rate over 1000/s", `{"queue":"fresh","rate":"2001/1s","job":{"kind":"k"}}`, "invalid_rate", "rate"},
		{"window over a month", `{"queue":"fresh","window":"10/800h","job":{"kind":"k"}}`, "invalid_window", "window"},
		{"window too many", `{"queue":"fresh","window":"100001/1h","jobs":[{"kind":"k"}]}`, "invalid_window", "window"},
		{"window words", `{"queue":"fresh","window":"lots","job":{"kind":"k"}}`, "invalid_rate", "window"},
		{"burst without rate", `{"queue":"fresh","burst":5,"job":{"kind":"k"}}`, "invalid_burst", "burst"},
		{"burst with interval", `{"queue":"fresh","interval":"1s","burst":5,"job":{"kind":"k"}}`, "invalid_burst", "burst"},
		{"burst over 100", `{"queue":"fresh","rate":"10/1s","burst":101,"job":{"kind":"k"}}`, "invalid_burst", "burst"},
		{"burst negative", `{"queue":"fresh","rate":"10/1s","burst":-1,"job":{"kind":"k"}}`, "invalid_burst", "burst"},
		{"burst a string", `{"queue":"fresh","rate":"10/1s","burst":"5","job":{"kind":"k"}}`, "invalid_type", "burst"},
		{"interval and rate", `{"queue":"fresh","interval":"1s","rate":"10/1s","job":{"kind":"k"}}`, "invalid_limit", "rate"},
		{"rate and window", `{"queue":"fresh","rate":"10/1s","window":"100/1h","job":{"kind":"k"}}`, "invalid_limit", "window"},
		{"interval and window", `{"queue":"strict","interval":"1s","window":"100/1h","job":{"kind":"k"}}`, "invalid_limit", "window"},
		{"rate on an existing queue, out of range", `{"queue":"strict","rate":"1/1000h","job":{"kind":"k"}}`, "invalid_rate", "rate"},
		// Times.
		{"not_before a number", in("strict", `{"kind":"k","not_before":1767225600}`), "invalid_type", "job.not_before"},
		{"not_before Feb 30", in("strict", `{"kind":"k","not_before":"2027-02-30T00:00:00Z"}`), "invalid_time", "job.not_before"},
		{"not_before no offset", in("strict", `{"kind":"k","not_before":"2026-12-01T00:00:00"}`), "invalid_time", "job.not_before"},
		{"not_before +99:99", in("strict", `{"kind":"k","not_before":"2026-12-01T00:00:00+99:99"}`), "invalid_time", "job.not_before"},
		{"not_before +24:00", in("strict", `{"kind":"k","not_before":"2026-12-01T00:00:00+24:00"}`), "invalid_time", "job.not_before"},
		{"not_before date only", batch("strict", ok, `{"kind":"k","not_before":"2026-12-01"}`), "invalid_time", "jobs[1].not_before"},
		{"not_before year 1", in("strict", `{"kind":"k","not_before":"0001-01-01T00:00:00Z"}`), "invalid_time", "job.not_before"},
		{"not_before year 9999", in("strict", `{"kind":"k","not_before":"9999-12-31T23:59:59Z"}`), "invalid_time", "job.not_before"},
		{"not_before beyond a year", in("strict", `{"kind":"k","not_before":"2150-01-01T00:00:00Z"}`), "invalid_not_before", "job.not_before"},
		// Names, ids, sizes.
		{"queue with a slash", in("a/b", ok), "invalid_queue", "queue"},
		{"queue too long", in(strings.Repeat("q", 81), ok), "invalid_queue", "queue"},
		{"no queue", `{"job":{"kind":"k"}}`, "invalid_queue", "queue"},
		{"no jobs", `{"queue":"strict"}`, "no_jobs", "jobs"},
		{"job and jobs", `{"queue":"strict","job":{"kind":"k"},"jobs":[{"kind":"k"}]}`, "invalid_request", "jobs"},
		{"too many jobs", `{"queue":"strict","jobs":` + many + `}`, "too_many_jobs", "jobs"},
		{"key too long", in("strict", fmt.Sprintf(`{"kind":"k","key":%q}`, strings.Repeat("k", 201))), "invalid_key", "job.key"},
		{"key with a space", batch("strict", ok, `{"kind":"k","key":"customer 7"}`), "invalid_key", "jobs[1].key"},
		{"key with a newline", in("strict", `{"kind":"k","key":"a\nb"}`), "invalid_key", "job.key"},
		{"key a number", in("strict", `{"kind":"k","key":7}`), "invalid_type", "job.key"},
		{"key in capitals", in("strict", `{"kind":"k","KEY":"a"}`), "unknown_field", "job.KEY"},
		{"id too long", in("strict", fmt.Sprintf(`{"id":%q,"kind":"k"}`, strings.Repeat("i", 129))), "invalid_id", "job.id"},
		{"duplicate ids", batch("strict", `{"id":"a","kind":"k"}`, `{"id":"a","kind":"k"}`), "duplicate_id", "jobs[1].id"},
		{"payload over the limit", batch("strict", ok, `{"kind":"k","payload":`+big+`}`), "payload_too_large", "jobs[1].payload"},
		{"no kind or target", batch("strict", ok, `{"payload":1}`), "no_target", "jobs[1].kind"},
		{"kind and target", in("strict", `{"kind":"k","target":"lambda:send-x"}`), "invalid_target", "job.target"},
		{"target too long", target("open", "https://example.com/"+long), "invalid_target", "job.target"},
		// Targets the allow-list does not allow: by parsed URL, not by prefix.
		{"not allowed, fresh queue", target("fresh", "https://hooks.example.com/x"), "target_not_allowed", "job.target"},
		{"userinfo trick", target("strict", "https://hooks.example.com@169.254.169.254/latest/meta-data/"), "invalid_target", "job.target"},
		{"suffix trick", target("strict", "https://hooks.example.com.evil.example/x"), "target_not_allowed", "job.target"},
		{"other port", target("strict", "https://hooks.example.com:8443/x"), "target_not_allowed", "job.target"},
		{"other scheme", target("strict", "http://hooks.example.com/x"), "target_not_allowed", "job.target"},
		{"lambda not listed", target("strict", "lambda:other"), "target_not_allowed", "job.target"},
		{"lambda star", target("strict", "lambda:*"), "invalid_target", "job.target"},
		{"lambda traversal", target("strict", "lambda:../../x"), "invalid_target", "job.target"},
		{"bare arn", target("strict", "arn:aws:lambda:"), "invalid_target", "job.target"},
		{"ftp", target("open", "ftp://example.com/x"), "invalid_target", "job.target"},
		{"file", target("open", "file:///etc/passwd"), "invalid_target", "job.target"},
		// SSRF under http://*: refused address classes and odd host forms.
		{"metadata", target("open", "http://169.254.169.254/latest/meta-data/iam/"), "target_not_allowed", "job.target"},
		{"metadata v6", target("open", "http://[fd00:ec2::254]/latest/meta-data/"), "target_not_allowed", "job.target"},
		{"metadata mapped", target("open", "http://[::ffff:a9fe:a9fe]/latest/"), "target_not_allowed", "job.target"},
		{"decimal IPv4", target("open", "http://2852039166/latest/meta-data/"), "invalid_target", "job.target"},
		{"hex IPv4", target("open", "http://0xa9fea9fe/latest/"), "invalid_target", "job.target"},
		{"octal IPv4", target("open", "http://0251.0376.0251.0376/latest/"), "invalid_target", "job.target"},
		{"short IPv4", target("open", "http://127.1/"), "invalid_target", "job.target"},
		{"docker socket port", target("open", "http://127.0.0.1:2375/containers/json"), "target_not_allowed", "job.target"},
		{"loopback", target("open", "http://127.0.0.1/"), "target_not_allowed", "job.target"},
		{"localhost", target("open", "http://localhost/"), "target_not_allowed", "job.target"},
		{"private", batch("open", `{"target":"https://example.com/"}`, `{"target":"http://10.0.0.1/"}`), "target_not_allowed", "jobs[1].target"},
		{"unspecified", target("open", "http://0.0.0.0/"), "target_not_allowed", "job.target"},
		{"link-local v6", target("open", "http://[fe80::1]/"), "target_not_allowed", "job.target"},
		{"metadata mapped under ::/0", target("v6", "http://[::ffff:169.254.169.254]/latest/meta-data/"), "target_not_allowed", "job.target"},
		{"loopback mapped under ::/0", target("v6", "http://[::ffff:127.0.0.1]:2375/"), "target_not_allowed", "job.target"},
		{"loopback compatible under ::/0", batch("v6", ok, `{"target":"http://[::127.0.0.1]:2375/"}`), "target_not_allowed", "jobs[1].target"},
		{"loopback compatible", target("open", "http://[::127.0.0.1]/"), "target_not_allowed", "job.target"},
		{"metadata 6to4 under ::/0", target("v6", "http://[2002:a9fe:a9fe::]/"), "target_not_allowed", "job.target"},
		{"path traversal", target("strict", "https://hooks.example.com/x/../../admin"), "invalid_target", "job.target"},
	}
	if len(tests) < 60 {
		t.Fatalf("only %d cases", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := testenv.Contents(st, tr)
			resp, err := h.Handle(ctx, json.RawMessage(tt.body))
			if err != nil {
				t.Fatalf("function error %v; want an error answer", err)
			}
			if resp.Error == nil || resp.Error.Code != tt.code || resp.Error.Field != tt.field {
				t.Fatalf("got %+v, want %s on %s", resp.Error, tt.code, tt.field)
			}
			if strings.Contains(resp.Error.Message, "slot.") || strings.Contains(resp.Error.Message, "json:") {
				t.Errorf("message %q speaks Go", resp.Error.Message)
			}
			if after := testenv.Contents(st, tr); !reflect.DeepEqual(before, after) {
				t.Errorf("a refused call wrote:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

// Valid input the strict decoder must still accept.
func TestValidInputAccepted(t *testing.T) {
	h, _ := newHandler()
	now := time.Now().UTC()
	for _, body := range []string{
		fmt.Sprintf(`{"queue":"q","job":{"kind":"k","not_before":%q}}`, strings.ToLower(now.Add(time.Hour).Format(time.RFC3339))),
		fmt.Sprintf(`{"queue":"q","job":{"kind":"k","not_before":%q}}`, now.Add(time.Hour).In(time.FixedZone("", -(23*3600+59*60))).Format(time.RFC3339Nano)),
		`{"queue":"q","interval":"250ms","jobs":[{"kind":"k","payload":null},{"kind":"k","payload":{"a":[1,2]}}],"job":null}`,
	} {
		resp, err := h.Handle(context.Background(), json.RawMessage(body))
		if err != nil || resp.Error != nil {
			t.Errorf("%s: %v %+v", body, err, resp.Error)
		}
	}
}
