package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/memstore"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// newKeyed is a handler on the embedded backend with the memstore, so a
// test can see the keys' meters.
func newKeyed(t *testing.T) (*Handler, *engine.Engine, *memstore.Store) {
	t.Helper()
	h, eng, st, _ := newEmbedded()
	h.Defaults = slot.Config{Interval: 3 * time.Second}
	return h, eng, st
}

func handle(t *testing.T, h *Handler, body []byte) Response {
	t.Helper()
	r, err := h.Handle(context.Background(), body)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if r.Error != nil {
		t.Fatalf("%s: error %+v", body, r.Error)
	}
	return r
}

// The keyed samples, in the order an operator would use them: create and
// configure carry key_limits and key_max_running through to the engine
// (and back in the answer's JSON); set_key_limits gives a key limits of
// its own and clears another's; list_keys and get_key show them.
func TestKeySampleEvents(t *testing.T) {
	h, eng, _ := newKeyed(t)
	ctx := context.Background()
	keyRate := api.Limit{Rate: api.Rate{N: 5, Per: time.Second}, Burst: 1}
	keyWindow := api.Limit{Window: api.Rate{N: 100, Per: time.Hour}}

	r := handle(t, h, event(t, "admin-create-keyed.json"))
	q, err := eng.Queue(ctx, "tenants")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q.Config.KeyLimits, []api.Limit{keyRate, keyWindow}) || q.Config.KeyMaxRunning != slot.NoKeyCap || q.Config.KeyCap() != 0 {
		t.Errorf("created: key_limits %v, key_max_running %d; want %v and no cap", q.Config.KeyLimits, q.Config.KeyMaxRunning, []api.Limit{keyRate, keyWindow})
	}
	if !reflect.DeepEqual(r.Queue.Config, api.Config(q.Config)) {
		t.Errorf("create answered %+v, the engine holds %+v", r.Queue.Config, q.Config)
	}
	// The answer's JSON says the settings as a caller gives them, and a
	// client reads them back.
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"key_limits":[{"rate":"5/1s","burst":1},{"window":"100/1h"}]`, `"key_max_running":0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("create's answer %s lacks %s", b, want)
		}
	}
	var wire api.AdminResponse
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	if c := wire.Queue.Config; !reflect.DeepEqual(c.KeyLimits, []api.Limit{keyRate, keyWindow}) || c.KeyMaxRunning != api.NoKeyCap {
		t.Errorf("a client reads key_limits %v, key_max_running %d", c.KeyLimits, c.KeyMaxRunning)
	}

	handle(t, h, event(t, "admin-configure-keys.json"))
	q, _ = eng.Queue(ctx, "tenants")
	if got := slot.Limits(q.Config.KeyLimits).String(); got != "rate 2/1s" || q.Config.KeyCap() != 1 || q.Config.Rate != (api.Rate{N: 200, Per: time.Second}) {
		t.Errorf("configured: key_limits %q, key cap %d, rate %v; want rate 2/1s, 1, and the queue's rate kept", got, q.Config.KeyCap(), q.Config.Rate)
	}

	// Jobs of three keys, so list_keys has keys to show.
	var jobs []job.Spec
	for i, k := range []string{"acme", "acme", "acme", "globex", "initech"} {
		jobs = append(jobs, job.Spec{ID: fmt.Sprintf("j%d", i), Kind: "echo", Key: k})
	}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "tenants", Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	// globex has limits of its own before the sample clears them.
	if _, err := eng.SetKeyLimits(ctx, "tenants", []engine.KeyLimit{{Key: "globex", Limits: []api.Limit{{Interval: time.Minute}}}}); err != nil {
		t.Fatal(err)
	}

	acme := []api.Limit{{Rate: api.Rate{N: 20, Per: time.Second}, Burst: 5}}
	queues := []api.Limit{{Rate: api.Rate{N: 2, Per: time.Second}}}
	r = handle(t, h, event(t, "admin-set-key-limits.json"))
	if len(r.Keys) != 2 || r.Keys[0].Key != "acme" || !r.Keys[0].Own || !reflect.DeepEqual(r.Keys[0].Limits, acme) ||
		r.Keys[1].Key != "globex" || r.Keys[1].Own || !reflect.DeepEqual(r.Keys[1].Limits, queues) {
		t.Errorf("set_key_limits answered %+v; want acme with its own %v, globex back on the queue's %v", r.Keys, acme, queues)
	}

	r = handle(t, h, event(t, "admin-list-keys.json"))
	var names []string
	for _, k := range r.Keys {
		names = append(names, k.Key)
	}
	if !reflect.DeepEqual(names, []string{"acme", "globex", "initech"}) || r.Keys[0].Pending != 3 || !r.Keys[0].Own || r.Keys[2].Own {
		t.Errorf("list_keys answered %+v; want acme (3 pending, own limits), globex, initech", r.Keys)
	}

	r = handle(t, h, event(t, "admin-get-key.json"))
	if r.Key == nil || r.Key.Key != "acme" || !r.Key.Own || !reflect.DeepEqual(r.Key.Limits, acme) || r.Key.Pending != 3 {
		t.Errorf("get_key answered %+v", r.Key)
	}
	// A key with no jobs and no limits of its own still answers: the
	// queue's limits, nothing pending.
	r = handle(t, h, []byte(`{"op":"get_key","queue":"tenants","key":"hooli"}`))
	if r.Key == nil || r.Key.Own || r.Key.Pending != 0 || !reflect.DeepEqual(r.Key.Limits, queues) {
		t.Errorf("get_key of an idle key answered %+v", r.Key)
	}
	// The same answers through the client's wire types.
	b, _ = json.Marshal(handle(t, h, event(t, "admin-list-keys.json")))
	wire = api.AdminResponse{}
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	if len(wire.Keys) != 3 || wire.Keys[0].Key != "acme" || !wire.Keys[0].Own || wire.Keys[0].Pending != 3 || !reflect.DeepEqual(wire.Keys[0].Limits, acme) {
		t.Errorf("a client reads list_keys as %+v (from %s)", wire.Keys, b)
	}
}

