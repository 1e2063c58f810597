package apischema

import (
	"fmt"
	"strings"
	"time"
)

// badRequest is a request both the function and its schema refuse; field,
// if set, is the path the function names.
type badRequest struct {
	name  string
	admin bool
	body  string
	field string
}

// many is n copies of item, comma-separated, for lists over their bound.
func many(n int, item func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = item(i)
	}
	return strings.Join(parts, ",")
}

func create(config string) string {
	return `{"op":"create","queue":"newq","config":` + config + `}`
}

func schedule(spec string) string {
	return `{"op":"create_schedule","queue":"emails","name":"nightly","schedule":` + spec + `}`
}

var badRequests = []badRequest{
	// Enqueue: the request's shape.
	{name: "queue not a string", body: `{"queue":5,"job":{"kind":"echo"}}`, field: "queue"},
	{name: "unknown field", body: `{"queue":"emails","job":{"kind":"echo"},"priority":1}`, field: "priority"},
	{name: "unknown job field", body: `{"queue":"emails","job":{"kind":"echo","delay":5}}`, field: "job.delay"},
	{name: "field in another case", body: `{"Queue":"emails","job":{"kind":"echo"}}`, field: "Queue"},
	// Enqueue: the limit of the queue the call creates.
	{name: "interval and rate", body: `{"queue":"fresh","interval":"1s","rate":"10/1s","job":{"kind":"echo"}}`, field: "rate"},
	{name: "rate and window", body: `{"queue":"fresh","rate":"10/1s","window":"100/1h","job":{"kind":"echo"}}`, field: "window"},
	{name: "interval and window", body: `{"queue":"fresh","interval":"1s","rate":null,"window":"100/1h","job":{"kind":"echo"}}`, field: "window"},
	{name: "burst without rate", body: `{"queue":"fresh","burst":3,"job":{"kind":"echo"}}`, field: "burst"},
	{name: "burst with a null rate", body: `{"queue":"fresh","interval":"1s","rate":null,"burst":0,"job":{"kind":"echo"}}`, field: "burst"},
	{name: "burst over its bound", body: `{"queue":"fresh","rate":"10/1s","burst":101,"job":{"kind":"echo"}}`, field: "burst"},
	{name: "rate not a rate", body: `{"queue":"fresh","rate":"often","job":{"kind":"echo"}}`, field: "rate"},
	{name: "queue name with a space", body: `{"queue":"bad name","job":{"kind":"echo"}}`, field: "queue"},
	{name: "queue name too long", body: `{"queue":"` + strings.Repeat("q", 81) + `","job":{"kind":"echo"}}`, field: "queue"},
	{name: "queue empty", body: `{"queue":"","job":{"kind":"echo"}}`, field: "queue"},
	{name: "queue missing", body: `{"job":{"kind":"echo"}}`, field: "queue"},
	{name: "no job", body: `{"queue":"emails"}`, field: "jobs"},
	{name: "job and jobs", body: `{"queue":"emails","job":{"kind":"echo"},"jobs":[{"kind":"echo"}]}`, field: "jobs"},
	{name: "jobs empty", body: `{"queue":"emails","jobs":[]}`, field: "jobs"},
	{name: "jobs over the batch", body: `{"queue":"emails","jobs":[` + many(501, func(int) string { return `{"kind":"echo"}` }) + `]}`, field: "jobs"},
	{name: "job an array", body: `{"queue":"emails","job":[]}`, field: "job"},
	{name: "job without kind or target", body: `{"queue":"emails","job":{"payload":{}}}`, field: "job.kind"},
	{name: "kind and target", body: `{"queue":"emails","job":{"kind":"echo","target":"https://example.com/"}}`, field: "job.target"},
	{name: "kind with a space", body: `{"queue":"emails","job":{"kind":"send mail"}}`, field: "job.kind"},
	{name: "debounce without its key", body: `{"queue":"emails","job":{"kind":"echo","debounce":"1s"}}`, field: "job.debounce_key"},
	{name: "debounce key without a debounce", body: `{"queue":"emails","jobs":[{"kind":"echo"},{"kind":"echo","debounce_key":"k"}]}`, field: "jobs[1].debounce"},
	{name: "debounce key with a space", body: `{"queue":"emails","job":{"kind":"echo","debounce_key":"a b","debounce":"1s"}}`, field: "job.debounce_key"},
	{name: "debounce with not_before", body: `{"queue":"emails","job":{"kind":"echo","debounce_key":"k","debounce":"1s","not_before":"2030-01-01T00:00:00Z"}}`, field: "job.not_before"},
	{name: "kind a number", body: `{"queue":"emails","job":{"kind":7}}`, field: "job.kind"},
	{name: "id with a space", body: `{"queue":"emails","job":{"kind":"echo","id":"a b"}}`, field: "job.id"},
	{name: "id too long", body: `{"queue":"emails","job":{"kind":"echo","id":"` + strings.Repeat("i", 129) + `"}}`, field: "job.id"},
	{name: "key with a space", body: `{"queue":"emails","job":{"kind":"echo","key":"a b"}}`, field: "job.key"},
	{name: "key too long", body: `{"queue":"emails","job":{"kind":"echo","key":"` + strings.Repeat("k", 201) + `"}}`, field: "job.key"},
	{name: "priority over", body: `{"queue":"emails","jobs":[{"kind":"echo"},{"kind":"echo"},{"kind":"echo","priority":9}]}`, field: "jobs[2].priority"},
	{name: "not_before not a time", body: `{"queue":"emails","job":{"kind":"echo","not_before":"tomorrow"}}`, field: "job.not_before"},
	{name: "not_before without offset", body: `{"queue":"emails","job":{"kind":"echo","not_before":"2026-11-21T14:00:00"}}`, field: "job.not_before"},
	{name: "not_before a number", body: `{"queue":"emails","job":{"kind":"echo","not_before":1764000000}}`, field: "job.not_before"},
	{name: "traceparent malformed", body: `{"queue":"emails","job":{"kind":"echo","traceparent":"00-xyz"}}`, field: "job.traceparent"},
	{name: "traceparent in upper case", body: `{"queue":"emails","job":{"kind":"echo","traceparent":"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"}}`, field: "job.traceparent"},
	{name: "interval a bare number", body: `{"queue":"newq","interval":5,"job":{"kind":"echo"}}`, field: "interval"},
	{name: "interval without unit", body: `{"queue":"newq","interval":"5","job":{"kind":"echo"}}`, field: "interval"},
	{name: "interval negative", body: `{"queue":"newq","interval":"-2s","job":{"kind":"echo"}}`, field: "interval"},
	{name: "second job's id", body: `{"queue":"emails","jobs":[{"kind":"echo"},{"kind":"echo","id":"a b"}]}`, field: "jobs[1].id"},

	// Admin: ops and their fields.
	{name: "unknown op", admin: true, body: `{"op":"explode"}`, field: "op"},
	{name: "no op", admin: true, body: `{"queue":"emails"}`, field: "op"},
	{name: "op a number", admin: true, body: `{"op":1}`, field: "op"},
	{name: "unknown admin field", admin: true, body: `{"op":"stats","queue":"emails","verbose":true}`, field: "verbose"},
	{name: "a field the op does not read", admin: true, body: `{"op":"resume","queue":"emails","until":"2030-01-01T00:00:00Z"}`, field: "until"},
	{name: "redrive of a queue", admin: true, body: `{"op":"redrive","queue":"emails"}`, field: "queue"},
	{name: "retry by job_id", admin: true, body: `{"op":"retry","queue":"emails","job_id":"a"}`, field: "job_id"},
	{name: "stats without queue", admin: true, body: `{"op":"stats"}`, field: "queue"},
	{name: "bad queue name", admin: true, body: `{"op":"stats","queue":"no/slash"}`, field: "queue"},
	{name: "no_activity not a boolean", admin: true, body: `{"op":"stats","queue":"emails","no_activity":"yes"}`, field: "no_activity"},
	{name: "list a status not listed", admin: true, body: `{"op":"list","queue":"emails","status":"running"}`, field: "status"},
	{name: "list an unknown status", admin: true, body: `{"op":"list","queue":"emails","status":"lost"}`, field: "status"},
	{name: "list limit too high", admin: true, body: `{"op":"list","queue":"emails","limit":1001}`, field: "limit"},
	{name: "list limit negative", admin: true, body: `{"op":"list","queue":"emails","limit":-1}`, field: "limit"},
	{name: "list after negative", admin: true, body: `{"op":"list","queue":"emails","after":-1}`, field: "after"},
	{name: "starts limit too high", admin: true, body: `{"op":"starts","queue":"emails","limit":1001}`, field: "limit"},
	{name: "retry page too large", admin: true, body: `{"op":"retry","queue":"emails","failed":true,"limit":501}`, field: "limit"},
	{name: "retry too many ids", admin: true, body: `{"op":"retry","queue":"emails","job_ids":[` + many(101, func(i int) string { return fmt.Sprintf(`"j%d"`, i) }) + `]}`, field: "job_ids"},
	{name: "retry by with a space", admin: true, body: `{"op":"retry","queue":"emails","failed":true,"by":"a b"}`, field: "by"},
	{name: "get a bad job id", admin: true, body: `{"op":"get","queue":"emails","job_id":"a b"}`, field: "job_id"},
	{name: "get without job id", admin: true, body: `{"op":"get","queue":"emails"}`, field: "job_id"},
	{name: "get_key a bad key", admin: true, body: `{"op":"get_key","queue":"tenants","key":"a b"}`, field: "key"},
	{name: "pause until not a time", admin: true, body: `{"op":"pause","queue":"emails","until":"soon"}`, field: "until"},
	{name: "configure without config", admin: true, body: `{"op":"configure","queue":"emails"}`, field: "config"},

	// Admin: a queue's configuration.
	{name: "max_attempts zero", admin: true, body: create(`{"max_attempts":0}`), field: "config.max_attempts"},
	{name: "max_attempts over", admin: true, body: create(`{"max_attempts":101}`), field: "config.max_attempts"},
	{name: "max_attempts a string", admin: true, body: create(`{"max_attempts":"3"}`), field: "config.max_attempts"},
	{name: "max_running over", admin: true, body: create(`{"max_running":101}`), field: "config.max_running"},
	{name: "key_max_running over", admin: true, body: create(`{"key_max_running":101}`), field: "config.key_max_running"},
	{name: "max_slow_downs over", admin: true, body: create(`{"max_slow_downs":1001}`), field: "config.max_slow_downs"},
	{name: "book_ahead zero", admin: true, body: create(`{"book_ahead":0}`), field: "config.book_ahead"},
	{name: "book_ahead over", admin: true, body: create(`{"book_ahead":100001}`), field: "config.book_ahead"},
	{name: "key_book_ahead negative", admin: true, body: create(`{"key_book_ahead":-1}`), field: "config.key_book_ahead"},
	{name: "burst over", admin: true, body: create(`{"rate":"100/1s","burst":101}`), field: "config.burst"},
	{name: "rate without period", admin: true, body: create(`{"rate":"100"}`), field: "config.rate"},
	{name: "rate period without unit", admin: true, body: create(`{"rate":"100/60"}`), field: "config.rate"},
	{name: "window a number", admin: true, body: create(`{"window":100}`), field: "config.window"},
	{name: "interval without unit in config", admin: true, body: create(`{"interval":"1"}`), field: "config.interval"},
	{name: "unknown setting", admin: true, body: create(`{"intervall":"1s"}`), field: "config.intervall"},
	{name: "four limits", admin: true, body: create(`{"limits":[{"interval":"1s"},{"rate":"10/1m"},{"window":"100/1h"},{"interval":"2s"}]}`), field: "config.limits"},
	{name: "a limit of two forms", admin: true, body: create(`{"limits":[{"interval":"1s","rate":"1/1s"}]}`), field: "config.limits[0]"},
	{name: "a limit of no form", admin: true, body: create(`{"limits":[{}]}`), field: "config.limits[0]"},
	{name: "a burst without rate", admin: true, body: create(`{"limits":[{"interval":"1s","burst":2}]}`), field: "config.limits[0].burst"},
	{name: "too many targets", admin: true, body: create(`{"targets":[` + many(65, func(i int) string { return fmt.Sprintf(`"https://h%d.example.com/*"`, i) }) + `]}`), field: "config.targets"},
	{name: "too many networks", admin: true, body: create(`{"allow_networks":[` + many(33, func(i int) string { return fmt.Sprintf(`"10.%d.0.0/16"`, i) }) + `]}`), field: "config.allow_networks"},

	// Admin: keys' own limits.
	{name: "no keys", admin: true, body: `{"op":"set_key_limits","queue":"tenants","keys":[]}`, field: "keys"},
	{name: "a key without limits", admin: true, body: `{"op":"set_key_limits","queue":"tenants","keys":[{"key":"acme"}]}`, field: "keys[0].limits"},
	{name: "a key's bad rate", admin: true, body: `{"op":"set_key_limits","queue":"tenants","keys":[{"key":"acme","limits":[{"rate":"fast"}]}]}`, field: "keys[0].limits[0].rate"},
	{name: "a key's weight zero", admin: true, body: `{"op":"set_key_limits","queue":"tenants","keys":[{"key":"acme","weight":2},{"key":"b","weight":0}]}`, field: "keys[1].weight"},
	{name: "a key's unknown field", admin: true, body: `{"op":"set_key_limits","queue":"tenants","keys":[{"key":"acme","limits":null,"until":"x"}]}`, field: "keys[0].until"},

	// Admin: schedules.
	{name: "schedule name with a space", admin: true, body: `{"op":"get_schedule","queue":"emails","name":"a b"}`, field: "name"},
	{name: "create_schedule without schedule", admin: true, body: `{"op":"create_schedule","queue":"emails","name":"nightly"}`, field: "schedule"},
	{name: "every and cron", admin: true, body: schedule(`{"every":"1h","cron":"0 7 * * *","job":{"kind":"echo"}}`), field: "schedule.cron"},
	{name: "neither every nor cron", admin: true, body: schedule(`{"job":{"kind":"echo"}}`), field: "schedule.every"},
	{name: "tz with every", admin: true, body: schedule(`{"every":"1h","tz":"Europe/Paris","job":{"kind":"echo"}}`), field: "schedule.tz"},
	{name: "missed unknown", admin: true, body: schedule(`{"every":"1h","missed":"sometimes","job":{"kind":"echo"}}`), field: "schedule.missed"},
	{name: "schedule job of kind and target", admin: true, body: schedule(`{"every":"1h","job":{"kind":"echo","target":"https://example.com/"}}`), field: "schedule.job.target"},
}

