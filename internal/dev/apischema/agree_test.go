package apischema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/slotq/slotq/internal/dev/localtest"
	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/local"
)

// beyondSchema are the refusals a schema cannot foresee, with why: the
// function may refuse, for one of them, what its schema accepts. Any
// other refusal of a request the schema accepts fails the test.
var beyondSchema = map[string]string{
	"queue_not_found":             "the state: the queue does not exist",
	"queue_exists":                "the state: the queue exists",
	"job_not_found":               "the state: the job does not exist",
	"not_waiting":                 "the state: the job has started",
	"not_retryable":               "the state: the job is not failed or cancelled",
	"schedule_exists":             "the state: the schedule exists",
	"schedule_not_found":          "the state: the schedule does not exist",
	"not_keyed":                   "the state: the queue has no key_limits",
	"no_dead_letter_queue":        "the stack: no dead-letter queue",
	"unknown_kind":                "the worker: no handler of that kind",
	"target_not_allowed":          "the queue: its targets do not allow it",
	"invalid_not_before":          "the clock: within a year of now",
	"invalid_since":               "the clock: within the last hour",
	"invalid_until":               "the clock: in the future",
	"invalid_start":               "the clock: within a year of now",
	"invalid_end":                 "the clock: within a year of now",
	"never_fires":                 "the clock: the rule has no next occurrence",
	"duplicate_field":             "JSON Schema sees one value per key",
	"duplicate_id":                "two jobs of a batch with one id",
	"duplicate_key":               "two keys of set_key_limits alike",
	"payload_too_large":           "the payload's size in bytes",
	"invalid_interval":            "a duration's range",
	"invalid_skew":                "a duration's range",
	"invalid_backoff":             "a duration's range",
	"invalid_retention":           "a duration's range",
	"invalid_target_timeout":      "a duration's range",
	"invalid_retry_after_default": "a duration's range",
	"invalid_every":               "a duration's range",
	"invalid_rate":                "a rate's range",
	"invalid_window":              "a window's range",
	"invalid_limit":               "a queue's limit takes one form, among settings the update keeps",
	"invalid_burst":               "a burst goes with a rate, among settings the update keeps",
	"invalid_target":              "a URL's or function's form",
	"invalid_network":             "a network prefix's form",
	"invalid_cron":                "a cron expression's form",
	"unknown_tz":                  "the zone database",
	"invalid_tracestate":          "a W3C list's form",
	"invalid_traceparent":         "ids of zeros",
	"invalid_retry":               "job_ids or failed, and the fields that page failed",
	"invalid_value":               "a value zero where zero is no setting",
}

// The functions' names in the local runtime.
const (
	enqueueFn = "EnqueueFunction"
	adminFn   = "AdminFunction"
)