// set_key_limits refuses bad input with a typed error naming the full
// path of the bad value, and writes nothing: no key's meter, no queue.
func TestSetKeyLimitsRefusals(t *testing.T) {
	h, eng, st := newKeyed(t)
	ctx := context.Background()
	handle(t, h, []byte(`{"op":"create","queue":"tenants","config":{"key_limits":[{"rate":"5/1s"}]}}`))
	handle(t, h, []byte(`{"op":"create","queue":"plain"}`))
	handle(t, h, []byte(`{"op":"set_key_limits","queue":"tenants","keys":[{"key":"acme","limits":[{"interval":"1s"}]}]}`))

	set := func(keys string) string { return `{"op":"set_key_limits","queue":"tenants","keys":` + keys + `}` }
	ok := `{"key":"acme","limits":[{"rate":"1/1s"}]},{"key":"globex","limits":null}`
	var many []string
	for i := range slot.MaxKeyOverrides + 1 {
		many = append(many, fmt.Sprintf(`{"key":"k%d","limits":[{"rate":"1/1s"}]}`, i))
	}
	tests := []struct {
		name, body, code, field string
	}{
		{"a bad rate, third key", set(`[` + ok + `,{"key":"c","limits":[{"rate":"fast"}]}]`), "invalid_rate", "keys[2].limits[0].rate"},
		{"a rate of nothing", set(`[` + ok + `,{"key":"c","limits":[{"window":"1/1h"},{"rate":"0/1s"}]}]`), "invalid_rate", "keys[2].limits[1].rate"},
		{"a burst too large", set(`[` + ok + `,{"key":"c","limits":[{"rate":"100/1m","burst":101}]}]`), "invalid_burst", "keys[2].limits[0].burst"},
		{"a burst without a rate", set(`[{"key":"c","limits":[{"window":"5/1s","burst":2}]}]`), "invalid_burst", "keys[0].limits[0].burst"},
		{"a limit of two forms", set(`[{"key":"c","limits":[{"rate":"5/1s","window":"5/1s"}]}]`), "invalid_limit", "keys[0].limits[0]"},
		{"an interval without its unit", set(`[{"key":"c","limits":[{"interval":5}]}]`), "invalid_duration", "keys[0].limits[0].interval"},
		{"an interval of zero", set(`[{"key":"c","limits":[{"interval":"0s"}]}]`), "invalid_interval", "keys[0].limits[0].interval"},
		{"a limit's unknown field", set(`[` + ok + `,{"key":"c","limits":[{"every":"1s"}]}]`), "unknown_field", "keys[2].limits[0].every"},
		{"a key's unknown field", set(`[{"key":"c","limits":null,"limit":[]}]`), "unknown_field", "keys[0].limit"},
		{"a key's field in capitals", set(`[{"KEY":"c","limits":null}]`), "unknown_field", "keys[0].KEY"},
		{"limits left out", set(`[` + ok + `,{"key":"c"}]`), "missing_limits", "keys[2].limits"},
		{"limits a string", set(`[{"key":"c","limits":"rate 5/1s"}]`), "invalid_type", "keys[0].limits"},
		{"limits empty", set(`[{"key":"c","limits":[]}]`), "invalid_limit", "keys[0].limits"},
		{"four limits", set(`[{"key":"c","limits":[{"interval":"1s"},{"rate":"10/1m"},{"window":"5/1h"},{"window":"50/24h"}]}]`), "too_many_limits", "keys[0].limits"},
		{"a key a string", set(`["acme"]`), "invalid_type", "keys[0]"},
		{"a key with a space", set(`[` + ok + `,{"key":"a b","limits":null}]`), "invalid_key", "keys[2].key"},
		{"a key left out", set(`[{"limits":null}]`), "invalid_key", "keys[0].key"},
		{"a key too long", set(fmt.Sprintf(`[{"key":%q,"limits":null}]`, strings.Repeat("k", 201))), "invalid_key", "keys[0].key"},
		{"a key twice", set(`[` + ok + `,{"key":"acme","limits":null}]`), "duplicate_key", "keys[2].key"},
		{"no keys", set(`[]`), "invalid_keys", "keys"},
		{"keys left out", `{"op":"set_key_limits","queue":"tenants"}`, "invalid_keys", "keys"},
		{"keys an object", set(`{"acme":null}`), "invalid_type", "keys"},
		{"over the bound", set(`[` + strings.Join(many, ",") + `]`), "too_many_keys", "keys"},
		{"a queue without key_limits", `{"op":"set_key_limits","queue":"plain","keys":[` + ok + `]}`, "not_keyed", "queue"},
		{"a missing queue", `{"op":"set_key_limits","queue":"nope","keys":[` + ok + `]}`, "queue_not_found", "queue"},
		{"key beside keys", `{"op":"set_key_limits","queue":"tenants","key":"acme","keys":[` + ok + `]}`, "unused_field", "key"},
		{"keys to list_keys", `{"op":"list_keys","queue":"tenants","keys":[` + ok + `]}`, "unused_field", "keys"},
		{"keys to configure", `{"op":"configure","queue":"tenants","config":{},"keys":[` + ok + `]}`, "unused_field", "keys"},
		{"get_key without a key", `{"op":"get_key","queue":"tenants"}`, "invalid_key", "key"},
		{"get_key of a bad key", `{"op":"get_key","queue":"tenants","key":"a b"}`, "invalid_key", "key"},
		{"get_key a number", `{"op":"get_key","queue":"tenants","key":7}`, "invalid_type", "key"},
		{"get_key, missing queue", `{"op":"get_key","queue":"nope","key":"acme"}`, "queue_not_found", "queue"},
		{"list_keys, missing queue", `{"op":"list_keys","queue":"nope"}`, "queue_not_found", "queue"},
	}
	contents := func() any {
		qs, js := st.Contents()
		return []any{qs, js, st.Meters("tenants"), st.Meters("plain")}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRefusedWritingNothing(t, h, tt.body, tt.code, tt.field, contents)
		})
	}
	// acme keeps the limits it had.
	k, err := eng.Key(ctx, "tenants", "acme")
	if err != nil || !k.Own || slot.Limits(k.Limits).String() != "interval 1s" {
		t.Errorf("acme after the refusals: %+v, %v; want its own interval 1s", k, err)
	}
}