// goodRequests give every field of the requests once: the schema accepts
// each, and the function too (or refuses it for the state alone).
var goodRequests = []badRequest{
	{name: "a job with every field", body: `{"queue":"emails","interval":"2s","job":{"id":"good-1","kind":"echo","payload":{"to":"ada@example.com"},
		"not_before":"` + soon + `","key":"ada@example.com","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"vendor=a1","priority":1}}`},
	{name: "a job on a queue it creates with a rate", body: `{"queue":"rated","rate":"100/1m","burst":10,"window":null,"job":{"kind":"echo"}}`},
	{name: "a job on a queue it creates with a window", body: `{"queue":"windowed","window":"5000/1h","interval":null,"burst":null,"jobs":[{"kind":"echo"}]}`},
	{name: "a batch", body: `{"queue":"emails","jobs":[{"target":"https://hooks.example.com/send","id":"good-2"},{"kind":"echo","not_before":null}]}`},
	{name: "priority 0, the default", body: `{"queue":"emails","job":{"kind":"echo","priority":0}}`},
	{name: "a queue with every setting", admin: true, body: create(`{"rate":"100/1m","burst":10,"skew":"1ms","max_attempts":5,"backoff":"2s","max_backoff":"1m",
		"retention":"24h","targets":["https://hooks.example.com/*"],"allow_networks":["10.1.0.0/16"],"target_timeout":"10s","max_running":4,
		"key_limits":[{"interval":"1s"},{"window":"100/1h"}],"key_max_running":2,"max_slow_downs":30,"retry_after_default":"2s",
		"book_ahead":100,"key_book_ahead":5}`)},
	{name: "limits", admin: true, body: `{"op":"configure","queue":"emails","reset":true,"config":{"limits":[{"rate":"10/1s","burst":2},{"window":"1000/1h"}]}}`},
	{name: "pause until", admin: true, body: `{"op":"pause","queue":"emails","until":"` + soon + `"}`},
	{name: "resume", admin: true, body: `{"op":"resume","queue":"emails"}`},
	{name: "stats", admin: true, body: `{"op":"stats","queue":"emails","no_activity":true}`},
	{name: "starts", admin: true, body: `{"op":"starts","queue":"emails","limit":10}`},
	{name: "list failed", admin: true, body: `{"op":"list","queue":"emails","status":"failed","after":0,"limit":10}`},
	{name: "list queues", admin: true, body: `{"op":"list"}`},
	{name: "retry by ids", admin: true, body: `{"op":"retry","queue":"emails","job_ids":["good-1"],"by":"ops@example.com"}`},
	{name: "retry failed", admin: true, body: `{"op":"retry","queue":"emails","failed":true,"after":0,"up_to":0,"limit":50}`},
	{name: "keys", admin: true, body: `{"op":"set_key_limits","queue":"tenants","keys":[{"key":"acme","limits":[{"rate":"20/1s","burst":5}]},{"key":"globex","limits":null},{"key":"initech","weight":3}]}`},
	{name: "a key", admin: true, body: `{"op":"get_key","queue":"tenants","key":"acme"}`},
	{name: "a schedule with every field", admin: true, body: `{"op":"create_schedule","queue":"emails","name":"nightly","schedule":{"cron":"0 7 * * *","tz":"Europe/Paris",
		"start":"` + soon + `","missed":"all","job":{"kind":"echo","payload":{"report":"daily"},"key":"reports"}}}`},
	{name: "a schedule every hour", admin: true, body: `{"op":"create_schedule","queue":"emails","name":"hourly","schedule":{"every":"1h","job":{"target":"https://hooks.example.com/tick"}}}`},
	{name: "cancel", admin: true, body: `{"op":"cancel","queue":"emails","job_id":"good-2"}`},
	{name: "redrive", admin: true, body: `{"op":"redrive","limit":10}`},
}

// soon is a time within the year the functions accept.
var soon = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