// schemas compiles docs/schema's files: what users validate against.
func schemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	for _, name := range []string{EnqueueRequest, EnqueueResponse, AdminRequest, AdminResponse, Job, Error} {
		f, err := os.Open(filepath.Join(schemaDir, name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.AddResource(BaseID+name, doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out[name], err = c.Compile(BaseID + name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return out
}

// validate checks body against s: nil, or the paths its failures name.
func validate(t *testing.T, s *jsonschema.Schema, body []byte) []string {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("not JSON: %v: %s", err, body)
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		t.Fatalf("validate: %v", err)
	}
	var paths []string
	leaves(ve, func(e *jsonschema.ValidationError) {
		at := fieldPath(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			// The object the property is missing from, or the property.
			paths = append(paths, at)
			for _, m := range k.Missing {
				paths = append(paths, join(at, m))
			}
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				paths = append(paths, join(at, p))
			}
		default:
			paths = append(paths, at)
		}
	})
	slices.Sort(paths)
	return slices.Compact(paths)
}

func leaves(e *jsonschema.ValidationError, f func(*jsonschema.ValidationError)) {
	if len(e.Causes) == 0 {
		f(e)
	}
	for _, c := range e.Causes {
		leaves(c, f)
	}
}

// fieldPath writes an instance location as the functions write a field:
// jobs[3].payload, "body" for the document.
func fieldPath(loc []string) string {
	p := ""
	for _, seg := range loc {
		if _, err := strconv.Atoi(seg); err == nil {
			p += "[" + seg + "]"
		} else {
			p = join(p, seg)
		}
	}
	if p == "" {
		return "body"
	}
	return p
}

func join(path, key string) string {
	if path == "" || path == "body" {
		return key
	}
	return path + "." + key
}

// answer is what a function answered: its error, if any, and the body.
type answer struct {
	code, field string
	body        []byte
}

func invoke(t *testing.T, e local.Endpoints, fn string, body []byte) answer {
	t.Helper()
	res, err := http.Post(e.InvokeURL+"/2015-03-31/functions/"+fn+"/invocations", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Amz-Function-Error") != "" {
		t.Fatalf("%s: %s (function error) for %s: %s", fn, res.Status, body, b)
	}
	var r struct {
		Error *struct {
			Code  string `json:"code"`
			Field string `json:"field"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s answered %s: %v", fn, b, err)
	}
	a := answer{body: b}
	if r.Error != nil {
		a.code, a.field = r.Error.Code, r.Error.Field
	}
	return a
}

// agreement feeds requests to a function and to its request schema,
// and checks each answer against the answer schema.
type agreement struct {
	t       *testing.T
	e       local.Endpoints
	schemas map[string]*jsonschema.Schema
}

// check runs body through fn and its schema. It fails t where they
// disagree, and answers both verdicts.
func (a *agreement) check(t *testing.T, fn string, body []byte) (schemaPaths []string, got answer) {
	t.Helper()
	req, res := EnqueueRequest, EnqueueResponse
	if fn == adminFn {
		req, res = AdminRequest, AdminResponse
	}
	schemaPaths = validate(t, a.schemas[req], body)
	got = invoke(t, a.e, fn, body)
	if paths := validate(t, a.schemas[res], got.body); paths != nil {
		t.Errorf("the answer %s fails %s at %v", got.body, res, paths)
	}
	switch {
	case schemaPaths == nil && got.code != "" && beyondSchema[got.code] == "":
		t.Errorf("the schema accepts %s; the function refuses it: %s at %q", body, got.code, got.field)
	case schemaPaths != nil && got.code == "":
		t.Errorf("the function accepts %s; the schema refuses it at %v", body, schemaPaths)
	case schemaPaths != nil && !slices.Contains(schemaPaths, got.field):
		t.Errorf("for %s the function refuses %s at %q; the schema at %v", body, got.code, got.field, schemaPaths)
	}
	return schemaPaths, got
}

// TestSchemaAgreement feeds the functions of the local runtime, and the
// schemas of docs/schema, every request of events/, every request the
// docs show, a table of bad requests and one of good requests that give
// every field: what one refuses the other refuses, at the same field,
// and every answer fits its schema.
func TestSchemaAgreement(t *testing.T) {
	a := &agreement{t: t, e: localtest.Start(t, local.Options{}), schemas: schemas(t)}
	for _, setup := range []string{
		`{"op":"create","queue":"emails","config":{"interval":"1s"}}`,
		`{"op":"create","queue":"tenants","config":{"rate":"100/1s","key_limits":[{"rate":"5/1s"}]}}`,
	} {
		if got := invoke(t, a.e, adminFn, []byte(setup)); got.code != "" {
			t.Fatalf("%s: %s", setup, got.body)
		}
	}

	t.Run("bad", func(t *testing.T) {
		if len(badRequests) < 40 {
			t.Fatalf("%d bad requests; the table should hold at least 40", len(badRequests))
		}
		for _, tc := range badRequests {
			t.Run(tc.name, func(t *testing.T) {
				fn := enqueueFn
				if tc.admin {
					fn = adminFn
				}
				paths, got := a.check(t, fn, []byte(tc.body))
				if paths == nil || got.code == "" {
					t.Errorf("want both to refuse %s; schema %v, function %s", tc.body, paths, got.body)
				}
				if tc.field != "" && got.field != tc.field {
					t.Errorf("the function names %q; want %q", got.field, tc.field)
				}
			})
		}
	})

	t.Run("good", func(t *testing.T) {
		for _, tc := range goodRequests {
			t.Run(tc.name, func(t *testing.T) {
				fn := enqueueFn
				if tc.admin {
					fn = adminFn
				}
				if paths, _ := a.check(t, fn, []byte(tc.body)); paths != nil {
					t.Errorf("the schema refuses %s at %v", tc.body, paths)
				}
			})
		}
	})

	t.Run("docs", func(t *testing.T) {
		reqs := docRequests(t)
		if len(reqs) < 5 {
			t.Fatalf("found %d requests in the docs; want the docs' examples", len(reqs))
		}
		for _, r := range reqs {
			t.Run(r.where, func(t *testing.T) {
				if r.answer != "" {
					if paths := validate(t, a.schemas[r.answer], r.body); paths != nil {
						t.Errorf("%s fails %s at %v", r.body, r.answer, paths)
					}
					return
				}
				if paths, _ := a.check(t, r.fn, r.body); paths != nil {
					t.Errorf("the docs show %s, which the schema refuses at %v", r.body, paths)
				}
			})
		}
	})

	t.Run("events", func(t *testing.T) {
		files, err := filepath.Glob("../../../events/*.json")
		if err != nil || len(files) == 0 {
			t.Fatalf("no events: %v", err)
		}
		n := 0
		for _, f := range files {
			name := filepath.Base(f)
			fn := ""
			switch {
			case strings.HasPrefix(name, "enqueue"):
				fn = enqueueFn
			case strings.HasPrefix(name, "admin"):
				fn = adminFn
			default:
				continue // the worker's and the resume function's events
			}
			n++
			t.Run(name, func(t *testing.T) {
				body, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				paths, got := a.check(t, fn, body)
				switch bad := strings.Contains(name, "bad"); {
				case bad && (paths == nil || got.code == ""):
					t.Errorf("want both to refuse %s; schema %v, function %s", name, paths, got.body)
				case !bad && paths != nil:
					t.Errorf("the schema refuses %s at %v", name, paths)
				}
			})
		}
		if n < 20 {
			t.Errorf("checked %d events; want every enqueue and admin event", n)
		}
	})
}

// docRequest is one request, or answer, a doc shows.
type docRequest struct {
	where string
	fn    string
	body  []byte
	// answer names the schema of an answer shown: it is only validated.
	answer string
}

var (
	fenceRE  = regexp.MustCompile("(?s)```json\n(.*?)```")
	quotedRE = regexp.MustCompile(`'(\{[^']*\})'`)
)

// docRequests finds the JSON objects of the README and docs/ that are
// enqueue or admin requests or answers: fenced json blocks and quoted
// payloads.
func docRequests(t *testing.T) []docRequest {
	files, err := filepath.Glob("../../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../../README.md")
	var out []docRequest
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var found [][]byte
		for _, m := range fenceRE.FindAllSubmatch(b, -1) {
			found = append(found, m[1])
		}
		for _, m := range quotedRE.FindAllSubmatch(b, -1) {
			found = append(found, m[1])
		}
		for i, body := range found {
			var obj map[string]json.RawMessage
			if json.Unmarshal(body, &obj) != nil {
				continue // not JSON, or a sketch with …
			}
			r := docRequest{where: fmt.Sprintf("%s#%d", filepath.Base(f), i), body: bytes.TrimSpace(body)}
			_, op := obj["op"]
			jobs, batch := obj["jobs"]
			switch {
			case op && keysOf(obj, reflect.TypeFor[api.AdminRequest]()):
				r.fn = adminFn
			case op:
				r.answer = AdminResponse
			case batch && bytes.Contains(jobs, []byte(`"job_id"`)):
				r.answer = EnqueueResponse
			case keysOf(obj, reflect.TypeFor[api.EnqueueRequest]()) && hasAny(obj, "job", "jobs"):
				r.fn = enqueueFn
			default:
				continue
			}
			out = append(out, r)
		}
	}
	return out
}

// keysOf reports whether every key of obj is a field of t.
func keysOf(obj map[string]json.RawMessage, t reflect.Type) bool {
	names := jsonNames(t)
	for k := range obj {
		if !slices.Contains(names, k) {
			return false
		}
	}
	return true
}

func hasAny(obj map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}
