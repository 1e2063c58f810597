package client_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
	"github.com/slotq/slotq/pkg/client"
)

// Keyed limits through the client and the functions' JSON, both ways:
// create and configure keep key_limits and key_max_running; SetKeyLimits
// gives a key limits of its own and clears them; ListKeys and GetKey show
// each key's limits and jobs; stats count the keys at their limit; bad
// input is an *Error on the value's path and changes nothing.
func TestLocalRuntimeKeys(t *testing.T) {
	c := newLocalClient(t)
	ctx := context.Background()
	perKey := []api.Limit{{Rate: api.Rate{N: 5, Per: time.Second}, Burst: 1}}
	cq, err := c.CreateQueue(ctx, &client.CreateQueueInput{Queue: "tenants", Config: &api.Config{
		Rate: api.Rate{N: 200, Per: time.Second}, KeyLimits: perKey, KeyMaxRunning: api.NoKeyCap,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := cq.Queue.Config; !reflect.DeepEqual(cfg.KeyLimits, perKey) || cfg.KeyMaxRunning != api.NoKeyCap {
		t.Errorf("create answered key_limits %v, key_max_running %d", cfg.KeyLimits, cfg.KeyMaxRunning)
	}
	one := 1
	conf, err := c.ConfigureQueue(ctx, &client.ConfigureQueueInput{Queue: "tenants", Update: &api.ConfigUpdate{KeyMaxRunning: &one}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := conf.Queue.Config; !reflect.DeepEqual(cfg.KeyLimits, perKey) || cfg.KeyMaxRunning != 1 {
		t.Errorf("configure answered key_limits %v, key_max_running %d; want the key limits kept, one at a time", cfg.KeyLimits, cfg.KeyMaxRunning)
	}

	// Paused, so that nothing runs and the answers are exact.
	if _, err := c.PauseQueue(ctx, &client.PauseQueueInput{Queue: "tenants"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, &client.EnqueueInput{Queue: "tenants", Jobs: []api.Spec{
		{ID: "a1", Kind: "echo", Key: "acme"}, {ID: "a2", Kind: "echo", Key: "acme"}, {ID: "g1", Kind: "echo", Key: "globex"},
	}}); err != nil {
		t.Fatal(err)
	}

	own := []api.Limit{{Rate: api.Rate{N: 20, Per: time.Second}}, {Window: api.Rate{N: 1000, Per: time.Hour}}}
	set, err := c.SetKeyLimits(ctx, &client.SetKeyLimitsInput{Queue: "tenants", Keys: []api.KeyLimit{{Key: "acme", Limits: own}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 || set.Keys[0].Key != "acme" || !set.Keys[0].Own || !reflect.DeepEqual(set.Keys[0].Limits, own) {
		t.Errorf("SetKeyLimits answered %+v", set.Keys)
	}

	list, err := c.ListKeys(ctx, &client.ListKeysInput{Queue: "tenants"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Keys) != 2 || list.Keys[0].Key != "acme" || list.Keys[0].Pending != 2 || !list.Keys[0].Own ||
		list.Keys[1].Key != "globex" || list.Keys[1].Pending != 1 || list.Keys[1].Own || !reflect.DeepEqual(list.Keys[1].Limits, perKey) {
		t.Errorf("ListKeys answered %+v", list.Keys)
	}

	// A bad limit of the second key: refused on its path, and acme keeps
	// its own.
	_, err = c.SetKeyLimits(ctx, &client.SetKeyLimitsInput{Queue: "tenants", Keys: []api.KeyLimit{
		{Key: "acme"}, {Key: "globex", Limits: []api.Limit{{Rate: api.Rate{N: 100, Per: time.Minute}, Burst: 101}}},
	}})
	wantError(t, err, "invalid_burst", "keys[1].limits[0].burst", nil)
	got, err := c.GetKey(ctx, &client.GetKeyInput{Queue: "tenants", Key: "acme"})
	if err != nil || !got.Key.Own || !reflect.DeepEqual(got.Key.Limits, own) {
		t.Errorf("GetKey after the refusal: %+v, %v; want acme's own limits kept", got, err)
	}
	_, err = c.GetKey(ctx, &client.GetKeyInput{Queue: "tenants", Key: "a b"})
	wantError(t, err, "invalid_key", "key", nil)
	_, err = c.ListKeys(ctx, &client.ListKeysInput{Queue: "nope"})
	wantError(t, err, "queue_not_found", "queue", client.ErrQueueNotFound)

	// Nil Limits clears the key's own: it follows the queue's again.
	set, err = c.SetKeyLimits(ctx, &client.SetKeyLimitsInput{Queue: "tenants", Keys: []api.KeyLimit{{Key: "acme"}}})
	if err != nil {
		t.Fatal(err)
	}
	if set.Keys[0].Own || !reflect.DeepEqual(set.Keys[0].Limits, perKey) {
		t.Errorf("cleared acme answers %+v; want the queue's %v", set.Keys[0], perKey)
	}

	st, err := c.GetStats(ctx, &client.GetStatsInput{Queue: "tenants", NoActivity: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats.Lanes.KeysAtLimit < 0 {
		t.Errorf("stats of a queue with key_limits: keys_at_limit %d, want a count", st.Stats.Lanes.KeysAtLimit)
	}
}

// A key's limits travel under the names the admin function reads; nil
// Limits is sent as null, which clears them.
func TestKeyRequestEncoding(t *testing.T) {
	s, c := newStub(t)
	ctx := context.Background()
	if _, err := c.SetKeyLimits(ctx, &client.SetKeyLimitsInput{Queue: "tenants", Keys: []api.KeyLimit{
		{Key: "acme", Limits: []api.Limit{{Rate: api.Rate{N: 20, Per: time.Second}, Burst: 5}}}, {Key: "globex"},
	}}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, s, `{"op":"set_key_limits","queue":"tenants","keys":[{"key":"acme","limits":[{"rate":"20/1s","burst":5}]},{"key":"globex","limits":null}]}`)
	if _, err := c.GetKey(ctx, &client.GetKeyInput{Queue: "tenants", Key: "acme"}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, s, `{"op":"get_key","queue":"tenants","key":"acme"}`)
	if _, err := c.ListKeys(ctx, &client.ListKeysInput{Queue: "tenants"}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, s, `{"op":"list_keys","queue":"tenants"}`)
	zero := 0
	if _, err := c.ConfigureQueue(ctx, &client.ConfigureQueueInput{Queue: "tenants", Update: &api.ConfigUpdate{
		KeyLimits: &[]api.Limit{{Window: api.Rate{N: 100, Per: time.Hour}}}, KeyMaxRunning: &zero,
	}}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, s, `{"op":"configure","queue":"tenants","config":{"key_limits":[{"window":"100/1h"}],"key_max_running":0}}`)
}
