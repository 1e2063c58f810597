package admin

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/slotq/slotq/internal/job"
)

// An op refuses a field it does not read, naming it, and does nothing:
// reindex "of one queue" must not reindex every queue, a pause with a
// job id must not pause the queue.
func TestOpRefusesUnusedFields(t *testing.T) {
	ctx := context.Background()
	h, eng := newHandler()
	if _, err := h.Handle(ctx, json.RawMessage(`{"op":"create","queue":"emails"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, job.EnqueueRequest{Queue: "emails", Jobs: []job.Spec{{ID: "a", Kind: "echo"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ req, field string }{
		{`{"op":"reindex","queue":"emails"}`, "queue"},
		{`{"op":"pause","queue":"emails","job_id":"a"}`, "job_id"},
		{`{"op":"purge","queue":"emails","limit":3}`, "limit"},
		{`{"op":"cancel","queue":"emails","job_id":"a","until":"2030-01-01T00:00:00Z"}`, "until"},
		{`{"op":"create","queue":"other","reset":true}`, "reset"},
		{`{"op":"delete","queue":"emails","config":{"interval":"1s"}}`, "config"},
		{`{"op":"list_keys","queue":"emails","key":"a"}`, "key"},
		{`{"op":"pause","queue":"emails","keys":[{"key":"a","limits":null}]}`, "keys"},
	} {
		res, err := h.Handle(ctx, json.RawMessage(tc.req))
		if err != nil {
			t.Fatalf("%s: %v", tc.req, err)
		}
		if res.Error == nil {
			t.Errorf("%s: answer %+v, want an error naming %s", tc.req, res, tc.field)
		} else if res.Error.Field != tc.field {
			t.Errorf("%s: error field %q, want %q", tc.req, res.Error.Field, tc.field)
		}
	}
	// Nothing was done: the queue is not paused, its job still waits, no
	// other queue exists.
	st, err := eng.Stats(ctx, "emails")
	if err != nil || st.State.Paused {
		t.Errorf("emails: paused %v, err %v; want running", st.State.Paused, err)
	}
	if j, err := eng.Job(ctx, job.Ref{Queue: "emails", ID: "a"}); err != nil || j.Status.Final() {
		t.Errorf("job a: %v %v; want waiting", j.Status, err)
	}
	if qs, _ := eng.Queues(ctx); len(qs) != 1 {
		t.Errorf("%d queues, want 1", len(qs))
	}
}
