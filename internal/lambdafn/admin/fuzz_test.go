package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// adminKeys are the request's keys: every field an error names starts
// with one of them.
var adminKeys = map[string]bool{
	"op": true, "queue": true, "config": true, "until": true,
	"job_id": true, "status": true, "after": true, "limit": true, "reset": true,
	"key": true, "keys": true,
	"name": true, "schedule": true, "by": true, "job_ids": true, "failed": true, "up_to": true, "since": true, "no_activity": true,
}

// requiredCodes are the errors whose field may name a value the request
// left out, or one the operation fills in (the queue a missing queue names,
// a missing status's default).
var requiredCodes = map[string]bool{
	"invalid_op": true, "invalid_queue": true, "missing_config": true, "invalid_id": true,
	"queue_not_found": true, "job_not_found": true, "status_not_listed": true, "not_waiting": true,
	"invalid_key": true, "invalid_keys": true,
	"invalid_schedule_name": true, "schedule_not_found": true, "missing_schedule": true, "no_rule": true, "no_target": true,
}

// FuzzAdmin feeds the admin handler any body, through its real decoding,
// and checks the field-path property: every refusal is a typed error whose
// field is "body" or a path into the request — one that the input holds,
// under its exact key, unless the value is a required one it left out.
func FuzzAdmin(f *testing.F) {
	for _, s := range []string{
		`{"op":"stats","queue":"emails"}`,
		`{"op":"pause","queue":"emails","until":"2099-01-01T00:00:00Z"}`,
		`{"op":"configure","queue":"emails","config":{"interval":"-1s"}}`,
		`{"op":"create","queue":"q3","config":{"interval":5,"skew":"0s"}}`,
		`{"op":"configure","queue":"emails","config":{"max_attempts":0,"backoff":"1m1m"}}`,
		`{"op":"configure","queue":"emails","reset":1,"config":{"targets":[]}}`,
		`{"op":"create","queue":"q2","config":{"targets":["*"]}}`,
		`{"op":"list","queue":"emails","status":"queued","limit":-1}`,
		`{"OP":"stats","queue":"emails"}`,
		`{"op":"get","queue":"emails","job_id":"welcome-42","x":1}`,
		`{"op":"cancel","queue":"nope","job_id":"a"}`,
		`{"op":"list_keys","queue":"emails"}`,
		`{"op":"get_key","queue":"emails","key":"a b"}`,
		`{"op":"set_key_limits","queue":"emails","keys":[{"key":"a","limits":[{"rate":"5/1s","burst":1}]},{"key":"b","limits":null}]}`,
		`{"op":"set_key_limits","queue":"emails","keys":[{"key":"a","limits":[{"rate":"x"}]},{"key":"b"}]}`,
		`{"op":"create_schedule","queue":"emails","name":"s","schedule":{"cron":"0 8 * * *","tz":"Europe/Paris","job":{"kind":"k"}}}`,
		`{"op":"create_schedule","queue":"emails","name":"s","schedule":{"every":"1s","start":"2099-01-01T00:00:00Z","job":{"kind":"k"}}}`,
		`{"op":"pause_schedule","queue":"emails","name":"s"}`,
		`[]`, `null`, `{"op":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h, _, _ := newHostile(t)
		r, err := h.Handle(context.Background(), json.RawMessage(body))
		if err != nil || r.Error == nil {
			return // a Go error is an internal failure the handler reports as such; success is fine
		}
		e := r.Error
		if e.Code == "" || e.Field == "" || e.Message == "" {
			t.Fatalf("%s: error %+v does not name its code, field and message", body, e)
		}
		if e.Field == "body" {
			return
		}
		top := e.Field
		if strings.HasPrefix(top, `["`) {
			// An odd key is quoted: ["a.b"].
			q, err := strconv.QuotedPrefix(top[1:])
			if err == nil {
				top, err = strconv.Unquote(q)
			}
			if err != nil {
				t.Fatalf("%s: field %q is no path: %v", body, e.Field, err)
			}
		} else if i := strings.IndexAny(top, ".["); i >= 0 {
			top = top[:i]
		}
		if !adminKeys[top] && e.Code != "unknown_field" {
			t.Fatalf("%s: field %q does not start with a request key", body, e.Field)
		}
		if requiredCodes[e.Code] {
			return
		}
		var doc map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(body))
		if dec.Decode(&doc) != nil {
			t.Fatalf("%s: field %q named for a body that is no JSON object", body, e.Field)
		}
		if _, ok := doc[top]; !ok {
			t.Fatalf("%s: field %q (%s) names a value the request does not hold", body, e.Field, e.Code)
		}
	})
}
