package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/dev/testenv"
	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

func newHostile(t *testing.T) (*Handler, *engine.Engine, func() testenv.Written) {
	h, eng, st, tr := newEmbedded()
	ctx := context.Background()
	if _, err := eng.CreateQueue(ctx, "emails", slot.Config{Interval: time.Second, MaxAttempts: 5, Targets: []string{"https://hooks.example.com/*"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "emails", Job: &job.Spec{ID: "welcome-42", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	return h, eng, func() testenv.Written { return testenv.Contents(st, tr) }
}

// A hostile battery of admin requests through the handler and its real
// decoding: each is refused with a typed error naming the full path of
// the bad value, and nothing is written.
func TestHostileAdminWritesNothing(t *testing.T) {
	h, _, contents := newHostile(t)
	thousands := `["https://a.example.com/*"` + strings.Repeat(`,"https://a.example.com/*"`, 3000) + `]`
	cfg := func(op, c string) string { return fmt.Sprintf(`{"op":%q,"queue":"emails","config":%s}`, op, c) }
	create := func(c string) string { return fmt.Sprintf(`{"op":"create","queue":"fresh","config":%s}`, c) }
	pause := func(until string) string { return fmt.Sprintf(`{"op":"pause","queue":"emails","until":%s}`, until) }
	tests := []struct {
		name, body, code, field string
	}{
		{"empty", ``, "malformed_json", "body"},
		{"array", `[]`, "invalid_type", "body"},
		{"unknown op", `{"op":"explode","queue":"emails"}`, "invalid_op", "op"},
		{"OP", `{"OP":"delete","queue":"emails"}`, "unknown_field", "OP"},
		{"Queue", `{"op":"delete","Queue":"emails"}`, "unknown_field", "Queue"},
		{"op twice", `{"op":"stats","op":"delete","queue":"emails"}`, "duplicate_field", "op"},
		{"op a number", `{"op":1,"queue":"emails"}`, "invalid_type", "op"},
		// config
		{"config a string", create(`"interval=1s"`), "invalid_type", "config"},
		{"config an array", create(`[]`), "invalid_type", "config"},
		{"configure null", cfg("configure", `null`), "missing_config", "config"},
		{"configure without config", `{"op":"configure","queue":"emails"}`, "missing_config", "config"},
		{"configure reset a string", `{"op":"configure","queue":"emails","reset":"yes","config":{}}`, "invalid_type", "reset"},
		{"configure reset without config", `{"op":"configure","queue":"emails","reset":true}`, "missing_config", "config"},
		{"config INTERVAL", cfg("configure", `{"INTERVAL":"1s"}`), "unknown_field", "config.INTERVAL"},
		{"config unknown", create(`{"intervall":"1s"}`), "unknown_field", "config.intervall"},
		{"config interval true", create(`{"interval":true}`), "invalid_duration", "config.interval"},
		{"config interval 1e309", create(`{"interval":1e309}`), "invalid_duration", "config.interval"},
		{"config interval huge", cfg("configure", `{"interval":"9999999999h"}`), "invalid_duration", "config.interval"},
		{"config interval zero", cfg("configure", `{"interval":"0s"}`), "invalid_interval", "config.interval"},
		{"config interval over a day", create(`{"interval":"48h"}`), "invalid_interval", "config.interval"},
		{"config interval a number", create(`{"interval":5}`), "invalid_duration", "config.interval"},
		{"configure interval a number", cfg("configure", `{"interval":1000}`), "invalid_duration", "config.interval"},
		{"config interval 1h1h", create(`{"interval":"1h1h"}`), "invalid_duration", "config.interval"},
		{"config interval 30m1h", cfg("configure", `{"interval":"30m1h"}`), "invalid_duration", "config.interval"},
		{"config interval 1ns", create(`{"interval":"1ns"}`), "invalid_interval", "config.interval"},
		{"configure interval 999us", cfg("configure", `{"interval":"999us"}`), "invalid_interval", "config.interval"},
		{"create interval zero", create(`{"interval":"0s"}`), "invalid_interval", "config.interval"},
		{"config skew zero", cfg("configure", `{"skew":"0s"}`), "invalid_skew", "config.skew"},
		{"config skew a number", create(`{"skew":2}`), "invalid_duration", "config.skew"},
		{"config max_attempts 0", cfg("configure", `{"max_attempts":0}`), "invalid_max_attempts", "config.max_attempts"},
		{"config backoff zero", cfg("configure", `{"backoff":"0s"}`), "invalid_backoff", "config.backoff"},
		{"config max_backoff zero", create(`{"max_backoff":"0s"}`), "invalid_backoff", "config.max_backoff"},
		{"config retention zero", create(`{"retention":"0s"}`), "invalid_retention", "config.retention"},
		{"config target_timeout zero", cfg("configure", `{"target_timeout":"0s"}`), "invalid_target_timeout", "config.target_timeout"},
		{"config target_timeout a number", create(`{"target_timeout":30}`), "invalid_duration", "config.target_timeout"},
		{"config skew over interval", cfg("configure", `{"interval":"1s","skew":"2s"}`), "invalid_skew", "config.skew"},
		{"config max_attempts fraction", create(`{"max_attempts":2.5}`), "invalid_type", "config.max_attempts"},
		{"config max_attempts zero", create(`{"max_attempts":-1}`), "invalid_max_attempts", "config.max_attempts"},
		{"config retention tiny", create(`{"retention":"1s"}`), "invalid_retention", "config.retention"},
		{"config backoff negative", create(`{"backoff":"-1s"}`), "invalid_backoff", "config.backoff"},
		{"config max_running negative", create(`{"max_running":-1}`), "invalid_max_running", "config.max_running"},
		{"config max_running over the limit", create(`{"max_running":101}`), "invalid_max_running", "config.max_running"},
		{"config max_running a string", create(`{"max_running":"3"}`), "invalid_type", "config.max_running"},
		{"config target_timeout huge", create(`{"target_timeout":"1h"}`), "invalid_target_timeout", "config.target_timeout"},
		{"config max_slow_downs zero", cfg("configure", `{"max_slow_downs":0}`), "invalid_max_slow_downs", "config.max_slow_downs"},
		{"config max_slow_downs huge", create(`{"max_slow_downs":5000}`), "invalid_max_slow_downs", "config.max_slow_downs"},
		{"config max_slow_downs negative", cfg("configure", `{"max_slow_downs":-1}`), "invalid_max_slow_downs", "config.max_slow_downs"},
		{"config retry_after_default zero", create(`{"retry_after_default":"0s"}`), "invalid_retry_after_default", "config.retry_after_default"},
		{"config retry_after_default huge", cfg("configure", `{"retry_after_default":"24h"}`), "invalid_retry_after_default", "config.retry_after_default"},
		{"targets star", create(`{"targets":["*"]}`), "invalid_target", "config.targets[0]"},
		{"targets file and ftp", create(`{"targets":["https://ok.example.com/*","file:///*","ftp://*"]}`), "invalid_target", "config.targets[1]"},
		{"targets host prefix", create(`{"targets":["https://hooks.example.com*"]}`), "invalid_target", "config.targets[0]"},
		{"targets lambda star", create(`{"targets":["lambda:*"]}`), "invalid_target", "config.targets[0]"},
		{"targets bare arn", create(`{"targets":["arn:aws:lambda:"]}`), "invalid_target", "config.targets[0]"},
		{"targets a number", create(`{"targets":["lambda:x",5]}`), "invalid_type", "config.targets[1]"},
		{"targets thousands", create(`{"targets":` + thousands + `}`), "too_many_targets", "config.targets"},
		{"target pattern too long", create(fmt.Sprintf(`{"targets":[%q]}`, "https://a.example.com/"+strings.Repeat("p", slot.MaxTargetLen))), "invalid_target", "config.targets[0]"},
		{"allow_networks host bits", create(`{"allow_networks":["10.1.2.3/8"]}`), "invalid_network", "config.allow_networks[0]"},
		{"allow_networks words", cfg("configure", `{"allow_networks":["10.0.0.0/8","everything"]}`), "invalid_network", "config.allow_networks[1]"},
		{"allow_networks mapped IPv4", create(`{"allow_networks":["::ffff:127.0.0.0/104"]}`), "invalid_network", "config.allow_networks[0]"},
		{"allow_networks 6to4", cfg("configure", `{"allow_networks":["::/0","2002::/16"]}`), "invalid_network", "config.allow_networks[1]"},
		{"create existing", `{"op":"create","queue":"emails"}`, "queue_exists", "queue"},
		{"create bad name", `{"op":"create","queue":"no spaces"}`, "invalid_queue", "queue"},
		// until
		{"until a number", pause(`1767225600`), "invalid_type", "until"},
		{"until tomorrow", pause(`"tomorrow"`), "invalid_time", "until"},
		{"until year 1", pause(`"0001-01-01T00:00:00Z"`), "invalid_time", "until"},
		{"until year 9999", pause(`"9999-12-31T23:59:59Z"`), "invalid_time", "until"},
		{"until +24:00", pause(`"2099-01-01T00:00:00+24:00"`), "invalid_time", "until"},
		{"until +99:99", pause(`"2099-01-01T00:00:00+99:99"`), "invalid_time", "until"},
		{"until no offset", pause(`"2099-01-01T00:00:00"`), "invalid_time", "until"},
		{"until Feb 30", pause(`"2099-02-30T00:00:00Z"`), "invalid_time", "until"},
		{"until in the past", pause(`"2001-01-01T00:00:00Z"`), "invalid_until", "until"},
		// jobs
		{"job_id a number", `{"op":"get","queue":"emails","job_id":42}`, "invalid_type", "job_id"},
		{"job_id bad", `{"op":"cancel","queue":"emails","job_id":"../x"}`, "invalid_id", "job_id"},
		{"job_id too long", fmt.Sprintf(`{"op":"get","queue":"emails","job_id":%q}`, strings.Repeat("j", 129)), "invalid_id", "job_id"},
		{"job_id missing", `{"op":"cancel","queue":"emails"}`, "invalid_id", "job_id"},
		{"limit negative", `{"op":"list","queue":"emails","limit":-1}`, "invalid_limit", "limit"},
		{"limit huge", `{"op":"list","queue":"emails","limit":99999999999999999999}`, "invalid_type", "limit"},
		{"after negative", `{"op":"list","queue":"emails","after":-5}`, "invalid_after", "after"},
		{"status bad", `{"op":"list","queue":"emails","status":"sleeping"}`, "invalid_status", "status"},
		// retry and redrive
		{"retry a waiting job", `{"op":"retry","queue":"emails","job_ids":["welcome-42"]}`, "not_retryable", "job_ids[0]"},
		{"retry a missing job", `{"op":"retry","queue":"emails","job_ids":["nope"]}`, "job_not_found", "job_ids[0]"},
		{"retry a missing queue", `{"op":"retry","queue":"nope","job_ids":["welcome-42"]}`, "queue_not_found", "queue"},
		{"retry JOB_IDS", `{"op":"retry","queue":"emails","JOB_IDS":["welcome-42"]}`, "unknown_field", "JOB_IDS"},
		{"retry an id a number", `{"op":"retry","queue":"emails","job_ids":[42]}`, "invalid_type", "job_ids[0]"},
		{"retry a bad id", `{"op":"retry","queue":"emails","job_ids":["a b"]}`, "invalid_id", "job_ids[0]"},
		{"retry failed a string", `{"op":"retry","queue":"emails","failed":"yes"}`, "invalid_type", "failed"},
		{"retry up_to negative", `{"op":"retry","queue":"emails","failed":true,"up_to":-1}`, "invalid_up_to", "up_to"},
		{"retry by too long", `{"op":"retry","queue":"emails","failed":true,"by":"` + strings.Repeat("x", 65) + `"}`, "invalid_by", "by"},
		{"redrive negative", `{"op":"redrive","limit":-1}`, "invalid_limit", "limit"},
		// a missing queue is queue_not_found whatever the operation
		{"get, missing queue", `{"op":"get","queue":"nope","job_id":"welcome-42"}`, "queue_not_found", "queue"},
		{"cancel, missing queue", `{"op":"cancel","queue":"nope","job_id":"welcome-42"}`, "queue_not_found", "queue"},
		{"list, missing queue", `{"op":"list","queue":"nope"}`, "queue_not_found", "queue"},
		{"stats, missing queue", `{"op":"stats","queue":"nope"}`, "queue_not_found", "queue"},
		{"pause, missing queue", `{"op":"pause","queue":"nope"}`, "queue_not_found", "queue"},
		{"resume, missing queue", `{"op":"resume","queue":"nope"}`, "queue_not_found", "queue"},
		{"configure, missing queue", `{"op":"configure","queue":"nope","config":{}}`, "queue_not_found", "queue"},
		{"purge, missing queue", `{"op":"purge","queue":"nope"}`, "queue_not_found", "queue"},
		{"delete, missing queue", `{"op":"delete","queue":"nope"}`, "queue_not_found", "queue"},
		{"get, missing job", `{"op":"get","queue":"emails","job_id":"nope"}`, "job_not_found", "job_id"},
		{"cancel, missing job", `{"op":"cancel","queue":"emails","job_id":"nope"}`, "job_not_found", "job_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRefusedWritingNothing(t, h, tt.body, tt.code, tt.field, func() any { return contents() })
		})
	}
}

// An answer names what is missing once, in the same words for every
// operation.
func TestNotFoundMessages(t *testing.T) {
	h, _, _ := newHostile(t)
	for _, op := range []string{"pause", "resume", "purge", "delete", "stats", "list", "configure"} {
		body := fmt.Sprintf(`{"op":%q,"queue":"nope"}`, op)
		if op == "configure" {
			body = `{"op":"configure","queue":"nope","config":{}}`
		}
		r, err := h.Handle(context.Background(), json.RawMessage(body))
		if err != nil || r.Error == nil || r.Error.Message != "queue nope not found" {
			t.Errorf("%s: got %+v, %v; want the message %q", op, r.Error, err, "queue nope not found")
		}
	}
	r, _ := h.Handle(context.Background(), json.RawMessage(`{"op":"get","queue":"emails","job_id":"nope"}`))
	if r.Error == nil || r.Error.Message != "job nope not found in queue emails" {
		t.Errorf("get: got %+v", r.Error)
	}
}

// stats answers every count it has, zeros included: waiting tickets from
// the queue's counters, and the listed statuses (parked, failed).
func TestStatsCounts(t *testing.T) {
	h, eng, _ := newHostile(t)
	ctx := context.Background()
	if _, err := eng.CancelJob(ctx, job.Ref{Queue: "emails", ID: "welcome-42"}); err != nil {
		t.Fatal(err)
	}
	r, err := h.Handle(ctx, json.RawMessage(`{"op":"stats","queue":"emails"}`))
	if err != nil || r.Stats == nil || r.Stats.Parked != 0 || r.Stats.Failed != 0 {
		t.Fatalf("stats %+v, %v; want nothing parked or failed", r.Stats, err)
	}
	b, _ := json.Marshal(r.Stats)
	for _, k := range []string{`"waiting":`, `"parked":0`, `"failed":0`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("stats JSON %s lacks %s", b, k)
		}
	}
}

// configure with config null used to reset the queue to its defaults.
func TestConfigureNullKeepsTheConfig(t *testing.T) {
	h, eng, _ := newHostile(t)
	ctx := context.Background()
	r, _ := h.Handle(ctx, json.RawMessage(`{"op":"configure","queue":"emails","config":null}`))
	q, err := eng.Queue(ctx, "emails")
	if r.Error == nil || err != nil || q.Config.MaxAttempts != 5 {
		t.Fatalf("answer %+v; config now %+v (%v)", r.Error, q.Config, err)
	}
}