// A queue's key_limits are refused, by create and configure, on their
// full path.
func TestKeyLimitsConfigRefusals(t *testing.T) {
	h, eng, _ := newKeyed(t)
	ctx := context.Background()
	handle(t, h, []byte(`{"op":"create","queue":"tenants","config":{"key_limits":[{"rate":"5/1s"}]}}`))
	before, _ := eng.Queues(ctx)
	for _, tc := range []struct{ body, code, field string }{
		{`{"op":"create","queue":"t2","config":{"key_limits":[{"rate":"5/1s"},{"rate":"fast"}]}}`, "invalid_rate", "config.key_limits[1].rate"},
		{`{"op":"create","queue":"t2","config":{"key_limits":[{"every":"1s"}]}}`, "unknown_field", "config.key_limits[0].every"},
		{`{"op":"create","queue":"t2","config":{"key_max_running":0}}`, "invalid_key_max_running", "config.key_max_running"},
		{`{"op":"create","queue":"t2","config":{"key_limits":[{"rate":"5/1s"}],"key_max_running":101}}`, "invalid_key_max_running", "config.key_max_running"},
		{`{"op":"configure","queue":"tenants","config":{"key_limits":[{"rate":"100/1m","burst":101}]}}`, "invalid_burst", "config.key_limits[0].burst"},
		{`{"op":"configure","queue":"tenants","config":{"key_max_running":-1}}`, "invalid_key_max_running", "config.key_max_running"},
	} {
		r, err := h.Handle(ctx, json.RawMessage(tc.body))
		if err != nil || r.Error == nil || r.Error.Code != tc.code || r.Error.Field != tc.field {
			t.Errorf("%s: %+v, %v; want %s on %s", tc.body, r.Error, err, tc.code, tc.field)
		}
	}
	if after, _ := eng.Queues(ctx); !reflect.DeepEqual(after, before) {
		t.Errorf("the refusals wrote: queues %+v, before %+v", after, before)
	}
}
